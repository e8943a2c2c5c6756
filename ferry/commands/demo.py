"""``ferry demo``: the replication pipeline on the local runtime, and proof that it worked.

1. starts the local runtime (two Hive metastores, the AWS emulator with the pipeline);
2. creates source tables: ``sales`` in the source Hive metastore (a partitioned Parquet
   table, an unpartitioned one, a view, and an Iceberg table written with pyiceberg) and
   ``landing`` in Glue on S3;
3. replicates ``sales`` through the state machine to the replica Hive metastore (inline
   copy, Spark copy on "EMR Serverless", metadata-only view), and with ``ferry replicate``
   to Glue + S3;
4. switches on the landing bucket's EventBridge notifications, then drops a ``_SUCCESS``
   marker into it: the rule the stack deployed for its landing config (the local
   environment's own, ``ferry/local/replications/landing-dr.yml``) starts a replication to
   another region (S3 server-side copy);
5. runs a replication that fails on purpose and shows the replica unchanged;
6. reads every replica back through its catalog and compares it with its source;
7. shows what a consumer of the SNS topic received;
8. runs ``ferry doctor`` on the local runtime: every check it can make there passes.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.compute as pc
import yaml

from ferry.catalog import Catalog
from ferry.catalog.glue import GlueCatalog
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.commands import EXIT_FAILED, EXIT_OK, run_command
from ferry.commands.doctor import run_doctor
from ferry.commands.execute import run_execute
from ferry.commands.reader import read_rows
from ferry.commands.replicate import run_replicate
from ferry.local import deploy, runtime
from ferry.local.samples import (
    create_iceberg_sample,
    create_sample_tables,
    last_days,
    order_rows,
    write_parquet,
)
from ferry.statemachine.executions import follow
from ferry.storage import fs
from ferry.storage.aws import AwsClients

SALES, SALES_DR = "sales", "sales_dr"
LANDING, LANDING_DR = "landing", "landing_dr"
LANDING_BUCKET, DR_BUCKET, WEST_BUCKET = "ferry-demo-landing", "ferry-demo-dr", "ferry-demo-dr-west"
WEST = "us-west-2"
QUEUE = "ferry-demo-consumer"


def run(home: Path, ports: dict[str, int]) -> int:
    _heading("1. Local runtime: two Hive metastores, the AWS emulator, the pipeline deployed")
    services = runtime.up(home, ports)
    for service in services:
        print(f"  {service.name:<8} {service.url}")
    settings = runtime.environment(services)
    os.environ.update(settings)  # for the AWS clients built below and by each command
    fs.configure(fs.S3Settings.from_environment(settings))
    source_uri = settings["FERRY_SOURCE_METASTORE_URIS"]
    replica_uri = settings["FERRY_REPLICA_METASTORE_URIS"]
    aws = AwsClients()
    pipeline = deploy.Pipeline.load(home)
    assert pipeline is not None
    print(f"  state machine {pipeline.state_machine_arn}")
    east, west = (
        GlueCatalog("east", aws.client("glue")),
        GlueCatalog("west", aws.client("glue", WEST)),
    )

    _heading("2. Source tables")
    days = last_days(datetime.now(UTC).date(), 3)
    _buckets(aws)
    topic = _consumer(aws, pipeline.topic_arn)
    held = _create_sources(home, source_uri, east, days)
    print(
        f"  Hive  {SALES}.orders (partitions {', '.join(held)}), {SALES}.customers, "
        f"view {SALES}.big_orders, Iceberg table {SALES}.events (5 snapshots)"
    )
    print(f"  Glue  {LANDING}.orders on s3://{LANDING_BUCKET}/warehouse (us-east-1)")
    configs = _write_configs(home, source_uri, replica_uri, topic)

    _heading("3a. Through the state machine, to the replica Hive metastore")
    print(f"  $ ferry execute {configs['hive']} --wait")
    full = run_command(lambda: run_execute(configs["hive"], wait=True, home=home))
    with HiveMetastoreCatalog("dr", [replica_uri]) as replica:
        committed = replica.get_table(SALES_DR, "orders")
        location_after_full_run = committed.location if committed else None

    _heading("3b. With `ferry replicate`, to Glue + S3 on the emulator")
    print(f"  $ ferry replicate {configs['glue']}")
    direct = run_replicate(configs["glue"])

    _heading("4. An S3 event starts a replication: a _SUCCESS marker lands in the source bucket")
    _send_bucket_events(aws)
    triggered = _land_a_partition_and_follow(aws, pipeline, east)

    _heading("5. A replication that fails on purpose: its target bucket does not exist")
    print(f"  $ ferry execute {configs['broken']} --wait")
    broken = run_command(lambda: run_execute(configs["broken"], wait=True, home=home))
    with HiveMetastoreCatalog("dr", [replica_uri]) as replica:
        after = replica.get_table(SALES_DR, "orders")
    unchanged = after is not None and after.location == location_after_full_run
    print(f"  {SALES_DR}.orders still points at {after.location if after else None}")
    print(f"  replica {'unchanged' if unchanged else 'CHANGED'} by the failed run")

    _heading("6. Read every replica back through its catalog")
    same = _read_back(source_uri, replica_uri, east, west, days[0])

    _heading("7. What a consumer of the SNS topic received")
    _print_messages(aws)

    _heading("8. Is the deployment complete? What `ferry doctor` checks before a first run")
    print("  $ ferry doctor --environment local")
    doctor = run_command(lambda: run_doctor("local", home=home))

    ok = (
        full == EXIT_OK and direct == EXIT_OK and triggered and broken == EXIT_FAILED
        and unchanged and same and doctor == EXIT_OK
    )  # fmt: skip
    _heading("Done: every step behaved as it should" if ok else "Something went wrong (see above)")
    print(f"  configs: {home / 'demo'}")
    print(f"  try:     .venv/bin/ferry replicate {configs['hive']} --dry-run")
    print(f"  stop:    .venv/bin/ferry local down --home {home}")
    return EXIT_OK if ok else 1


def _send_bucket_events(aws: AwsClients) -> None:
    """The landing bucket sends its events to EventBridge, where the stack's rule matches."""
    # The stack deployed the rule its landing config declares (ferry/local/replications/); the
    # bucket sends its events to EventBridge once someone switches that on, as on AWS.
    print(f"  the stack's rule: objects *_SUCCESS below s3://{LANDING_BUCKET}/warehouse/")
    print(
        f"  $ aws s3api put-bucket-notification-configuration --bucket {LANDING_BUCKET} "
        "--notification-configuration '{\"EventBridgeConfiguration\": {}}'"
    )
    aws.client("s3").put_bucket_notification_configuration(
        Bucket=LANDING_BUCKET, NotificationConfiguration={"EventBridgeConfiguration": {}}
    )


