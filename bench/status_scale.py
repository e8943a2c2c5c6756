"""``ferry status`` of a config of many tables, against the floor of reading both catalogs.

Two real Hive metastores (started here) hold ``--tables`` partitioned tables (``--partitions``
each) at the source and their replicas, as a replication leaves them: each replica carries
the source version Commit records, each has its outcome in the state store
(``<home>/state.sqlite3``). One table in ten then gets a new partition at the source (it is
behind). In the same run:

- **``ferry status``**: the command as a person runs it (a new process: Python's start-up,
  the config, the state store's batch read, both catalogs), wall time;
- **``measure``**: the same measurement in this process;
- **the floor**: both catalogs' tables listed and read once, in batches of 100 — what any
  status must do at least, with no partition compared and no state read.

    .venv/bin/python bench/status_scale.py            # 1,000 tables
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ferry.catalog import batched  # noqa: E402
from ferry.catalog.hive import HiveMetastoreCatalog  # noqa: E402
from ferry.config import parse_config  # noqa: E402
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType  # noqa: E402
from ferry.freshness import FreshnessState, measure  # noqa: E402
from ferry.lifecycle import replica_state  # noqa: E402
from ferry.local import metastore, processes  # noqa: E402
from ferry.planning.source_versions import of_table, recorded_parameters  # noqa: E402
from ferry.replicas.ledger import SqliteStateStore  # noqa: E402
from ferry.replicas.replica import REPLICATION_EVENT, SOURCE_TABLE  # noqa: E402
from ferry.storage import fs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=3, help="partitions per table")
    arguments = parser.parse_args()
    count = arguments.tables

    with tempfile.TemporaryDirectory(prefix="ferry-status-") as folder:
        home = Path(folder)
        ports = {name: processes.free_port() for name in ("source", "replica")}
        started = []
        try:
            for name, port in ports.items():
                metastore.start_metastore(home, name, port)
                started.append(name)
            source_uri = f"thrift://127.0.0.1:{ports['source']}"
            replica_uri = f"thrift://127.0.0.1:{ports['replica']}"
            document = {
                "source-catalog": {"name": "source", "hive-metastore-uris": source_uri},
                "replica-catalog": {"name": "replica", "hive-metastore-uris": replica_uri},
                "rpo": "PT15M",
                "table-replications": [
                    {
                        "source-table": {"database-name": "bench", "table-name-pattern": "t.*"},
                        "replica-table": {"database-name": "bench_dr"},
                        "replication-mode": "METADATA_MIRROR",
                    }
                ],
            }
            config_path = home / "config.yml"
            import yaml

            config_path.write_text(yaml.safe_dump(document))
            config = parse_config(document)
            build(home, config, source_uri, replica_uri, count, arguments.partitions)

            with (
                HiveMetastoreCatalog("source", [source_uri]) as source,
                HiveMetastoreCatalog("replica", [replica_uri]) as replica,
            ):
                floor = read_every_table(source, replica)  # warms both connection pools
                floor = min(floor, read_every_table(source, replica))
                store = SqliteStateStore(home / "state.sqlite3")
                begun = time.monotonic()
                measured = measure(config, source, replica, store, datetime.now(UTC))
                in_process = time.monotonic() - begun
            behind = sum(1 for t in measured if t.state is FreshnessState.BEHIND)
            in_sync = sum(1 for t in measured if t.state is FreshnessState.IN_SYNC)
            assert (behind, in_sync) == (count // 10, count - count // 10), (behind, in_sync)

            begun = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "ferry.commands.cli", "status", str(config_path), "--home",
                 str(home), "--json"],
                capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
            )  # fmt: skip
            command = time.monotonic() - begun
            assert done.returncode == 0, done.stderr  # behind by seconds: within the RPO
        finally:
            for name in started:
                processes.stop_process(home, name)

    print(f"\nferry status of {count:,} tables ({arguments.partitions} partitions each, "
          f"{count // 10} behind)")  # fmt: skip
    print("| | seconds | ratio to the floor |")
    print("| --- | ---: | ---: |")
    print(f"| floor: both catalogs' tables listed and read | {floor:.2f} | 1.0× |")
    print(f"| measure() in this process | {in_process:.2f} | {in_process / floor:.1f}× |")
    print(f"| `ferry status --json` (a new process) | {command:.2f} | {command / floor:.1f}× |")


def build(home: Path, config, source_uri: str, replica_uri: str, count: int, partitions: int):
    """``count`` tables at the source and their replicas as Commit leaves them; then a new
    partition at the source of every tenth."""
    print(f"{count:,} tables at the source and the replica …", flush=True)
    begun = time.monotonic()
    read_at = datetime.now(UTC)
    root = home / "data"
    store = SqliteStateStore(home / "state.sqlite3")
    replications = config.table_replications

    def table_of(database: str, name: str, parameters: dict) -> Table:
        return Table(
            database, name, TableType.EXTERNAL,
            StorageDescriptor(fs.local_uri(root / name), (Column("v", "string"),), serde_library="x"),
            partition_keys=(Column("dt", "string"),), parameters=parameters,
        )  # fmt: skip

    def partitions_of(table: Table, days: range) -> list[Partition]:
        return [
            Partition(
                (f"2026-11-{d:02d}",), table.storage.with_location(f"{table.location}/dt={d}")
            )
            for d in days
        ]

    def one(index: int) -> None:
        name = f"t{index:05d}"
        source_table = table_of("bench", name, {})
        source.create_table(source_table)
        source.add_partitions(source_table, partitions_of(source_table, range(1, partitions + 1)))
        read = source.get_table("bench", name)
        version = str(of_table(read, source.list_partitions(read), glue=False))
        parameters = {
            REPLICATION_EVENT: "bench-event", SOURCE_TABLE: f"bench.{name}",
            **recorded_parameters(version, read_at),
        }  # fmt: skip
        replica_table = table_of("bench_dr", name, parameters)
        replica.create_table(replica_table)
        replica.add_partitions(
            replica_table, partitions_of(replica_table, range(1, partitions + 1))
        )
        replication = replications[0].for_table(name)
        key = replica_state.replica_of(config.replica_catalog, replication, None)
        store.record_success(key, f"bench_dr.{name}", "bench-event", read_at, version, read_at)

    with (
        HiveMetastoreCatalog("source", [source_uri]) as source,
        HiveMetastoreCatalog("replica", [replica_uri]) as replica,
    ):
        source.create_database(Database("bench"))
        replica.create_database(Database("bench_dr"))
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(one, range(count)))
        time.sleep(1.1)  # the metastore keeps whole seconds
        for batch in batched(range(0, count, 10), 100):
            for index in batch:
                table = source.get_table("bench", f"t{index:05d}")
                source.add_partitions(table, partitions_of(table, range(28, 29)))
    print(f"  {time.monotonic() - begun:.0f} s", flush=True)


def read_every_table(source: HiveMetastoreCatalog, replica: HiveMetastoreCatalog) -> float:
    """The floor: list both databases and read every table of each once, in batches
    (``get_table_objects_by_name``, 100 tables a call), as ``measure`` reads them."""
    begun = time.monotonic()
    for catalog, database in ((source, "bench"), (replica, "bench_dr")):
        names = catalog.list_table_names(database)
        assert len(catalog.get_tables(database, names)) == len(names)
    return time.monotonic() - begun


if __name__ == "__main__":
    main()
