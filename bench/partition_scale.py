"""A table of many partitions as whole commands: first run, no-op and 1 % changed, each
against its floor measured in the same run.

Two real Hive metastores (started here, on free ports). The source table has
``--partitions`` partitions of one small file each on the local disk. Each figure is a
``ferry replicate`` as a person runs it (a new process), and its floor is the least any tool
must do for the same outcome, also timed as a whole:

- **first run** (every partition copied and added) against ``cp -r`` of the table's folder
  plus creating the replica table and adding its partitions in batches of 1,000 (the
  catalog's ``batch-size``), in a fresh process;
- **no-op** (nothing changed) against reading both catalogs' partitions in pages and
  stat-ing every source file, in a fresh process: what telling "nothing changed" costs;
- **1 % changed** (``--changed`` of the partitions' files rewritten in place) against the
  same floor.

The issue's targets: first run ≤ 1.0× its floor, no-op ≤ 1.2×, 1 % changed ≤ 2× the no-op
floor.

    make bench                    # or: .venv/bin/python bench/partition_scale.py --partitions 10000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ferry.catalog import batched  # noqa: E402
from ferry.catalog.hive import HiveMetastoreCatalog  # noqa: E402
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType  # noqa: E402
from ferry.local import metastore, processes  # noqa: E402
from ferry.storage import fs  # noqa: E402

DATABASE = "bench"
TABLE = "events"
TEXT = "org.apache.hadoop.mapred.TextInputFormat"
LAZY = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"

# The first run's catalog half: the replica table created and its partitions added in
# batches, as any tool must (the folder is copied by ``cp -r`` beside it).
ADD_CHILD = """
import sys
from dataclasses import replace
from ferry.catalog import batched
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.core.model import Database
source_uri, replica_uri, database, table, target = sys.argv[1:6]
with HiveMetastoreCatalog("source", [source_uri]) as source, \\
        HiveMetastoreCatalog("replica", [replica_uri]) as replica:
    found = source.get_table(database, table)
    partitions = source.list_partitions(found)
    if replica.get_database(database + "_floor") is None:
        replica.create_database(Database(database + "_floor"))
    copy = replace(found, database=database + "_floor", storage=found.storage.with_location(target))
    replica.create_table(copy)
    moved = [replace(p, storage=p.storage.with_location(
        target + p.location[len(found.location):])) for p in partitions]
    for batch in batched(moved, 1000):
        replica.add_partitions(copy, list(batch))
"""

# The no-op's floor: both catalogs' partitions read in pages, every source file stat-ed.
READ_CHILD = """
import sys
from pyarrow import fs as pafs
from ferry.catalog.hive import HiveMetastoreCatalog
source_uri, replica_uri, database, table, root = sys.argv[1:6]
with HiveMetastoreCatalog("source", [source_uri]) as source, \\
        HiveMetastoreCatalog("replica", [replica_uri]) as replica:
    found = source.get_table(database, table)
    assert len(source.list_partitions(found)) > 0
    mirrored = replica.get_table(database + "_dr", table)
    replica.list_partitions(mirrored)
files = pafs.LocalFileSystem().get_file_info(pafs.FileSelector(root, recursive=True))
assert files
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--changed", type=float, default=0.01, help="share rewritten")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    arguments = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="ferry-partitions-"))
    ports = {name: processes.free_port() for name in ("source", "replica")}
    started = []
    try:
        for name, port in ports.items():
            metastore.start_metastore(home, name, port)
            started.append(name)
        uris = {name: f"thrift://127.0.0.1:{port}" for name, port in ports.items()}
        figures = measure(home, uris, arguments.partitions, arguments.changed)
    finally:
        for name in started:
            processes.stop_process(home, name)
        shutil.rmtree(home, ignore_errors=True)
    if arguments.json:
        print(json.dumps(figures, indent=2))
    else:
        report(figures)


