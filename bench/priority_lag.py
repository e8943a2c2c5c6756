"""A critical table's change → replica lag, on an idle pipeline and behind a bulk backlog.

The local pipeline (Glue catalogs on S3 in the emulator: the S3 server-side copier, no
Spark) with a copy budget of two slots, one kept for critical tables. First, on an idle
system, a writer adds a partition to a critical table and starts its replication (as a
trigger would); the lag is from then until the partition is visible in the replica Glue
catalog (polled every 20 ms). Then the same with a backlog: a run of bulk tables whose
first copy is held (a ``hang`` fail point: a long bulk copy that costs no CPU here) fills
the bulk slot and the other bulk tables wait in line; the critical change is made while
they wait, and the backlog is checked to be still waiting when it is visible. Both are
the median of ``--runs``, measured in the same run, each phase after one run that is not
measured (the first loads the handlers; the first behind a backlog starts a second copy
function environment beside the held one); the target is a ratio of at most 2.

    .venv/bin/python bench/priority_lag.py [--runs 5] [--bulk-tables 4]
"""

from __future__ import annotations

import argparse
import json
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
from ferry.copying.budget.dynamodb import DynamoDbSlots  # noqa: E402
from ferry.core.faults import FaultFile  # noqa: E402
from ferry.core.model import Partition, StorageDescriptor  # noqa: E402
from ferry.local import deploy, emulator, processes  # noqa: E402
from ferry.local.emulator_server import FAULTS_FILE  # noqa: E402
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
SOURCE_BUCKET, REPLICA_BUCKET = "landing-priority", "dr-priority"
COPY_SLOT_FUNCTION = "ferry-local-copy-slot"
# Glue databases the local environment's roles may read and write (sales*).
CRITICAL, BULK, REPLICA_DATABASE = "sales_critical", "sales_bulk", "sales_dr_priority"
#: How long the first bulk copy of a backlog holds its slot (longer than any measurement).
HELD_SECONDS = 30


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="changes measured in each phase")
    parser.add_argument("--bulk-tables", type=int, default=4, help="bulk tables in the backlog")
    parser.add_argument("--limit", type=float, default=2.0, help="the target ratio")
    args = parser.parse_args(argv)

    state_dir = Path(tempfile.mkdtemp(prefix="ferry-priority-"))
    port = processes.free_port()
    emulator.start_emulator(state_dir, port)
    endpoint = emulator.endpoint_url(port)
    os.environ.update({**emulator.EMULATOR_ENVIRONMENT, "AWS_ENDPOINT_URL": endpoint})
    fs.configure(fs.S3Settings.from_environment(os.environ))
    try:
        unused = {"SOURCE_METASTORE_URIS": "thrift://unused:9083",
                  "REPLICA_METASTORE_URIS": "thrift://unused:9084"}  # fmt: skip
        pipeline = deploy.deploy(endpoint, state_dir, unused)
        session = boto3.session.Session(region_name="us-east-1")
        s3, glue, sfn = (session.client(name) for name in ("s3", "glue", "stepfunctions"))
        set_budget(session.client("lambda"), slots=2, critical_reserved=1)
        slots = DynamoDbSlots(session.client("dynamodb"), pipeline.state_table)
        faults = FaultFile(state_dir / "aws" / FAULTS_FILE)
        for bucket in (SOURCE_BUCKET, REPLICA_BUCKET):
            s3.create_bucket(Bucket=bucket)
        source = GlueCatalog("landing", glue)
        today = date(2026, 11, 21)
        days = last_days(today, 3)
        critical = create_sample_tables(source, CRITICAL, f"s3://{SOURCE_BUCKET}/c", days)
        bulk = create_sample_tables(source, BULK, f"s3://{SOURCE_BUCKET}/b", days)
        critical_uri = upload(s3, pipeline, state_dir, "critical.yml", critical_config())
        bulk_uri = upload(s3, pipeline, state_dir, "bulk.yml", bulk_config(args.bulk_tables))

        print("first run: the critical table whole (loads the Lambda handlers)", flush=True)
        replicate(sfn, glue, pipeline, critical_uri, days[-1])
        change = iter(range(1, 1000))

        idle = []
        for run in range(1, args.runs + 1):
            day = add_day(source, critical.orders, today, next(change))
            idle.append(replicate(sfn, glue, pipeline, critical_uri, day))
            print(f"idle {run}: visible {idle[-1]:.2f} s after the change", flush=True)

        loaded = []
        # The first backlog round is not measured: while a copy batch function hangs, the
        # critical table's batch starts a second execution environment of it (its cold
        # start), as the first run of the idle phase loads the handlers.
        for run in range(0, args.runs + 1):
            faults.write([{"point": "copy.batch", "action": "hang",
                           "seconds": HELD_SECONDS, "times": 1}])  # fmt: skip
            # The bulk tables changed too: each has a copy to make.
            add_day(source, bulk.orders, today, run + 1)
            backlog = start(sfn, pipeline, bulk_uri, "bulk")
            wait_for(lambda: len(slots.holders()) == 1 and len(slots.waiting()) >= 1)
            day = add_day(source, critical.orders, today, next(change))
            waiting = len(slots.waiting())
            lag = replicate(sfn, glue, pipeline, critical_uri, day)
            still = len(slots.waiting())
            if run:
                loaded.append(lag)
            print(
                f"behind a backlog {run or '(warm-up)'}: visible {lag:.2f} s after the change "
                f"({waiting} bulk tables waiting for a slot before, {still} after)",
                flush=True,
            )
            if not still:
                raise RuntimeError("the backlog drained before the critical table was visible")
            faults.clear()
            finish(sfn, backlog)

        idle_lag, loaded_lag = statistics.median(idle), statistics.median(loaded)
        ratio = loaded_lag / idle_lag
        print(
            f"\ncritical change → replica, median of {args.runs}: idle {idle_lag:.2f} s, "
            f"behind {args.bulk_tables} bulk tables filling the budget {loaded_lag:.2f} s: "
            f"{ratio:.2f}× (target ≤ {args.limit:.0f}×: "
            f"{'met' if ratio <= args.limit else 'NOT met'})"
        )
    finally:
        processes.stop_process(state_dir, "aws")
        if not os.environ.get("FERRY_KEEP"):
            shutil.rmtree(state_dir, ignore_errors=True)
    return 0


