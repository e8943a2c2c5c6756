"""Housekeeping of a config of many tables stays within Step Functions' 256 KiB per state:
its result is counts and the report's URI, the report (in the work bucket) names every
table."""

from __future__ import annotations

import json

import pytest

from ferry.catalog.glue import GlueCatalog
from ferry.core.model import Column, Database, StorageDescriptor, Table, TableType
from ferry.local import deploy
from ferry.statemachine.executions import follow, start
from ferry.storage import fs
from tests.e2e.test_limits import LIMIT, largest_state

pytestmark = pytest.mark.e2e

TABLES = 1000


def test_housekeeping_of_1000_tables_stays_within_every_limit_and_reports_each(
    pipeline, sfn, aws, unique, write_config
):
    source, replica = f"src-{unique}", f"dr-{unique}"
    aws["s3"].create_bucket(Bucket=source)
    aws["s3"].create_bucket(Bucket=replica)
    glue = GlueCatalog("east", aws["glue"])
    database = f"sales_{unique}"
    glue.create_database(Database(database))
    storage = StorageDescriptor(f"s3://{source}/empty", (Column("id", "bigint"),))
    for number in range(TABLES):
        name = f"t{number:04d}"
        glue.create_table(
            Table(
                database, name, TableType.EXTERNAL, storage.with_location(f"s3://{source}/{name}")
            )
        )
    config = write_config(
        {
            "source-catalog": {"name": "east", "glue": {"region": "us-east-1"}},
            "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
            "table-replications": [
                {
                    "source-table": {"database-name": database, "table-name-pattern": "t\\d+"},
                    "replica-table": {
                        "database-name": f"{database}_dr",
                        "table-location": f"s3://{replica}/warehouse",
                    },
                }
            ],
        }
    )
    config_uri = deploy.upload_config(aws["s3"], pipeline.work_uri, config)
    arn = start(
        sfn,
        pipeline.housekeeping_state_machine_arn,
        deploy.execution_name("housekeeping"),
        {"configUri": config_uri, "vacuum": True},
    )
    outcome = follow(sfn, arn, poll_seconds=0.5, timeout_seconds=900)
    assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
    result = outcome.output["housekeeping"]
    assert (result["tableCount"], result["deleted"], result["orphans"]) == (TABLES, 0, 0)
    largest = largest_state(sfn, arn)
    print(f"\nhousekeeping of {TABLES} tables: largest state {largest} bytes")
    assert largest < 4 * 1024 < LIMIT
    report = json.loads(fs.read_bytes(result["reportUri"]))
    assert sorted(t["sourceTable"] for t in report["tables"]) == [
        f"{database}.t{number:04d}" for number in range(TABLES)
    ]
