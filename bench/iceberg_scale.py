"""An Iceberg table of many snapshots and files, replicated in full and then incrementally,
each against copying the same files alone.

A pyiceberg table (SQLite catalog, local disk) gets ``--appends`` appends of ``--files``
small files each (one per partition). In the same run:

- **Ferry, in full**: the pipeline's Iceberg path without the catalogs — Plan
  (``plan_iceberg``: the source's metadata read, the manifest of copies and manifest
  rewrites streamed, Commit's part staged), the inline copier on that manifest (the files
  copied, the replica's manifests rewritten), and Commit's part (``commit_metadata``: the
  manifest lists and metadata.json written, every file the run brought checked);
- **the baseline**: the same inline copier on a manifest of exactly the same files alone (to
  another folder), and a plain ``shutil.copyfile`` of each;
- **Ferry, incrementally**, after ``--more`` appends at the source, against the same
  baselines for the files that run copies.

    make bench                    # or: .venv/bin/python bench/iceberg_scale.py --appends 50
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.table import StaticTable  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402

from ferry.config import CopierOptions  # noqa: E402
from ferry.copying.copy_tasks import CopyTask, Manifest  # noqa: E402
from ferry.copying.manifest import ManifestWriter, read_manifest, write_manifest  # noqa: E402
from ferry.iceberg.pipeline import IcebergRun, commit_metadata, plan_iceberg  # noqa: E402
from ferry.lifecycle import copy_work  # noqa: E402
from ferry.storage import fs  # noqa: E402

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "part", StringType(), required=False),
    NestedField(3, "payload", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part"))


def append(table, start: int, files: int, rows_per_file: int) -> None:
    """One append of ``files`` files: one per partition."""
    count = files * rows_per_file
    table.append(
        pa.table(
            {
                "id": pa.array(range(start, start + count), pa.int64()),
                "part": [f"p{i % files:03d}" for i in range(count)],
                "payload": [f"row {i:08d} " + "x" * 64 for i in range(start, start + count)],
            }
        )
    )


def ferry_run(
    source_metadata: str, replica: str, previous: str | None, work: Path, event_id: str
) -> tuple[IcebergRun, float, list[tuple[str, str, int]]]:
    """Plan, inline copy (and rewrites), Commit's writes and check: the run's metadata,
    seconds, the files copied."""
    manifest_uri = fs.local_uri(work / event_id / "manifest.json")
    started = time.perf_counter()
    writer = ManifestWriter(manifest_uri, event_id, 1000)
    run = plan_iceberg(source_metadata, replica, previous, event_id, writer, write=True).run
    writer.close()
    planned = time.perf_counter()
    copy_work.copy_inline(manifest_uri, CopierOptions())
    copied = time.perf_counter()
    commit_metadata(run)
    seconds = time.perf_counter() - started
    print(
        f"  {event_id}: plan {planned - started:.2f} s, copy and rewrites "
        f"{copied - planned:.2f} s, Commit's writes and check {seconds - (copied - started):.2f} s"
    )
    tasks = read_manifest(manifest_uri).tasks
    return run, seconds, [(t.source, t.target, t.size) for t in tasks]


def baselines(files: list[tuple[str, str, int]], replica: str, folder: Path, work: Path):
    """The inline copier on exactly ``files`` alone, and a plain copy of each: seconds."""
    inline_root = folder / "inline"
    manifest_uri = fs.local_uri(work / f"baseline-{len(files)}" / "manifest.json")
    tasks = tuple(
        CopyTask(source, fs.local_uri(inline_root) + target[len(replica) :], size, None)
        for source, target, size in files
    )
    write_manifest(manifest_uri, Manifest("baseline", tasks))
    started = time.perf_counter()
    copy_work.copy_inline(manifest_uri, CopierOptions())
    inline = time.perf_counter() - started
    plain_root = folder / "plain"
    started = time.perf_counter()
    for source, target, _ in files:
        destination = plain_root / target[len(replica) + 1 :]
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source.removeprefix("file://"), destination)
    plain = time.perf_counter() - started
    return inline, plain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=50)
    parser.add_argument("--files", type=int, default=20, help="files per append")
    parser.add_argument("--rows", type=int, default=50, help="rows per file")
    parser.add_argument("--more", type=int, default=5, help="appends before the incremental run")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ferry-iceberg-bench-") as temporary:
        folder = Path(temporary)
        catalog = SqlCatalog(
            "bench", uri=f"sqlite:///{folder}/catalog.db", warehouse=(folder / "source").as_uri()
        )
        catalog.create_namespace("db")
        table = catalog.create_table("db.events", schema=SCHEMA, partition_spec=SPEC)
        started = time.perf_counter()
        per_append = arguments.files * arguments.rows
        for index in range(arguments.appends):
            append(table, index * per_append, arguments.files, arguments.rows)
        print(
            f"source: {arguments.appends} appends × {arguments.files} files "
            f"built in {time.perf_counter() - started:.1f} s"
        )
        replica = fs.local_uri(folder / "replica" / "events")
        work = folder / "work"
        rows = []

        source = catalog.load_table("db.events").metadata_location
        run, seconds, copied = ferry_run(source, replica, None, work, "ferry-full")
        inline, plain = baselines(copied, replica, folder / "baseline-full", work)
        rows.append(("full", run, seconds, copied, inline, plain))

        table = catalog.load_table("db.events")
        for index in range(arguments.appends, arguments.appends + arguments.more):
            append(table, index * per_append, arguments.files, arguments.rows)
        source = catalog.load_table("db.events").metadata_location
        previous = run.metadata_location
        run, seconds, copied = ferry_run(source, replica, previous, work, "ferry-incremental")
        inline, plain = baselines(copied, replica, folder / "baseline-incremental", work)
        rows.append(("incremental", run, seconds, copied, inline, plain))
        replicated = StaticTable.from_metadata(run.metadata_location).scan().to_arrow()
        assert replicated.num_rows == catalog.load_table("db.events").scan().to_arrow().num_rows

        print(
            f"{'run':<12} {'snapshots':>9} {'files':>6} {'MiB':>6} {'metadata':>8} "
            f"{'Ferry':>8} {'inline alone':>12} {'plain copy':>10} {'÷ inline':>8} {'÷ plain':>8}"
        )
        for name, run, seconds, copied, inline, plain in rows:
            size = sum(s for _, _, s in copied) / 2**20
            print(
                f"{name:<12} {len(run.new_snapshot_ids):>9} {len(copied):>6} {size:>6.1f} "
                f"{len(run.written):>8} {seconds:>7.2f}s {inline:>11.2f}s {plain:>9.2f}s "
                f"{seconds / inline:>7.2f}× {seconds / plain:>7.2f}×"
            )


if __name__ == "__main__":
    main()
