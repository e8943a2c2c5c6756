"""The diff on a table of many partitions, against a naive one-call-per-partition diff.

A source table in a real Hive metastore (started here) with ``--partitions`` partitions of
one file each is replicated once; then 1 % of the partitions are rewritten in place. In the
same run:

- **Ferry's plan** (``plan_replication``: partitions fetched in pages, the source walked
  once for fingerprints, the replica's partitions fetched in pages) is timed and its
  metastore calls counted;
- **a naive diff** — one ``get_partition`` per partition on the replica and one listing per
  partition — the way a diff without paging does it, timed and counted the same way;
- **a no-op re-run**: the plan when nothing changed;
- **commit**: Ferry's commit of every partition into an empty replica, against the raw
  batched Thrift ``add_partitions`` calls alone.

    make bench                    # or: .venv/bin/python bench/diff_scale.py --partitions 100000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ferry.catalog import batched  # noqa: E402
from ferry.catalog.hive import HiveMetastoreCatalog  # noqa: E402
from ferry.catalog.hive_thrift import partition_to_thrift  # noqa: E402
from ferry.commands.in_process import InProcessDriver  # noqa: E402
from ferry.config import parse_config  # noqa: E402
from ferry.copying.spark_job import LocalSpark  # noqa: E402
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType  # noqa: E402
from ferry.lifecycle.committing import commit  # noqa: E402
from ferry.local import metastore, processes  # noqa: E402
from ferry.planning.table_plan import plan_replication  # noqa: E402
from ferry.replicas.replica import PARTITION_FINGERPRINT  # noqa: E402
from ferry.states.context import StateContext  # noqa: E402
from ferry.storage import fingerprint, fs  # noqa: E402


class Counting(HiveMetastoreCatalog):
    """A Hive catalog that counts its metastore calls."""

    def __init__(self, *arguments, **options):
        super().__init__(*arguments, **options)
        self.calls = 0
        self._counting = threading.Lock()

    def call(self, operation):
        with self._counting:  # pages are fetched on several threads
            self.calls += 1
        return super().call(operation)


def clock():
    from datetime import UTC, datetime

    return datetime.now(UTC)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--changed", type=float, default=0.01, help="share rewritten")
    parser.add_argument("--profile", action="store_true", help="profile Ferry's plan")
    parser.add_argument(
        "--plan-only", action="store_true", help="skip the naive diff and the commit"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep the tables in DIR and reuse them on the next run (with --plan-only)",
    )
    arguments = parser.parse_args()
    count = arguments.partitions

    with contextlib.ExitStack() as cleanup:
        if arguments.keep:
            home = arguments.keep.resolve()
            home.mkdir(parents=True, exist_ok=True)
        else:
            home = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="ferry-diff-")))
        built = home / f"built-{count}"  # the tables exist, replicated once
        # Kept tables keep their ports: a replica records its source metastore's URIs.
        saved = home / "ports.json"
        ports = (
            json.loads(saved.read_text())
            if saved.exists()
            else {name: processes.free_port() for name in ("source", "replica")}
        )
        if arguments.keep:
            saved.write_text(json.dumps(ports))
        started = []
        try:
            for name, port in ports.items():
                metastore.start_metastore(home, name, port)
                started.append(name)
            source_uri = f"thrift://127.0.0.1:{ports['source']}"
            replica_uri = f"thrift://127.0.0.1:{ports['replica']}"
            root = home / "source" / "events"
            document = {
                "source-catalog": {"name": "source", "hive-metastore-uris": source_uri},
                "replica-catalog": {"name": "replica", "hive-metastore-uris": replica_uri},
                "table-replications": [
                    {
                        "source-table": {"database-name": "bench", "table-name": "events"},
                        "replica-table": {
                            "database-name": "bench_dr",
                            "table-location": fs.local_uri(home / "replica" / "events"),
                        },
                    }
                ],
            }
            if built.exists():
                print(f"the tables of {count:,} partitions in {home}", flush=True)
                rewritten = home / "rewritten.json"  # undo the last run's rewrite, times too
                for name, mtime_ns in json.loads(rewritten.read_text()).items():
                    (root / name).write_bytes(b"generation-0")
                    os.utime(root / name, ns=(mtime_ns, mtime_ns))
            else:
                build_tables(home, root, count, source_uri, document)
                if arguments.keep:
                    built.touch()
            replication = parse_config(document).table_replications[0]

            def ferry_plan():
                with (
                    Counting("source", [source_uri]) as source,
                    Counting("replica", [replica_uri]) as replica,
                ):
                    begun = time.monotonic()
                    plan = plan_replication(replication, source, replica, "bench-event", clock)
                    return plan, time.monotonic() - begun, source.calls + replica.calls

            noop, noop_seconds, noop_calls = ferry_plan()
            assert noop.unchanged, "nothing changed yet"

            changed = max(1, int(count * arguments.changed))
            step = count // changed
            originals = {}
            for index in range(0, count, step)[:changed]:
                data = root / f"dt={index:06d}" / "part-00000.parquet"
                originals[str(data.relative_to(root))] = data.stat().st_mtime_ns
                data.write_bytes(b"generation-1!")
            (home / "rewritten.json").write_text(json.dumps(originals))

            if arguments.profile:
                import cProfile
                import pstats

                profiler = cProfile.Profile()
                profiler.enable()
                ferry_plan()
                profiler.disable()
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
            plan, plan_seconds, plan_calls = ferry_plan()
            assert len(plan.partitions_to_alter) == changed, len(plan.partitions_to_alter)

            if arguments.plan_only:
                print(f"\nFerry's plan of {count:,} partitions, {changed:,} rewritten: "
                      f"{plan_seconds:.1f} s, {plan_calls:,} metastore calls; "
                      f"no-op re-run {noop_seconds:.1f} s")  # fmt: skip
                return
            # The naive diff: one replica call and one listing per selected partition.
            with (
                Counting("source", [source_uri]) as source,
                Counting("replica", [replica_uri]) as replica,
            ):
                begun = time.monotonic()
                source_table = source.get_table("bench", "events")
                found = 0
                for partition in source.list_partitions(source_table):
                    old = replica.call(
                        lambda c, v=partition.values: c.get_partition("bench_dr", "events", list(v))
                    )
                    printed = fingerprint.of_entries(
                        partition.location, fs.list_files(partition.location)
                    )
                    if (old.parameters or {}).get(PARTITION_FINGERPRINT) != str(printed):
                        found += 1
                naive_seconds = time.monotonic() - begun
                naive_calls = source.calls + replica.calls
            assert found == changed, found

            # Commit of every partition into an empty replica, against raw add_partitions.
            with HiveMetastoreCatalog("replica", [replica_uri]) as replica:
                all_partitions = replica.list_partitions(replica.get_table("bench_dr", "events"))
                fresh = replace(
                    plan,
                    replica_before=None,
                    replica_table=replace(plan.replica_table, database="bench_commit"),
                    partitions_to_add=tuple(all_partitions),
                    partitions_to_alter=(),
                    partitions_to_drop=(),
                )
                begun = time.monotonic()
                commit(fresh, replica, 1000)
                commit_seconds = time.monotonic() - begun
                replica.create_database(Database("bench_raw", None, None))
                raw_table = replace(plan.replica_table, database="bench_raw")
                replica.create_table(raw_table)
                thrift = [partition_to_thrift(raw_table, p) for p in all_partitions]
                begun = time.monotonic()
                for batch in batched(thrift, 1000):
                    replica.call(lambda c, b=batch: c.add_partitions(b))
                raw_seconds = time.monotonic() - begun
        finally:
            for name in started:
                processes.stop_process(home, name)

    print(f"\ndiff of {count:,} partitions, {changed:,} rewritten ({arguments.changed:.0%})")
    print("| | seconds | metastore calls |")
    print("| --- | ---: | ---: |")
    print(f"| Ferry's plan | {plan_seconds:.1f} | {plan_calls:,} |")
    print(
        f"| naive diff, one call per partition (baseline) | {naive_seconds:.1f} | {naive_calls:,} |"
    )
    print(
        f"| ratio baseline / Ferry | {naive_seconds / plan_seconds:.1f}× | {naive_calls / plan_calls:.0f}× |"
    )
    print(f"| no-op re-run (nothing changed) | {noop_seconds:.1f} | {noop_calls:,} |")
    print(f"\ncommit of {count:,} partitions: Ferry {commit_seconds:.1f} s, raw batched "
          f"add_partitions {raw_seconds:.1f} s (ratio {raw_seconds / commit_seconds:.2f})")  # fmt: skip


def build_tables(home: Path, root: Path, count: int, source_uri: str, document: dict) -> None:
    """The source table of ``count`` one-file partitions, replicated once."""
    import yaml

    print(f"a source table of {count:,} partitions …", flush=True)
    begun = time.monotonic()
    for index in range(count):
        folder_path = root / f"dt={index:06d}"
        folder_path.mkdir(parents=True)
        (folder_path / "part-00000.parquet").write_bytes(b"generation-0")
    table = Table(
        "bench", "events", TableType.EXTERNAL,
        StorageDescriptor(fs.local_uri(root), (Column("v", "string"),), serde_library="x"),
        partition_keys=(Column("dt", "string"),),
    )  # fmt: skip
    with HiveMetastoreCatalog("source", [source_uri]) as source:
        source.create_database(Database("bench", None, None))
        source.create_table(table)
        source.add_partitions(
            table,
            [
                Partition(
                    (f"{i:06d}",), table.storage.with_location(fs.local_uri(root / f"dt={i:06d}"))
                )
                for i in range(count)
            ],
        )
    print(f"  {time.monotonic() - begun:.0f} s; replicating it once …", flush=True)
    config_path = home / "config.yml"
    config_path.write_text(yaml.safe_dump(document))
    begun = time.monotonic()
    driver = InProcessDriver(StateContext(fs.local_uri(home / "work")), LocalSpark(home / "spark"))
    first = driver.run({"configUri": str(config_path)})
    assert first.status == "SUCCEEDED", first
    print(f"  {time.monotonic() - begun:.0f} s", flush=True)


if __name__ == "__main__":
    main()