def _create_sources(
    home: Path, source_uri: str, east: Catalog, days: tuple[str, ...]
) -> tuple[str, ...]:
    """The Hive source's tables (an Iceberg one among them) and the Glue source's, unless a
    previous demo made them; the days the Hive source's orders hold (a previous demo's, on
    another day, are not today's last three)."""
    with HiveMetastoreCatalog("onprem", [source_uri]) as source:
        if source.get_table(SALES, "orders") is None:
            create_sample_tables(source, SALES, fs.local_uri(home / "source" / "warehouse"), days)
        if source.get_table(SALES, "events") is None:
            events = fs.local_uri(home / "source" / "warehouse" / f"{SALES}.db" / "events")
            create_iceberg_sample(source_uri, SALES, events)
        orders = source.get_table(SALES, "orders")
        held = tuple(sorted(p.values[0] for p in source.list_partitions(orders)))  # type: ignore[arg-type]
    if east.get_table(LANDING, "orders") is None:
        create_sample_tables(east, LANDING, f"s3://{LANDING_BUCKET}/warehouse", days)
    return held


def _read_back(
    source_uri: str, replica_uri: str, east: Catalog, west: Catalog, first_day: str
) -> bool:
    """Every replica holds what its source holds, read through the catalogs (the Glue
    replica's orders: the days its partition filter selects, from ``first_day``)."""
    same = True
    with (
        HiveMetastoreCatalog("onprem", [source_uri]) as source,
        HiveMetastoreCatalog("dr", [replica_uri]) as hive_replica,
    ):
        tables = ("orders", "customers", "events")
        same &= _compare(source, SALES, hive_replica, SALES_DR, tables)
        same &= _compare(source, SALES, east, SALES_DR, tables, first_day)
        same &= _compare(east, LANDING, west, LANDING_DR, ("orders",))
        view = hive_replica.get_table(SALES_DR, "big_orders")
        print(
            f"  view {SALES_DR}.big_orders on the replica: "
            f"{view.view_expanded_text if view else None}"
        )
    return same


