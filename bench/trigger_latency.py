"""Trigger to replica visible: a small change through the local state machine, state by state.

The event-triggered DR path, as ``ferry local trigger`` installs it: a config declares an S3
trigger on the source bucket; a writer adds a partition (a few Parquet files and the
partition in the source catalog), then puts ``_SUCCESS``; the S3 event starts the state
machine (EventBridge rule), which plans, copies and commits. Measured from just before the
``_SUCCESS`` PUT until the new partition is visible in the replica catalog (polled every
20 ms), then each state's time from the execution's history. Source and replica are Glue
catalogs on S3 in the emulator, so the copy is the S3 server-side copier: no Spark starts.

The first run replicates the whole sample table (and loads the Lambda handlers); the runs
measured after it each add one day.

    .venv/bin/python bench/trigger_latency.py [--runs 3] [--files 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import boto3
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ferry.catalog.glue import GlueCatalog  # noqa: E402
from ferry.commands.local import run_local_trigger  # noqa: E402
from ferry.core.model import Partition, StorageDescriptor  # noqa: E402
from ferry.local import deploy, emulator, processes  # noqa: E402
from ferry.local.samples import (  # noqa: E402
    ORDER_COLUMNS,
    PARQUET,
    create_sample_tables,
    last_days,
    order_rows,
    write_parquet,
)
from ferry.storage import fs  # noqa: E402

# Buckets the local environment's roles may read and write (ferry/local/environment.yml).
SOURCE_BUCKET, REPLICA_BUCKET = "landing-bench", "dr-bench"
DATABASE = "sales"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="small changes measured")
    parser.add_argument("--files", type=int, default=3, help="files in each new partition")
    parser.add_argument("--limit", type=float, default=10.0, help="the target, in seconds")
    args = parser.parse_args(argv)

    state_dir = Path(tempfile.mkdtemp(prefix="ferry-trigger-"))
    port = processes.free_port()
    emulator.start_emulator(state_dir, port)
    endpoint = emulator.endpoint_url(port)
    os.environ.update({**emulator.EMULATOR_ENVIRONMENT, "AWS_ENDPOINT_URL": endpoint})
    fs.configure(fs.S3Settings.from_environment(os.environ))
    try:
        # No metastore here: the secret's values (which a run refuses to start without) name
        # none that is used.
        unused = {"SOURCE_METASTORE_URIS": "thrift://unused:9083",
                  "REPLICA_METASTORE_URIS": "thrift://unused:9084"}  # fmt: skip
        pipeline = deploy.deploy(endpoint, state_dir, unused)
        session = boto3.session.Session(region_name="us-east-1")
        s3, glue, sfn = (session.client(name) for name in ("s3", "glue", "stepfunctions"))
        for bucket in (SOURCE_BUCKET, REPLICA_BUCKET):
            s3.create_bucket(Bucket=bucket)
        source = GlueCatalog("landing", glue)
        today = date(2026, 11, 21)
        sample = create_sample_tables(
            source, DATABASE, f"s3://{SOURCE_BUCKET}/warehouse", last_days(today, 3)
        )
        config = state_dir / "replication.yml"
        config.write_text(yaml.safe_dump(_config(), sort_keys=False))
        assert run_local_trigger(config, state_dir) == 0
        marker = f"warehouse/{DATABASE}.db/orders/_SUCCESS"

        print("first run: the whole sample table (loads the Lambda handlers)", flush=True)
        _trigger_and_wait(s3, glue, sfn, pipeline, marker, last_days(today, 3)[-1])
        runs = []
        for run in range(1, args.runs + 1):
            day = (today + timedelta(days=run)).isoformat()
            _add_partition(source, sample.orders, day, args.files)
            runs.append(_trigger_and_wait(s3, glue, sfn, pipeline, marker, day))
            _print_run(run, day, args.files, runs[-1])
        seconds = [run["visible"] for run in runs]
        print(
            f"\ntrigger → replica visible, {args.runs} runs of one new partition of "
            f"{args.files} files: median {statistics.median(seconds):.2f} s, "
            f"max {max(seconds):.2f} s (target ≤ {args.limit:.0f} s: "
            f"{'met' if max(seconds) <= args.limit else 'NOT met'})"
        )
    finally:
        processes.stop_process(state_dir, "aws")
        if not os.environ.get("FERRY_KEEP"):
            shutil.rmtree(state_dir, ignore_errors=True)
    return 0


def _config() -> dict[str, Any]:
    return {
        "source-catalog": {"name": "landing", "glue": {"region": "us-east-1"}},
        "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
        "triggers": {"s3": [{"bucket": SOURCE_BUCKET, "prefix": "warehouse/"}]},
        "table-replications": [
            {
                "source-table": {"database-name": DATABASE, "table-name": "orders"},
                "replica-table": {
                    "database-name": f"{DATABASE}_dr",
                    "table-location": f"s3://{REPLICA_BUCKET}/orders",
                },
            }
        ],
    }


def _add_partition(catalog: GlueCatalog, orders, day: str, files: int) -> None:
    """What a writer does: the files, then the partition in the catalog (then _SUCCESS)."""
    location = fs.join(orders.location, f"dt={day}")
    for index in range(files):
        write_parquet(location, f"part-{index:05d}.parquet", order_rows(day))
    storage = StorageDescriptor(location=location, columns=ORDER_COLUMNS, **PARQUET)
    catalog.add_partitions(orders, [Partition((day,), storage)])


def _trigger_and_wait(s3, glue, sfn, pipeline, marker: str, day: str) -> dict[str, Any]:
    """Put the marker; time until ``day`` is in the replica; then the execution's states."""
    before = _executions(sfn, pipeline)
    started = time.time()
    s3.put_object(Bucket=SOURCE_BUCKET, Key=marker, Body=b"")
    while not _visible(glue, day):
        if time.time() - started > 300:
            executions = [a for a in _executions(sfn, pipeline) if a not in before]
            states = [sfn.describe_execution(executionArn=a)["status"] for a in executions]
            raise RuntimeError(
                f"dt={day} not visible in the replica after 300 s (executions: {states})"
            )
        time.sleep(0.02)
    visible = time.time() - started
    [arn] = [arn for arn in _executions(sfn, pipeline) if arn not in before]
    while (execution := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
        time.sleep(0.1)
    if execution["status"] != "SUCCEEDED":
        raise RuntimeError(f"{arn} {execution['status']}: {execution.get('cause')}")
    return {
        "visible": visible,
        "start": execution["startDate"].timestamp() - started,
        "end": execution["stopDate"].timestamp() - started,
        "states": _state_times(sfn, arn, started),
    }


def _visible(glue, day: str) -> bool:
    try:
        glue.get_partition(DatabaseName=f"{DATABASE}_dr", TableName="orders", PartitionValues=[day])
    except glue.exceptions.EntityNotFoundException:
        return False
    return True


def _executions(sfn, pipeline) -> set[str]:
    listed = sfn.list_executions(stateMachineArn=pipeline.state_machine_arn)["executions"]
    return {execution["executionArn"] for execution in listed}


def _state_times(sfn, arn: str, trigger: float) -> list[tuple[str, float, float]]:
    """(state, seconds after the trigger, seconds in it), in the order entered.

    A state entered several times (a Map's iterations) spans its first entry to last exit.
    """
    events, token = [], None
    while True:
        page = sfn.get_execution_history(
            executionArn=arn, maxResults=1000, **({"nextToken": token} if token else {})
        )
        events += page["events"]
        token = page.get("nextToken")
        if not token:
            break
    spans: dict[str, list[float]] = {}
    for event in events:
        details = event.get("stateEnteredEventDetails") or event.get("stateExitedEventDetails")
        if not details:
            continue
        moment = event["timestamp"].timestamp() - trigger
        span = spans.setdefault(details["name"], [moment, moment])
        span[0], span[1] = min(span[0], moment), max(span[1], moment)
    return [(name, first, last - first) for name, (first, last) in spans.items()]


def _print_run(run: int, day: str, files: int, result: dict[str, Any]) -> None:
    print(
        f"run {run}: dt={day} ({files} files) visible {result['visible']:.2f} s after _SUCCESS "
        f"(execution started at +{result['start']:.2f} s, ended at +{result['end']:.2f} s)"
    )
    print("    entered   took   state (times after the _SUCCESS PUT)")
    for name, first, seconds in result["states"]:
        print(f"    +{first:5.2f} s {seconds:5.2f} s  {name}")


if __name__ == "__main__":
    sys.exit(main())
