"""Source change to replica visible, through the catalog change feeds: lag p50 and p95.

The DR path of ``triggers.catalog-events``, as ``ferry local trigger`` installs it on the
local runtime, for both feeds: AWS Glue's events (the emulator sends them for the Glue calls
it serves, as AWS does) and a Hive metastore's notification log (the poller). No marker, no
schedule: the change in the source catalog is the trigger. Three changes, each measured
from just before its first catalog call until the replica shows it (polled every 50 ms):

- **one partition** added (its Parquet files, then the partition), ``--runs`` times;
- **a burst** of 1,000 partitions added in 100 catalog calls of 10 (their files written
  before), until the last is in the replica, with the replication runs it started counted
  (the window merges it into one);
- **a table rewritten**: an unpartitioned table's files written to a new folder and the table
  pointed at it, until the replica has copied that folder.

The merge window is ``--window`` (default PT5S: the config's default, PT30S, would measure
mostly the wait). The lag is the window plus one run: the figures say how much the rest is.

    .venv/bin/python bench/catalog_lag.py [--runs 5] [--window PT5S] [--feeds glue,hive]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import boto3
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ferry.catalog import Catalog  # noqa: E402
from ferry.catalog.glue import GlueCatalog  # noqa: E402
from ferry.catalog.hive import HiveMetastoreCatalog  # noqa: E402
from ferry.commands.local import run_local_trigger  # noqa: E402
from ferry.core.duration import parse_duration  # noqa: E402
from ferry.core.model import Partition, StorageDescriptor  # noqa: E402
from ferry.feeds import FeedState  # noqa: E402
from ferry.local import deploy, emulator, metastore, processes  # noqa: E402
from ferry.local.samples import (  # noqa: E402
    ORDER_COLUMNS,
    PARQUET,
    create_sample_tables,
    customer_rows,
    last_days,
    order_rows,
    write_parquet,
)
from ferry.replicas.replica import SOURCE_LOCATION  # noqa: E402
from ferry.storage import fs  # noqa: E402

# Buckets the local environment's roles may read and write (ferry/local/environment.yml).
SOURCE_BUCKET, REPLICA_BUCKET = "landing-bench", "dr-bench"
TODAY = date(2026, 11, 21)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="single partitions measured")
    parser.add_argument("--window", default="PT5S", help="the merge window (ISO 8601)")
    parser.add_argument("--feeds", default="glue,hive", help="glue, hive or both")
    parser.add_argument("--burst", type=int, default=100, help="calls of 10 partitions")
    args = parser.parse_args(argv)
    window = parse_duration(args.window).total_seconds()

    state_dir = Path(tempfile.mkdtemp(prefix="ferry-lag-"))
    port = processes.free_port()
    emulator.start_emulator(state_dir, port)
    endpoint = emulator.endpoint_url(port)
    os.environ.update({**emulator.EMULATOR_ENVIRONMENT, "AWS_ENDPOINT_URL": endpoint})
    fs.configure(fs.S3Settings.from_environment(os.environ))
    started: list[str] = ["aws"]
    results: dict[str, dict[str, Any]] = {}
    try:
        hive_port = processes.free_port()
        feeds = args.feeds.split(",")
        if "hive" in feeds:
            metastore.start_metastore(state_dir, "source", hive_port, notification_log=True)
            started.append("source")
        uris = {"SOURCE_METASTORE_URIS": f"thrift://127.0.0.1:{hive_port}",
                "REPLICA_METASTORE_URIS": "thrift://unused:9084"}  # fmt: skip
        pipeline = deploy.deploy(endpoint, state_dir, uris)
        session = boto3.session.Session(region_name="us-east-1")
        s3, glue, sfn = (session.client(n) for n in ("s3", "glue", "stepfunctions"))
        for bucket in (SOURCE_BUCKET, REPLICA_BUCKET):
            s3.create_bucket(Bucket=bucket)
        for feed in feeds:
            if feed == "glue":
                source: Catalog = GlueCatalog("landing", glue)
                catalog_section = {"name": "landing", "glue": {"region": "us-east-1"}}
            else:
                source = HiveMetastoreCatalog("landing", [uris["SOURCE_METASTORE_URIS"]])
                catalog_section = {"name": "landing", "hive-metastore-uris": uris[
                    "SOURCE_METASTORE_URIS"]}  # fmt: skip
            print(f"\n== {feed} ==", flush=True)
            results[feed] = Feed(feed, source, catalog_section, glue, sfn, pipeline, state_dir,
                                 args.window, window).measure(args.runs, args.burst)  # fmt: skip
        _print_results(results, args)
    finally:
        for name in reversed(started):
            processes.stop_process(state_dir, name)
        if not os.environ.get("FERRY_KEEP"):
            shutil.rmtree(state_dir, ignore_errors=True)
    return 0


class Feed:
    """One feed's source catalog, its config installed with ``ferry local trigger``."""

    def __init__(self, feed, source, catalog_section, glue, sfn, pipeline, state_dir, window,
                 window_seconds):  # fmt: skip
        self.feed, self.source, self.glue, self.sfn = feed, source, glue, sfn
        self.pipeline = pipeline
        self.database = f"sales_lag_{feed}"  # a database the local roles may read
        self.window_seconds = window_seconds
        # A Hive metastore checks its tables' folders, and has no S3 file system: its data is
        # in local folders (copied into S3 by the inline copier, in the function).
        warehouse = (
            f"s3://{SOURCE_BUCKET}/{feed}" if feed == "glue" else (state_dir / "hive-data").as_uri()
        )
        self.sample = create_sample_tables(source, self.database, warehouse, last_days(TODAY, 1))
        config = state_dir / f"{feed}.yml"
        config.write_text(yaml.safe_dump(self._config(catalog_section, window), sort_keys=False))
        # The replica starts in step: one full run by hand, as a new trigger's first.
        self.uri = deploy.upload_config(
            boto3.client("s3"), pipeline.work_uri, config
        )  # the same upload the trigger makes
        self._run_by_hand()
        assert run_local_trigger(config, state_dir) == 0
        if feed == "hive":  # the poller's first poll replays the log the metastore keeps
            state = FeedState(boto3.client("dynamodb"), pipeline.state_table)
            while state.position(self.uri) is None:
                time.sleep(0.2)
            self._settle()  # its runs (of the tables' creation) find the replica in step

    def _settle(self) -> None:
        """Wait for the change windows' executions to end: none is counted as a measure's."""
        windows = self.pipeline.outputs["CatalogChangesStateMachineArn"]
        while self.sfn.list_executions(stateMachineArn=windows, statusFilter="RUNNING")[
            "executions"
        ]:
            time.sleep(0.2)

    def _catalog_events(self, window: str) -> dict[str, str]:
        """The trigger: a Hive source is polled every second; a Glue source is not polled."""
        if self.feed == "hive":
            return {"window": window, "poll-interval": "PT1S"}
        return {"window": window}

    def _config(self, catalog_section: dict[str, Any], window: str) -> dict[str, Any]:
        return {
            "source-catalog": catalog_section,
            "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
            "triggers": {"catalog-events": self._catalog_events(window)},
            "table-replications": [
                {
                    "source-table": {"database-name": self.database, "table-name": name},
                    "replica-table": {
                        "database-name": f"{self.database}_dr",
                        "table-location": f"s3://{REPLICA_BUCKET}/{self.feed}/{name}",
                    },
                }
                for name in ("orders", "customers")
            ],
        }

    def _run_by_hand(self) -> None:
        execution = self.sfn.start_execution(
            stateMachineArn=self.pipeline.state_machine_arn,
            input=f'{{"configUri": "{self.uri}"}}',
        )["executionArn"]
        while (found := self.sfn.describe_execution(executionArn=execution))["status"] == (
            "RUNNING"
        ):
            time.sleep(0.2)
        if found["status"] != "SUCCEEDED":
            raise RuntimeError(f"the first full run {found['status']}: {found.get('cause')}")

    def measure(self, runs: int, burst: int) -> dict[str, Any]:
        single = []
        for run in range(1, runs + 1):
            day = (TODAY + timedelta(days=run)).isoformat()
            lag, count = self._timed(lambda day=day: self._add(day), self._has(day))
            single.append(lag)
            print(f"  one partition {run}: visible after {lag:.2f} s ({count} run)", flush=True)
        days = [(TODAY + timedelta(days=100 + i)).isoformat() for i in range(burst * 10)]
        self._write(*days)  # the files first: the burst is the catalog's calls
        burst_lag, burst_runs = self._timed(
            lambda: [self._register(*days[i : i + 10]) for i in range(0, len(days), 10)],
            self._has(days[-1], len(days)),
        )
        print(f"  burst of {len(days)} partitions in {burst} calls ({self.changed:.1f} s of "
              f"calls): visible after {burst_lag:.2f} s, {burst_runs} replication run(s)",
              flush=True)  # fmt: skip
        rewrite_lag, rewrite_runs = self._timed(self._rewrite, self._rewritten)
        print(f"  table rewritten: visible after {rewrite_lag:.2f} s ({rewrite_runs} run)")
        return {"single": single, "burst": (burst_lag, burst_runs, len(days), burst,
                                             self.changed),
                "rewrite": (rewrite_lag, rewrite_runs)}  # fmt: skip

    def _timed(self, change: Callable[[], Any], visible: Callable[[], bool]) -> tuple[float, int]:
        before = self._executions()
        started = time.time()
        change()
        self.changed = time.time() - started
        while not visible():
            if time.time() - started > 600:
                raise RuntimeError(f"{self.feed}: not visible in the replica after 600 s")
            time.sleep(0.05)
        lag = time.time() - started
        # Runs still starting (a follow-up) are counted too: wait out one more window.
        time.sleep(self.window_seconds + 1)
        return lag, len(self._executions() - before)

    def _add(self, *days: str) -> None:
        self._write(*days)
        self._register(*days)

    def _write(self, *days: str) -> None:
        """A writer's files of each day, before it registers the partitions."""
        for day in days:
            write_parquet(self._folder(day), "part-00000.parquet", order_rows(day))

    def _register(self, *days: str) -> None:
        """One catalog call that adds the partitions of ``days``."""
        partitions = [
            Partition((day,), StorageDescriptor(location=self._folder(day), columns=ORDER_COLUMNS,
                                                **PARQUET))
            for day in days
        ]  # fmt: skip
        self.source.add_partitions(self.sample.orders, partitions)

    def _folder(self, day: str) -> str:
        return fs.join(self.sample.orders.location, f"dt={day}")

    def _has(self, day: str, count: int = 1) -> Callable[[], bool]:
        def visible() -> bool:
            try:
                self.glue.get_partition(
                    DatabaseName=f"{self.database}_dr", TableName="orders", PartitionValues=[day]
                )
            except self.glue.exceptions.EntityNotFoundException:
                return False
            return True

        return visible

    def _rewrite(self) -> None:
        customers = self.sample.customers
        self.rewritten = fs.join(customers.location, "rewritten-1")
        write_parquet(self.rewritten, "part-00000.parquet", customer_rows())
        table = self.source.get_table(self.database, "customers")
        self.source.alter_table(replace(table, storage=table.storage.with_location(self.rewritten)))

    def _rewritten(self) -> bool:
        table = self.glue.get_table(DatabaseName=f"{self.database}_dr", Name="customers")["Table"]
        return table.get("Parameters", {}).get(SOURCE_LOCATION) == self.rewritten

    def _executions(self) -> set[str]:
        arns: set[str] = set()
        token = None
        while True:
            page = self.sfn.list_executions(
                stateMachineArn=self.pipeline.state_machine_arn,
                **({"nextToken": token} if token else {}),
            )
            arns |= {e["executionArn"] for e in page["executions"]}
            token = page.get("nextToken")
            if not token:
                return arns


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _print_results(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"\nsource change → replica visible (window {args.window}; lag = window + one run)")
    print("| feed | one partition p50 | p95 | burst (partitions/calls) | runs | rewrite | runs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for feed, result in results.items():
        single = result["single"]
        lag, runs, partitions, calls, _ = result["burst"]
        rewrite, rewrite_runs = result["rewrite"]
        print(f"| {feed} | {statistics.median(single):.2f} s | {_percentile(single, 0.95):.2f} s "
              f"| {lag:.2f} s ({partitions}/{calls}) | {runs} | {rewrite:.2f} s "
              f"| {rewrite_runs} |")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
