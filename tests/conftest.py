"""Session fixtures: one pair of real Hive metastores and one AWS emulator per test run.

They are started by the same launcher as ``ferry local up``, on free ports, with their
state in a temporary folder. Tests isolate themselves by unique database names.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from datetime import UTC, date, datetime
from pathlib import Path

import boto3
import pytest
import yaml

from ferry.catalog.glue import GlueCatalog
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.local import deploy, emulator, metastore, processes
from ferry.local.samples import create_sample_tables, last_days
from ferry.storage import fs
from ferry.storage.file_systems import FileSystems, S3Settings

# The tests' clock: every date helper and event id is computed from it.
NOW = datetime(2026, 11, 21, 8, 30, tzinfo=UTC)


class LocalRuntime:
    def __init__(self, state_dir: Path, source_port: int, replica_port: int, aws_port: int):
        self.state_dir = state_dir
        self.source_uri = f"thrift://127.0.0.1:{source_port}"
        self.replica_uri = f"thrift://127.0.0.1:{replica_port}"
        self.endpoint = emulator.endpoint_url(aws_port)
        self.warehouse = (state_dir / "source-data").as_uri()

    def environment(self) -> dict[str, str]:
        return {**emulator.EMULATOR_ENVIRONMENT, "AWS_ENDPOINT_URL": self.endpoint}


@pytest.fixture(scope="session")
def local_runtime(tmp_path_factory: pytest.TempPathFactory):
    state_dir = tmp_path_factory.mktemp("ferry-local")
    ports = {name: processes.free_port() for name in ("source", "replica", "aws")}
    names = []
    try:
        emulator.start_emulator(state_dir, ports["aws"])
        names.append("aws")
        for name in ("source", "replica"):
            metastore.start_metastore(state_dir, name, ports[name])
            names.append(name)
        runtime = LocalRuntime(state_dir, ports["source"], ports["replica"], ports["aws"])
        saved = {key: os.environ.get(key) for key in runtime.environment()}
        os.environ.update(runtime.environment())
        file_systems = fs.set_default(
            FileSystems(S3Settings.from_environment(runtime.environment()))
        )
        yield runtime
        fs.set_default(file_systems)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    finally:
        for name in names:
            processes.stop_process(state_dir, name)


@pytest.fixture(scope="module")
def spark():
    """A local SparkSession (two cores) whose Python workers run this interpreter."""
    from pyspark.sql import SparkSession

    saved = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers need this venv's interpreter
    # The workers keep the environment the session started with, whichever test starts it
    # first: give them the emulator's credentials from the start.
    for key, value in emulator.EMULATOR_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("ferry-copy-files-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    if saved is None:
        os.environ.pop("PYSPARK_PYTHON", None)
    else:
        os.environ["PYSPARK_PYTHON"] = saved


@pytest.fixture
def source_catalog(local_runtime):
    with HiveMetastoreCatalog("onprem", [local_runtime.source_uri]) as catalog:
        yield catalog


@pytest.fixture
def replica_catalog(local_runtime):
    with HiveMetastoreCatalog("dr", [local_runtime.replica_uri]) as catalog:
        yield catalog


@pytest.fixture
def aws(local_runtime):
    session = boto3.session.Session(region_name="us-east-1")
    return {service: session.client(service) for service in ("s3", "glue", "sns", "sqs")}


@pytest.fixture
def glue_catalog(aws):
    return GlueCatalog("aws", aws["glue"])


@pytest.fixture
def unique():
    """A short unique suffix for database, bucket and topic names."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def sample(local_runtime, source_catalog, unique):
    """Sample source tables in a fresh database: orders (3 days), customers, big_orders."""
    return create_sample_tables(
        source_catalog, f"sales_{unique}", local_runtime.warehouse, last_days(NOW.date(), 3)
    )


@pytest.fixture
def bucket(aws, unique):
    name = f"dr-{unique}"
    aws["s3"].create_bucket(Bucket=name)
    return name


@pytest.fixture
def write_config(tmp_path):
    """Write a config mapping as YAML; returns its path."""

    def write(document: dict, name: str = "replication.yml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return path

    return write


@pytest.fixture
def consumer(aws, unique):
    """An SNS topic with an SQS queue subscribed to it, as a consumer would have."""
    topic = aws["sns"].create_topic(Name=f"ferry-{unique}")["TopicArn"]
    queue = aws["sqs"].create_queue(QueueName=f"consumer-{unique}")["QueueUrl"]
    queue_arn = aws["sqs"].get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    aws["sns"].subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)

    def messages() -> list[dict]:
        received = []
        while True:
            batch = (
                aws["sqs"]
                .receive_message(QueueUrl=queue, MaxNumberOfMessages=10)
                .get("Messages", [])
            )
            if not batch:
                return received
            for message in batch:
                envelope = json.loads(message["Body"])
                received.append(
                    {
                        "body": json.loads(envelope["Message"]),
                        "attributes": envelope.get("MessageAttributes", {}),
                    }
                )
                aws["sqs"].delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])

    return topic, messages


@pytest.fixture
def s3_properties(local_runtime):
    """pyiceberg's FileIO properties for the local runtime's S3 (the Iceberg tests)."""
    environment = local_runtime.environment()
    return {
        "s3.endpoint": local_runtime.endpoint,
        "s3.access-key-id": environment["AWS_ACCESS_KEY_ID"],
        "s3.secret-access-key": environment["AWS_SECRET_ACCESS_KEY"],
        "s3.region": environment["AWS_DEFAULT_REGION"],
    }


@pytest.fixture(scope="session")
def pipeline(local_runtime):
    """The replication pipeline, deployed into the session's emulator as `ferry local up` does."""
    return deploy.deploy(
        local_runtime.endpoint,
        local_runtime.state_dir,
        {
            "SOURCE_METASTORE_URIS": local_runtime.source_uri,
            "REPLICA_METASTORE_URIS": local_runtime.replica_uri,
        },
    )


def fixed_clock() -> datetime:
    return NOW


def today() -> date:
    return NOW.date()
