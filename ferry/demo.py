"""``ferry demo``: replicate sample tables on the local runtime, and show that it worked.

It starts the local runtime, creates a source database with a partitioned Parquet table, an
unpartitioned one and a view, replicates them to the replica Hive metastore (file://) and to
Glue + S3 on the emulator through ``ferry replicate``, then reads both replicas back.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import yaml

from ferry import fs
from ferry.aws import AwsClients
from ferry.catalog import Catalog
from ferry.catalog.glue import GlueCatalog
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.cli import EXIT_OK, run_replicate
from ferry.local import runtime
from ferry.local.samples import create_sample_tables, last_days
from ferry.reader import read_rows

DATABASE = "sales"
REPLICA_DATABASE = "sales_dr"
BUCKET = "ferry-demo-dr"
TOPIC = "ferry-demo"
QUEUE = "ferry-demo-consumer"


def run(home: Path, ports: dict[str, int]) -> int:
    _heading("1. Local runtime: two Hive metastores and the AWS emulator")
    services = runtime.up(home, ports)
    for service in services:
        print(f"  {service.name:<8} {service.url}")
    settings = runtime.environment(services)
    os.environ.update(settings)
    source_uri = settings["FERRY_SOURCE_METASTORE_URIS"]
    replica_uri = settings["FERRY_REPLICA_METASTORE_URIS"]
    aws = AwsClients()

    _heading("2. Source tables")
    with HiveMetastoreCatalog("onprem", [source_uri]) as source:
        if source.get_table(DATABASE, "orders") is None:
            days = last_days(datetime.now(UTC).date(), 3)
            create_sample_tables(
                source, DATABASE, fs.local_uri(home / "source" / "warehouse"), days
            )
            print(
                f"  created {DATABASE}.orders (partitions {', '.join(days)}), "
                f"{DATABASE}.customers and the view {DATABASE}.big_orders"
            )
        else:
            print(
                f"  {DATABASE} exists from an earlier run; replicating it again makes new snapshots"
            )

    topic = _consumer(aws)
    if not _bucket_exists(aws):
        aws.client("s3").create_bucket(Bucket=BUCKET)
    configs = _write_configs(home, source_uri, replica_uri, topic)

    _heading("3. Replicate to the replica Hive metastore (file://)")
    print(f"  $ ferry replicate {configs['hive']}")
    hive_status = run_replicate(configs["hive"])

    _heading("4. Replicate to Glue + S3 on the emulator, notifying over SNS")
    print(f"  $ ferry replicate {configs['glue']}")
    glue_status = run_replicate(configs["glue"])

    _heading("5. Read the replicas back through their catalogs")
    same = True
    with (
        HiveMetastoreCatalog("onprem", [source_uri]) as source,
        HiveMetastoreCatalog("dr", [replica_uri]) as hive_replica,
    ):
        glue_replica = GlueCatalog("aws", aws.client("glue"))
        for replica in (hive_replica, glue_replica):
            same &= _compare(source, replica)
        view = hive_replica.get_table(REPLICA_DATABASE, "big_orders")
        print(
            f"  view {REPLICA_DATABASE}.big_orders on the replica reads: {view.view_expanded_text}"
        )

    _heading("6. What a consumer of the SNS topic received")
    for message in _drain(aws):
        partitions = len(message.get("modifiedPartitions", []))
        print(
            f"  {message['type']:<8} {message['replicaTable']:<22} {message['eventId']}"
            + (
                f"  {partitions} partitions, {message['bytesReplicated']} bytes"
                if message["type"] != "START"
                else ""
            )
        )

    ok = hive_status == glue_status == EXIT_OK and same
    _heading("Done" if ok else "Something went wrong (see above)")
    print(f"  configs: {configs['hive']}, {configs['glue']}")
    print(f"  try:     .venv/bin/ferry replicate {configs['hive']} --dry-run")
    print(f"  stop:    .venv/bin/ferry local down --home {home}")
    return EXIT_OK if ok else 1


def _compare(source: Catalog, replica: Catalog) -> bool:
    same = True
    for name in ("orders", "customers"):
        table = replica.get_table(REPLICA_DATABASE, name)
        source_rows = read_rows(source, source.get_table(DATABASE, name))  # type: ignore[arg-type]
        replica_rows = read_rows(replica, table)  # type: ignore[arg-type]
        equal = source_rows.equals(replica_rows)
        same &= equal
        verdict = "same rows as the source" if equal else "DIFFERENT from the source"
        print(
            f"  {replica.name:>4}  {REPLICA_DATABASE}.{name:<10} "
            f"{replica_rows.num_rows:>3} rows, {verdict}"
        )
        print(f"        at {table.location}")  # type: ignore[union-attr]
    return same


def _write_configs(home: Path, source_uri: str, replica_uri: str, topic: str) -> dict[str, Path]:
    folder = home / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    replica_data = fs.local_uri(home / "replica" / "data")

    def replications(root: str) -> list[dict]:
        return [
            {
                "source-table": {
                    "database-name": DATABASE,
                    "table-name": "orders",
                    "partition-filter": "dt >= '{{ days_ago(2) }}'",
                },
                "replica-table": {
                    "database-name": REPLICA_DATABASE,
                    "table-location": f"{root}/orders",
                },
                "transform-options": {"table-properties": {"replicated-for": "ferry-demo"}},
            },
            {
                "source-table": {"database-name": DATABASE, "table-name": "customers"},
                "replica-table": {
                    "database-name": REPLICA_DATABASE,
                    "table-location": f"{root}/customers",
                },
            },
            {
                "source-table": {"database-name": DATABASE, "table-name": "big_orders"},
                "replica-table": {"database-name": REPLICA_DATABASE},
                "replication-mode": "METADATA_MIRROR",
                "table-mappings": {f"{DATABASE}.orders": f"{REPLICA_DATABASE}.orders"},
            },
        ]

    source = {"name": "onprem", "hive-metastore-uris": source_uri}
    documents = {
        "hive": {
            "source-catalog": source,
            "replica-catalog": {"name": "dr", "hive-metastore-uris": replica_uri},
            "table-replications": replications(replica_data),
        },
        "glue": {
            "source-catalog": source,
            "replica-catalog": {"name": "aws", "glue": {"region": "us-east-1"}},
            "sns-event-listener": {"topic": topic},
            "table-replications": replications(f"s3://{BUCKET}/warehouse"),
        },
    }
    paths = {}
    for name, document in documents.items():
        paths[name] = folder / f"hive-to-{name}.yml"
        paths[name].write_text(yaml.safe_dump(document, sort_keys=False))
    return paths


def _bucket_exists(aws: AwsClients) -> bool:
    return any(b["Name"] == BUCKET for b in aws.client("s3").list_buckets().get("Buckets", []))


def _consumer(aws: AwsClients) -> str:
    sns, sqs = aws.client("sns"), aws.client("sqs")
    topic = sns.create_topic(Name=TOPIC)["TopicArn"]
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
    print(f"\n== {text}")
