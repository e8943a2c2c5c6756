"""Fixtures of the end-to-end tests: the deployed state machine, and fail points armed in it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from ferry.catalog.glue import GlueCatalog
from ferry.core.faults import FaultFile
from ferry.local import deploy
from ferry.local.emulator_server import FAULTS_FILE
from ferry.local.samples import SampleTables, create_sample_tables, last_days
from ferry.statemachine.executions import ExecutionOutcome, follow, start
from tests.conftest import NOW


@pytest.fixture
def sfn(local_runtime):
    return boto3.client("stepfunctions", region_name="us-east-1")


@pytest.fixture
def run(pipeline, sfn, aws, write_config):
    """Replicate a config document through the deployed state machine; the outcome."""

    def execute(
        document: dict, name: str = "replication.yml", timeout_seconds: float = 240
    ) -> ExecutionOutcome:
        config_uri = deploy.upload_config(
            aws["s3"], pipeline.work_uri, write_config(document, name)
        )
        arn = start(
            sfn,
            pipeline.state_machine_arn,
            deploy.execution_name("test"),
            {"configUri": config_uri},
        )
        return follow(sfn, arn, poll_seconds=0.2, timeout_seconds=timeout_seconds)

    return execute


@pytest.fixture
def arm(local_runtime):
    """Arm fail points in the emulator's Lambdas and Spark jobs (``ferry.core.faults``)."""
    fault_file = FaultFile(local_runtime.state_dir / "aws" / FAULTS_FILE)

    def arm_faults(*faults: dict) -> None:
        fault_file.write(list(faults))

    yield arm_faults
    fault_file.clear()


WEST = "us-west-2"


@dataclass(frozen=True)
class CrossRegion:
    """Sample tables in Glue us-east-1 on S3, and an empty replica bucket in us-west-2."""

    east: GlueCatalog
    west: GlueCatalog
    sample: SampleTables
    replica_bucket: str

    def document(self, replica_database: str | None = None, **extra: Any) -> dict[str, Any]:
        """A Glue → Glue, S3 → S3 replication of the sample ``orders`` across regions."""
        return {
            "source-catalog": {"name": "east", "glue": {"region": "us-east-1"}},
            "replica-catalog": {"name": "west", "glue": {"region": WEST}},
            **extra,
            "table-replications": [
                {
                    "source-table": {"database-name": self.sample.database, "table-name": "orders"},
                    "replica-table": {
                        "database-name": replica_database or f"{self.sample.database}_dr",
                        "table-location": f"s3://{self.replica_bucket}/orders",
                    },
                }
            ],
        }


@pytest.fixture
def cross_region(aws, unique) -> CrossRegion:
    source_bucket, replica_bucket = f"src-{unique}", f"dr-west-{unique}"
    aws["s3"].create_bucket(Bucket=source_bucket)
    boto3.client("s3", region_name=WEST).create_bucket(
        Bucket=replica_bucket, CreateBucketConfiguration={"LocationConstraint": WEST}
    )
    east = GlueCatalog("east", aws["glue"])
    sample = create_sample_tables(
        east, f"sales_{unique}", f"s3://{source_bucket}/warehouse", last_days(NOW.date(), 3)
    )
    west = GlueCatalog("west", boto3.client("glue", region_name=WEST))
    return CrossRegion(east, west, sample, replica_bucket)


@pytest.fixture
def catalog_triggers(local_runtime):
    """Remove the catalog-events rules and poller schedules a test installed: a schedule left
    behind would go on polling for the rest of the session."""
    yield
    events = boto3.client("events", region_name="us-east-1")
    for rule in events.list_rules(NamePrefix="ferry-catalog-events-")["Rules"]:
        targets = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
        if targets:
            events.remove_targets(Rule=rule["Name"], Ids=[t["Id"] for t in targets])
        events.delete_rule(Name=rule["Name"])
    scheduler = boto3.client("scheduler", region_name="us-east-1")
    for schedule in scheduler.list_schedules(NamePrefix="ferry-catalog-poller-")["Schedules"]:
        scheduler.delete_schedule(Name=schedule["Name"], GroupName=schedule["GroupName"])