def measure(home: Path, uris: dict[str, str], count: int, changed: float) -> dict:
    source_root = home / "source" / TABLE
    print(f"{count:,} partitions of one file at the source …", flush=True)
    build(uris["source"], source_root, count)
    config = home / "replication.yml"
    config.write_text(yaml.safe_dump(_config(uris, home), sort_keys=False))
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = [sys.executable, "-c"]
    arguments = (uris["source"], uris["replica"], DATABASE, TABLE)

    print("first run: ferry replicate, then cp -r + batched add_partitions …", flush=True)
    first = _timed(_replicate(config, home), environment, "SUCCEEDED")
    floor_copy = _timed(["cp", "-r", str(source_root), str(home / "floor-copy")], environment)
    target = fs.local_uri(home / "floor-copy")
    floor_add = _timed([*child, ADD_CHILD, *arguments, target], environment)

    print("no-op: ferry replicate, then both catalogs read and every file stat-ed …", flush=True)
    read = [*child, READ_CHILD, *arguments, str(source_root)]
    noop, noop_floor = [], []
    for _ in range(3):  # alternated, the median kept
        noop.append(_timed(_replicate(config, home), environment, "UNCHANGED"))
        noop_floor.append(_timed(read, environment))

    rewritten = max(1, int(count * changed))
    print(f"{rewritten:,} partitions rewritten, then ferry replicate …", flush=True)
    time.sleep(1.1)  # a new modification time, whole seconds on some file systems
    for index in range(0, count, max(1, count // rewritten))[:rewritten]:
        (source_root / _folder(index) / "part-0.txt").write_bytes(_row(index, "changed"))
    some = _timed(_replicate(config, home), environment, "SUCCEEDED")
    return {
        "partitions": count,
        "changed": rewritten,
        "firstRun": {"ferry": first, "floor": floor_copy + floor_add,
                     "cp": floor_copy, "addPartitions": floor_add},
        "noop": {"ferry": sorted(noop)[1], "floor": sorted(noop_floor)[1]},
        "someChanged": {"ferry": some, "floor": sorted(noop_floor)[1]},
    }  # fmt: skip


def build(source_uri: str, root: Path, count: int) -> None:
    """The source table: one text file per partition, the partitions added in batches."""
    begun = time.monotonic()
    for index in range(count):
        folder = root / _folder(index)
        folder.mkdir(parents=True)
        (folder / "part-0.txt").write_bytes(_row(index, "first"))
    storage = StorageDescriptor(
        fs.local_uri(root), (Column("v", "string"),),
        input_format=TEXT, output_format="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serde_library=LAZY,
    )  # fmt: skip
    table = Table(
        DATABASE, TABLE, TableType.EXTERNAL, storage, partition_keys=(Column("n", "int"),)
    )
    partitions = [
        Partition((str(index),), storage.with_location(fs.local_uri(root / _folder(index))))
        for index in range(count)
    ]
    with HiveMetastoreCatalog("source", [source_uri]) as source:
        source.create_database(Database(DATABASE))
        source.create_table(table)
        for batch in batched(partitions, 1000):
            source.add_partitions(table, list(batch))
    print(f"  {time.monotonic() - begun:.0f} s", flush=True)


def _folder(index: int) -> str:
    return f"n={index}"


def _row(index: int, what: str) -> bytes:
    return f"{what} row of partition {index}\n".encode() * 40


def _config(uris: dict[str, str], home: Path) -> dict:
    return {
        "source-catalog": {"name": "onprem", "hive-metastore-uris": uris["source"]},
        "replica-catalog": {"name": "dr", "hive-metastore-uris": uris["replica"]},
        "table-replications": [
            {
                "source-table": {"database-name": DATABASE, "table-name": TABLE},
                "replica-table": {
                    "database-name": f"{DATABASE}_dr",
                    "table-name": TABLE,
                    "table-location": fs.local_uri(home / "replica" / TABLE),
                },
            }
        ],
    }


def _replicate(config: Path, home: Path) -> list[str]:
    return [
        sys.executable, "-m", "ferry.commands.cli", "replicate", str(config),
        "--home", str(home / "ferry-home"), "--work-uri", fs.local_uri(home / "work"), "--json",
    ]  # fmt: skip


def _timed(command: list[str], environment: dict[str, str], status: str | None = None) -> float:
    """The command's wall time; a ``ferry replicate`` must end in ``status``."""
    begun = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=environment)
    seconds = time.perf_counter() - begun
    if done.returncode != 0:
        raise SystemExit(f"{command[:4]} failed: {done.stderr.strip()[-2000:]}")
    if status is not None:
        outcome = [table["status"] for table in json.loads(done.stdout)["tables"]]
        assert outcome == [status], (status, outcome)
    return round(seconds, 3)


def report(figures: dict) -> None:
    count, changed = figures["partitions"], figures["changed"]
    first, noop, some = figures["firstRun"], figures["noop"], figures["someChanged"]
    print(f"\nA table of {count:,} partitions, whole commands (a new process each)")
    print("| run | Ferry s | floor s | ratio | target |")
    print("| --- | ---: | ---: | ---: | ---: |")
    rows = (
        ("first run (floor: cp -r + batched add_partitions)", first, "≤ 1.0×"),
        ("no-op (floor: both catalogs read, every file stat-ed)", noop, "≤ 1.2×"),
        (f"{changed:,} partitions changed (floor: the no-op's)", some, "≤ 2.0×"),
    )
    for name, figure, target in rows:
        ratio = figure["ferry"] / figure["floor"]
        print(
            f"| {name} | {figure['ferry']:.2f} | {figure['floor']:.2f} | {ratio:.2f}× | {target} |"
        )
    print(
        f"(first run's floor: cp -r {first['cp']:.2f} s + add_partitions {first['addPartitions']:.2f} s)"
    )


if __name__ == "__main__":
    main()
