"""Critical tables first, on the deployed pipeline: a budget of two copy slots, one kept for
critical tables. A run of bulk tables whose first copy is slowed fills the other slot and
queues the rest; a critical table's run meanwhile copies at once, in the reserved slot, and
is replicated while the bulk backlog still waits; then every bulk table is replicated."""

from __future__ import annotations

import time
from contextlib import contextmanager

import boto3
import pytest

from ferry.copying.budget.dynamodb import DynamoDbSlots
from ferry.local import deploy
from ferry.replicas.replica import REPLICATION_EVENT
from ferry.statemachine.executions import follow, start
from tests.e2e.test_pipeline import table_entry
from tests.e2e.test_summarize_metrics import emf_records, log_of
from tests.helpers import config_document

pytestmark = pytest.mark.e2e

COPY_SLOT_FUNCTION = "ferry-local-copy-slot"
NOTIFY_FUNCTION = "ferry-local-notify-success"
BULK_TABLES = ("orders_bulk_1", "orders_bulk_2", "orders_bulk_3")


@contextmanager
def copy_budget(slots: int, critical_reserved: int, wait_seconds: int = 1):
    """The Claim copy slot function's budget for the test (as a deploy of other settings
    would set it), the deployed one again afterwards."""
    client = boto3.client("lambda", region_name="us-east-1")
    deployed = client.get_function_configuration(FunctionName=COPY_SLOT_FUNCTION)
    variables = deployed["Environment"]["Variables"]
    client.update_function_configuration(
        FunctionName=COPY_SLOT_FUNCTION,
        Environment={
            "Variables": {
                **variables,
                "FERRY_COPY_SLOTS": str(slots),
                "FERRY_CRITICAL_RESERVED_SLOTS": str(critical_reserved),
                "FERRY_COPY_SLOT_WAIT_SECONDS": str(wait_seconds),
            }
        },
    )
    try:
        yield
    finally:
        client.update_function_configuration(
            FunctionName=COPY_SLOT_FUNCTION, Environment={"Variables": variables}
        )


def until(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.2)


def test_a_critical_table_is_replicated_while_a_bulk_backlog_waits(
    local_runtime, pipeline, sfn, aws, sample, write_config, replica_catalog, arm, tmp_path
):
    replica_db = f"{sample.database}_dr"
    slots = DynamoDbSlots(boto3.client("dynamodb", region_name="us-east-1"), pipeline.state_table)

    def entry(replica_table: str, priority: str, source: str = "orders") -> dict:
        item = table_entry(sample, source, (tmp_path / replica_table).as_uri(), priority=priority)
        item["replica-table"]["table-name"] = replica_table
        return item

    bulk = config_document(local_runtime, [entry(t, "bulk") for t in BULK_TABLES])
    critical = config_document(
        local_runtime, [entry("customers_critical", "critical", "customers")]
    )
    logs = {name: log_of(local_runtime, name) for name in (COPY_SLOT_FUNCTION, NOTIFY_FUNCTION)}
    offsets = {name: log.stat().st_size if log.exists() else 0 for name, log in logs.items()}
    # The first bulk copy to finish its batch holds its slot for 25 s.
    arm({"point": "copy.batch", "action": "hang", "seconds": 25, "times": 1})
    with copy_budget(slots=2, critical_reserved=1):
        bulk_run = start(
            sfn, pipeline.state_machine_arn, deploy.execution_name("bulk"),
            {"configUri": upload(aws, pipeline, write_config(bulk, "bulk.yml"))},
        )  # fmt: skip
        # The bulk slot is taken and the other bulk tables wait in line.
        until(
            lambda: len(slots.holders()) == 1 and len(slots.waiting()) >= 1,
            120, "one bulk table copying, the others waiting for a slot",
        )  # fmt: skip
        [holder] = slots.holders()
        assert (holder.slot, holder.priority.value) == (1, "bulk")

        critical_run = start(
            sfn, pipeline.state_machine_arn, deploy.execution_name("critical"),
            {"configUri": upload(aws, pipeline, write_config(critical, "critical.yml"))},
        )  # fmt: skip
        outcome = follow(sfn, critical_run, poll_seconds=0.2, timeout_seconds=180)
        assert outcome.status == "SUCCEEDED", outcome
        replicated = replica_catalog.get_table(replica_db, "customers_critical")
        assert replicated is not None and replicated.parameters[REPLICATION_EVENT]
        # The critical table is replicated while bulk tables still wait for the slot.
        waiting_bulk = [
            name for name in BULK_TABLES if replica_catalog.get_table(replica_db, name) is None
        ]
        assert len(waiting_bulk) >= 2, waiting_bulk
        assert sfn.describe_execution(executionArn=bulk_run)["status"] == "RUNNING"

        bulk_outcome = follow(sfn, bulk_run, poll_seconds=0.5, timeout_seconds=300)
    assert bulk_outcome.status == "SUCCEEDED", bulk_outcome
    for name in BULK_TABLES:
        assert replica_catalog.get_table(replica_db, name).parameters[REPLICATION_EVENT]
    assert slots.holders() == [] and slots.waiting() == []
    bulk_done = sfn.describe_execution(executionArn=bulk_run)["stopDate"]
    critical_done = sfn.describe_execution(executionArn=critical_run)["stopDate"]
    assert critical_done < bulk_done

    # The metrics of the dashboard's copy budget widgets, by priority (EMF).
    def published(function: str, metric: str) -> dict[str, list[float]]:
        with logs[function].open("rb") as written:
            written.seek(offsets[function])
            records = emf_records(written.read().decode(), metric)
        values: dict[str, list[float]] = {}
        for record in records:
            [directive] = record["_aws"]["CloudWatchMetrics"]
            assert directive["Dimensions"] == [["service", "Priority"]]
            value = record[metric]
            values.setdefault(record["Priority"], []).extend(
                value if isinstance(value, list) else [value]
            )
        return values

    depth = published(COPY_SLOT_FUNCTION, "CopyQueueDepth")
    assert max(depth["bulk"]) >= 1 and set(depth) == {"critical", "normal", "bulk"}
    waited = published(COPY_SLOT_FUNCTION, "CopySlotWait")
    assert waited["critical"] == [0.0] and max(waited["bulk"]) > 10
    lag = published(NOTIFY_FUNCTION, "ReplicationLag")
    assert len(lag["critical"]) == 1 and len(lag["bulk"]) == len(BULK_TABLES)
    assert lag["critical"][0] < sorted(lag["bulk"])[-2]  # below both bulk tables that waited


def upload(aws, pipeline, path) -> str:
    return deploy.upload_config(aws["s3"], pipeline.work_uri, path)