def _print_messages(aws: AwsClients) -> None:
    """One line per message the demo's consumer queue received from the topic."""
    for message in _drain(aws):
        line = f"  {message['type']:<8} {message['replicaTable']:<22} {message['eventId']}"
        if message["type"] == "SUCCESS":
            # Circus Train's protocol: partitions only for partitioned tables, bytes only
            # for tables with data (a view has neither).
            what = []
            if "modifiedPartitions" in message:
                what.append(f"{len(message['modifiedPartitions'])} partitions")
            if "bytesReplicated" in message:
                what.append(f"{message['bytesReplicated']} bytes")
            if "iceberg" in message:
                what.append(f"Iceberg: {len(message['iceberg']['addedSnapshotIds'])} snapshots")
            line += "  " + (", ".join(what) or "metadata only")
        if message["type"] == "FAILURE":
            line += f"  {message['errorMessage'][:70]}…"
        print(line)


def _land_a_partition_and_follow(aws: AwsClients, pipeline: deploy.Pipeline, east: Catalog) -> bool:
    sfn = aws.client("stepfunctions")

    def executions() -> set[str]:
        listed = sfn.list_executions(stateMachineArn=pipeline.state_machine_arn)["executions"]
        return {e["executionArn"] for e in listed}

    before = executions()
    day = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%d")  # tomorrow's data lands
    location = f"s3://{LANDING_BUCKET}/warehouse/{LANDING}.db/orders/dt={day}"
    write_parquet(location, "part-00000.parquet", order_rows(day))
    table = east.get_table(LANDING, "orders")
    if table is not None and (day,) not in east.list_partition_values(table):
        from ferry.core.model import Partition

        east.add_partitions(table, [Partition((day,), table.storage.with_location(location))])
    marker = f"warehouse/{LANDING}.db/orders/_SUCCESS"
    aws.client("s3").put_object(Bucket=LANDING_BUCKET, Key=marker, Body=b"")
    print(f"  wrote partition dt={day} and s3://{LANDING_BUCKET}/{marker}")
    deadline, started = time.monotonic() + 30, set()
    while not started and time.monotonic() < deadline:
        started = executions() - before
        time.sleep(0.2)
    if not started:
        print("  no execution started")
        return False
    arn = started.pop()
    print(f"  the event started {arn.rsplit(':', 1)[-1]}")
    outcome = follow(
        sfn,
        arn,
        on_state=lambda state: print(f"  → {state}"),
        on_child=lambda states: print(f"    ↳ {' → '.join(states)}"),
    )
    copiers = ", ".join(sorted({r["plan"]["copier"] for r in outcome.results if "plan" in r}))
    print(f"  {outcome.status} in {outcome.seconds:.1f} s, copier: {copiers}")
    return outcome.status == "SUCCEEDED"


def _compare(
    source: Catalog,
    source_db: str,
    replica: Catalog,
    replica_db: str,
    names,
    first_day: str | None = None,
) -> bool:
    same = True
    for name in names:
        source_rows = read_rows(source, source.get_table(source_db, name))  # type: ignore[arg-type]
        if first_day is not None and "dt" in source_rows.column_names:
            source_rows = source_rows.filter(pc.greater_equal(source_rows["dt"], first_day))
        table = replica.get_table(replica_db, name)
        rows = read_rows(replica, table)  # type: ignore[arg-type]
        equal = source_rows.equals(rows)
        same &= equal
        verdict = "same rows as the source" if equal else "DIFFERENT from the source"
        print(f"  {replica.name:>5}  {replica_db}.{name:<10} {rows.num_rows:>3} rows, {verdict}")
        print(f"         at {table.location}")  # type: ignore[union-attr]
    return same