def set_budget(lambda_client: Any, slots: int, critical_reserved: int) -> None:
    """The Claim copy slot function's budget, as a deploy of these settings sets it."""
    deployed = lambda_client.get_function_configuration(FunctionName=COPY_SLOT_FUNCTION)
    variables = deployed["Environment"]["Variables"]
    variables.update(
        {"FERRY_COPY_SLOTS": str(slots), "FERRY_CRITICAL_RESERVED_SLOTS": str(critical_reserved)}
    )
    lambda_client.update_function_configuration(
        FunctionName=COPY_SLOT_FUNCTION, Environment={"Variables": variables}
    )


def table(database: str, replica_table: str, priority: str) -> dict[str, Any]:
    return {
        "source-table": {"database-name": database, "table-name": "orders"},
        "replica-table": {
            "database-name": REPLICA_DATABASE,
            "table-name": replica_table,
            "table-location": f"s3://{REPLICA_BUCKET}/{replica_table}",
        },
        "priority": priority,
    }


def catalogs() -> dict[str, Any]:
    return {
        "source-catalog": {"name": "landing", "glue": {"region": "us-east-1"}},
        "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
    }


def critical_config() -> dict[str, Any]:
    return {**catalogs(), "table-replications": [table(CRITICAL, "critical_orders", "critical")]}


def bulk_config(tables: int) -> dict[str, Any]:
    replications = [table(BULK, f"bulk_orders_{n}", "bulk") for n in range(1, tables + 1)]
    return {**catalogs(), "table-replications": replications}


def upload(s3, pipeline, state_dir: Path, name: str, document: dict[str, Any]) -> str:
    path = state_dir / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return deploy.upload_config(s3, pipeline.work_uri, path)


def add_day(catalog: GlueCatalog, orders, today: date, offset: int) -> str:
    """The change: a new partition of 3 files, registered in the source catalog."""
    day = (today + timedelta(days=offset)).isoformat()
    location = fs.join(orders.location, f"dt={day}")
    for index in range(3):
        write_parquet(location, f"part-{index:05d}.parquet", order_rows(day))
    storage = StorageDescriptor(location=location, columns=ORDER_COLUMNS, **PARQUET)
    catalog.add_partitions(orders, [Partition((day,), storage)])
    return day


def start(sfn, pipeline, config_uri: str, prefix: str) -> str:
    return sfn.start_execution(
        stateMachineArn=pipeline.state_machine_arn,
        name=deploy.execution_name(prefix),
        input=json.dumps({"configUri": config_uri}),
    )["executionArn"]


def replicate(sfn, glue, pipeline, config_uri: str, day: str) -> float:
    """Start the critical table's run; seconds until ``day`` is in its replica."""
    started = time.time()
    arn = start(sfn, pipeline, config_uri, "critical")
    while not visible(glue, day):
        ended = sfn.describe_execution(executionArn=arn)
        if ended["status"] != "RUNNING" and not visible(glue, day):
            raise RuntimeError(f"{arn} {ended['status']}: {ended.get('cause')}")
        if time.time() - started > 300:
            raise RuntimeError(f"dt={day} not visible in the replica after 300 s")
        time.sleep(0.02)
    seconds = time.time() - started
    finish(sfn, arn)
    return seconds


def visible(glue, day: str) -> bool:
    try:
        glue.get_partition(
            DatabaseName=REPLICA_DATABASE, TableName="critical_orders", PartitionValues=[day]
        )
    except glue.exceptions.EntityNotFoundException:
        return False
    return True


def finish(sfn, arn: str) -> None:
    while (execution := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
        time.sleep(0.1)
    if execution["status"] != "SUCCEEDED":
        raise RuntimeError(f"{arn} {execution['status']}: {execution.get('cause')}")


def wait_for(condition, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the backlog did not form within {seconds} s")
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
