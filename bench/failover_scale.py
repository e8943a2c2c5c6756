"""``ferry failover`` and ``ferry failback`` of a config of many Hive tables, wall time.

Two real Hive metastores (started here) hold ``--tables`` partitioned tables
(``--partitions`` each, one small Parquet file per partition) at the source; ``ferry
replicate --home`` replicates them. Then, each command as a person runs it (a new process):

- **failover**: every table checked, its baseline listed and kept, the table promoted;
- a writer in DR adds one partition to every table (not timed);
- **failback**: both sides read against the baselines, the reverse config written and
  replicated (one new partition per table comes home), the forward replicas un-promoted;
- **replicate**: the forward run right after, which copies nothing.

    .venv/bin/python bench/failover_scale.py            # 100 tables
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
from ferry.local.samples import ORDER_COLUMNS, PARQUET, order_rows, write_parquet  # noqa: E402
from ferry.storage import fs  # noqa: E402


def ferry(*args: str) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if done.returncode != 0:
        raise SystemExit(f"ferry {' '.join(args)} failed: {done.stderr.strip()}")
    return time.monotonic() - started, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=3, help="partitions per table")
    arguments = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ferry-failover-") as folder:
        base = Path(folder)
        ports = {name: processes.free_port() for name in ("source", "replica")}
        started = []
        try:
            for name, port in ports.items():
                metastore.start_metastore(base, name, port)
                started.append(name)
            run(base, ports, arguments.tables, arguments.partitions)
        finally:
            for name in started:
                processes.stop_process(base, name)


def run(base: Path, ports: dict[str, int], count: int, partitions: int) -> None:
    source_uri = f"thrift://127.0.0.1:{ports['source']}"
    replica_uri = f"thrift://127.0.0.1:{ports['replica']}"
    warehouse = (base / "source-data").as_uri()
    target = (base / "replica-data").as_uri()
    days = [f"2026-11-{day:02d}" for day in range(1, partitions + 1)]
    with HiveMetastoreCatalog("onprem", [source_uri]) as source:
        source.create_database(Database("sales", None, fs.join(warehouse, "sales.db")))
        for index in range(count):
            location = fs.join(warehouse, "sales.db", f"t{index:04d}")
            table = Table(
                "sales", f"t{index:04d}", TableType.EXTERNAL,
                StorageDescriptor(location=location, columns=ORDER_COLUMNS, **PARQUET),
                partition_keys=(Column("dt", "string"),), parameters={"EXTERNAL": "TRUE"},
            )  # fmt: skip
            source.create_table(table)
            added = []
            for day in days:
                where = fs.join(location, f"dt={day}")
                write_parquet(where, "part-00000.parquet", order_rows(day))
                added.append(Partition((day,), table.storage.with_location(where)))
            source.add_partitions(table, added)
    config = base / "replication.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "source-catalog": {"name": "onprem", "hive-metastore-uris": source_uri},
                "replica-catalog": {"name": "dr", "hive-metastore-uris": replica_uri},
                "table-replications": [
                    {
                        "source-table": {"database-name": "sales", "table-name": f"t{i:04d}"},
                        "replica-table": {
                            "database-name": "sales_dr",
                            "table-name": f"t{i:04d}",
                            "table-location": f"{target}/t{i:04d}",
                        },
                    }
                    for i in range(count)
                ],
            },
            sort_keys=False,
        )
    )
    home = str(base / "home")
    replicated, _ = ferry("replicate", str(config), "--home", home, "--json")
    failover, _ = ferry("failover", str(config), "--home", home, "--json")
    with HiveMetastoreCatalog("dr", [replica_uri]) as replica:
        for index in range(count):
            table = replica.get_table("sales_dr", f"t{index:04d}")
            assert table is not None
            where = fs.join(target, f"t{index:04d}", "written-in-dr", "dt=2026-12-01")
            write_parquet(where, "part-00000.parquet", order_rows("2026-12-01"))
            replica.add_partitions(
                table, [Partition(("2026-12-01",), table.storage.with_location(where))]
            )
    failback, out = ferry("failback", str(config), "--home", home, "--json")
    home_partitions = sum(t["partitions_home"] for t in json.loads(out)["tables"])
    forward, out = ferry("replicate", str(config), "--home", home, "--json")
    copied = sum(t["files"] for t in json.loads(out)["tables"])
    print(f"{count} tables, {partitions} partitions each")
    print(f"  replicate (first)  {replicated:7.1f} s")
    print(f"  failover           {failover:7.1f} s")
    print(f"  failback           {failback:7.1f} s  ({home_partitions} partitions home)")
    print(f"  replicate (after)  {forward:7.1f} s  ({copied} files copied)")
    # Ratios against baselines of the same run: a failover reads the replicas as a no-op run
    # reads both catalogs; a failback replicates one partition per table, as a run does.
    print(f"  failover / no-op replicate      {failover / forward:5.2f}x")
    print(f"  failback / first replicate      {failback / replicated:5.2f}x")


if __name__ == "__main__":
    main()