def _write_configs(home: Path, source_uri: str, replica_uri: str, topic: str) -> dict[str, Path]:
    folder = home / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    hive_source = {"name": "onprem", "hive-metastore-uris": source_uri}
    listener = {"sns-event-listener": {"topic": topic}}

    def sales(root: str, spark_customers: bool) -> list[dict]:
        customers: dict = {
            "source-table": {"database-name": SALES, "table-name": "customers"},
            "replica-table": {"database-name": SALES_DR, "table-location": f"{root}/customers"},
        }
        if spark_customers:  # small, but sent to Spark to show that copier too
            customers["copier-options"] = {"inline-threshold-mib": 0}
        return [
            {
                "source-table": {"database-name": SALES, "table-name": "orders",
                                 "partition-filter": "dt >= '{{ days_ago(2) }}'"},
                "replica-table": {"database-name": SALES_DR, "table-location": f"{root}/orders"},
                "transform-options": {"table-properties": {"replicated-for": "ferry-demo"}},
            },
            customers,
            {
                "source-table": {"database-name": SALES, "table-name": "events"},
                "replica-table": {"database-name": SALES_DR, "table-location": f"{root}/events"},
            },
            {
                "source-table": {"database-name": SALES, "table-name": "big_orders"},
                "replica-table": {"database-name": SALES_DR},
                "replication-mode": "METADATA_MIRROR",
                "table-mappings": {f"{SALES}.orders": f"{SALES_DR}.orders"},
            },
        ]  # fmt: skip

    documents = {
        "hive": {
            "source-catalog": hive_source,
            "replica-catalog": {"name": "dr", "hive-metastore-uris": replica_uri},
            **listener,
            "table-replications": sales(fs.local_uri(home / "replica" / "data"), True),
        },
        "glue": {
            "source-catalog": hive_source,
            "replica-catalog": {"name": "aws", "glue": {"region": "us-east-1"}},
            **listener,
            "table-replications": sales(f"s3://{DR_BUCKET}/warehouse", False),
        },
        "broken": {
            "source-catalog": hive_source,
            "replica-catalog": {"name": "dr", "hive-metastore-uris": replica_uri},
            **listener,
            "table-replications": [
                {
                    "source-table": {"database-name": SALES, "table-name": "orders"},
                    "replica-table": {
                        "database-name": SALES_DR,
                        "table-location": "s3://ferry-demo-no-such-bucket/orders",
                    },
                }
            ],
        },  # fmt: skip
    }
    paths = {}
    for name, document in documents.items():
        paths[name] = folder / f"{name}.yml"
        paths[name].write_text(yaml.safe_dump(document, sort_keys=False))
    return paths


def _buckets(aws: AwsClients) -> None:
    existing = {b["Name"] for b in aws.client("s3").list_buckets().get("Buckets", [])}
    for bucket in (LANDING_BUCKET, DR_BUCKET):
        if bucket not in existing:
            aws.client("s3").create_bucket(Bucket=bucket)
    if WEST_BUCKET not in existing:
        aws.client("s3", WEST).create_bucket(
            Bucket=WEST_BUCKET, CreateBucketConfiguration={"LocationConstraint": WEST}
        )


def _consumer(aws: AwsClients, topic: str) -> str:
    sns, sqs = aws.client("sns"), aws.client("sqs")
    queue = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    subscribed = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    if not any(s["Endpoint"] == arn for s in subscribed):
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    _drain(aws)  # start from an empty queue
    return topic


def _drain(aws: AwsClients) -> list[dict]:
    sqs = aws.client("sqs")
    queue = sqs.get_queue_url(QueueName=QUEUE)["QueueUrl"]
    messages = []
    while batch := sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            messages.append(json.loads(json.loads(message["Body"])["Message"]))
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
    return messages


def _heading(text: str) -> None:
    print(f"\n== {text}", flush=True)
