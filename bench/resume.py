"""Resume instead of restart: a large copy killed at ~90 %, then continued.

A source table in a real Hive metastore (started here, on free ports) with ``--partitions``
partitions of ``--files`` files of ``--mib`` MiB each, on the local disk. In the same run:

1. ``ferry replicate`` copies the whole table to one replica (the full copy's wall time);
2. ``ferry replicate`` of the same table to a second replica is killed (SIGKILL, a fail
   point) once ~90 % of its batches are recorded;
3. ``ferry replicate`` is run again for the second replica: it continues the killed event.

Printed: the bytes the resume wrote, as a fraction of the table, counted at the storage edge
(every file below the replica's location whose inode or modification time changed), beside
what the run's JSON says it reused; and the resume's wall time against the full copy's.

    .venv/bin/python bench/resume.py [--partitions 20 --files 10 --mib 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ferry.catalog.hive import HiveMetastoreCatalog  # noqa: E402
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType  # noqa: E402
from ferry.local import metastore, processes  # noqa: E402
from ferry.storage import fs  # noqa: E402

MiB = 1024 * 1024


def make_files(root: Path, partitions: int, files: int, size: int) -> list[str]:
    """``partitions`` folders of ``files`` random files each; their URIs."""
    folders = []
    for p in range(partitions):
        folder = root / f"dt={p:05d}"
        folder.mkdir(parents=True)
        for f in range(files):
            (folder / f"part-{f:05d}.bin").write_bytes(os.urandom(size))
        folders.append(fs.local_uri(folder))
    return folders


def files_below(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every file below ``folder``: (inode, modification time, size) by path."""
    found = {}
    for path in folder.rglob("*") if folder.exists() else ():
        if path.is_file():
            stat = path.stat()
            found[str(path)] = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    return found


def replicate(config: Path, home: Path, faults: list | None = None) -> tuple[float, dict, int]:
    """``ferry replicate --json`` in a process of its own: seconds, its table, exit code."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    if faults:
        environment["FERRY_FAULTS"] = json.dumps(faults)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", "replicate", str(config), "--home", str(home),
         "--json"],
        env=environment, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    table = json.loads(done.stdout)["tables"][0] if done.returncode in (0, 1) else {}
    return seconds, table, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--files", type=int, default=10, help="files per partition")
    parser.add_argument("--mib", type=int, default=2, help="MiB per file")
    parser.add_argument("--batch-files", type=int, default=10, help="files per batch")
    arguments = parser.parse_args()
    total_files = arguments.partitions * arguments.files
    total = total_files * arguments.mib * MiB
    batches = -(-total_files // arguments.batch_files)
    killed_after = max(1, round(batches * 0.9))

    with tempfile.TemporaryDirectory(prefix="ferry-resume-bench-") as folder:
        home = Path(folder)
        ports = {name: processes.free_port() for name in ("source", "replica")}
        started = []
        try:
            for name, port in ports.items():
                metastore.start_metastore(home, name, port)
                started.append(name)
            source_root = home / "source-data" / "events"
            folders = make_files(source_root, arguments.partitions, arguments.files,
                                 arguments.mib * MiB)  # fmt: skip
            uri = f"thrift://127.0.0.1:{ports['source']}"
            with HiveMetastoreCatalog("source", [uri]) as source:
                source.create_database(Database("bench", None, None))
                table = Table(
                    "bench", "events", TableType.EXTERNAL,
                    StorageDescriptor(fs.local_uri(source_root), (Column("v", "string"),), serde_library="x"),
                    partition_keys=(Column("dt", "string"),),
                )  # fmt: skip
                source.create_table(table)
                source.add_partitions(
                    table,
                    [
                        Partition((f"{i:05d}",), table.storage.with_location(location))
                        for i, location in enumerate(folders)
                    ],
                )

            def config(name: str) -> Path:
                path = home / f"{name}.yml"
                path.write_text(
                    yaml.safe_dump(
                        {
                            "source-catalog": {"name": "source", "hive-metastore-uris": uri},
                            "replica-catalog": {
                                "name": "replica",
                                "hive-metastore-uris": f"thrift://127.0.0.1:{ports['replica']}",
                            },
                            # The inline copier whatever the size (Spark above ~1 GiB).
                            "copier-options": {
                                "s3-batch-files": arguments.batch_files,
                                "inline-threshold-mib": 1024 * 1024,
                            },
                            "table-replications": [
                                {
                                    "source-table": {
                                        "database-name": "bench", "table-name": "events",
                                    },
                                    "replica-table": {
                                        "database-name": f"bench_{name}",
                                        "table-location": fs.local_uri(home / name / "events"),
                                    },
                                }
                            ],
                        }
                    )
                )  # fmt: skip
                return path

            full_seconds, full, code = replicate(config("full"), home / "home-full")
            assert code == 0, full
            resumed_config = config("resumed")
            kill = [{"point": "copy.batch", "action": "kill", "skip": killed_after - 1}]
            killed_seconds, _, code = replicate(resumed_config, home / "home-resumed", kill)
            assert code == -9, code
            before = files_below(home / "resumed")
            resume_seconds, resumed, code = replicate(resumed_config, home / "home-resumed")
            assert code == 0 and resumed["resumed"], resumed
            after = files_below(home / "resumed")
        finally:
            for name in started:
                processes.stop_process(home, name)
    written = [path for path, seen in after.items() if before.get(path) != seen]
    written_bytes = sum(after[path][2] for path in written)
    print(
        f"\n{total_files} files, {total / MiB:.0f} MiB, {batches} batches; the first run "
        f"killed after {killed_after} batches ({killed_seconds:.1f} s)"
    )
    print("| | wall s | files written | MiB written | of the table |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(
        f"| full copy | {full_seconds:.1f} | {full['files']} | {full['bytes'] / MiB:.0f} | 100 % |"
    )
    print(
        f"| resume | {resume_seconds:.1f} | {len(written)} | {written_bytes / MiB:.0f} "
        f"| {100 * written_bytes / total:.1f} % |"
    )
    print(
        f"\nthe resume's JSON: {resumed['reused_files']} files "
        f"({resumed['reused_bytes'] / MiB:.0f} MiB) reused; resume / full copy wall time "
        f"{resume_seconds / full_seconds:.2f}"
    )


if __name__ == "__main__":
    main()
