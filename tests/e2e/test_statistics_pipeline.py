"""Column statistics through the deployed pipeline, Glue → Glue in the emulator: Plan reads
them and Commit writes them under the deployed functions' own roles (the local runtime
authorizes every call as IAM would), and SUCCESS counts them."""

from __future__ import annotations

import pytest

from ferry.catalog.glue import GlueCatalog
from ferry.local.samples import create_sample_tables, last_days
from tests.conftest import NOW
from tests.e2e.test_pipeline import successes, table_entry
from tests.integration.test_replicate_statistics import _order_statistics

pytestmark = pytest.mark.e2e


def test_glue_to_glue_carries_column_statistics_under_the_deployed_roles(
    run, aws, unique, consumer
):
    topic, messages = consumer
    # Names the local environment's roles are granted (ferry/local/environment.yml).
    source_bucket, replica_bucket = f"landing-{unique}", f"dr-{unique}"
    for bucket in (source_bucket, replica_bucket):
        aws["s3"].create_bucket(Bucket=bucket)
    glue = GlueCatalog("aws", aws["glue"])
    sample = create_sample_tables(
        glue, f"events_stats_{unique}", f"s3://{source_bucket}/warehouse", last_days(NOW.date(), 2)
    )
    glue.set_column_statistics(sample.orders, _order_statistics(0))
    glue.set_partition_column_statistics(
        sample.orders, {(day,): _order_statistics(i + 1) for i, day in enumerate(sample.days)}
    )

    outcome = run(
        {
            "source-catalog": {"name": "landing", "glue": {"region": "us-east-1"}},
            "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
            "sns-event-listener": {"topic": topic},
            "table-replications": [
                table_entry(sample, "orders", f"s3://{replica_bucket}/orders")
            ],
        }
    )

    assert outcome.status == "SUCCEEDED", str(outcome.results)
    replica = glue.get_table(f"{sample.database}_dr", "orders")
    assert glue.get_column_statistics(replica) == glue.get_column_statistics(sample.orders)
    days = [(day,) for day in sample.days]
    assert glue.get_partition_column_statistics(replica, days) == (
        glue.get_partition_column_statistics(sample.orders, days)
    )
    [success] = successes(messages)
    assert success["statistics"] == {
        "tableColumns": 3, "partitions": 2, "partitionColumns": 6, "keysAdded": 0,
        "keysDropped": 0,
    }  # fmt: skip
