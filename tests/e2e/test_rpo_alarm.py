"""Stopping the replication of a table makes its freshness rise and its RPO alarm fire, on the
local runtime: the deployed freshness check, started by a schedule of the environment's
group under the deployed schedule's role, runs under its own deployed role (IAM enforced),
reads both metastores and the state table, and publishes ``Freshness`` and
``TablesOverRpo`` to the emulated CloudWatch; the deployed ``rpo-breached`` alarm turns to
ALARM and the operations topic is told. Replicating again brings the freshness back to 0.

The check's schedule here is the deployed one's target (function, role, retries, dead-letter
queue) with this test's config as its input: the deployed schedule checks the deployed
configs every five minutes. The alarm's return to OK is watched on a copy of the deployed
alarm whose period is 10 s instead of the check's five minutes (on AWS it returns at the
first period that holds only checks under the RPO).
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from ferry.local import deploy
from ferry.statemachine.executions import follow, start
from infra.freshness import schedule_name
from tests.e2e.test_catalog_events import add_partitions, wait_for
from tests.e2e.test_dead_letters import ENVIRONMENT, alarm_state, dead_letters, subscribed, told
from tests.e2e.test_pipeline import table_entry
from tests.e2e.test_summarize_metrics import emf_records, log_of
from tests.helpers import config_document

pytestmark = pytest.mark.e2e

#: What a CloudWatch alarm's definition is made of, beside its name and its period.
ALARM_FIELDS = (
    "AlarmDescription", "AlarmActions", "Namespace", "MetricName", "Dimensions", "Statistic",
    "EvaluationPeriods", "Threshold", "ComparisonOperator", "TreatMissingData",
)  # fmt: skip
RPO = timedelta(seconds=5)


class Metrics:
    """The emulated CloudWatch's datapoints of one table's freshness and of TablesOverRpo."""

    def __init__(self, table: str):
        self.cloudwatch = boto3.client("cloudwatch", region_name=deploy.REGION)
        self.table = table

    def points(self, metric: str, per_table: bool = True) -> list[tuple[datetime, float]]:
        dimensions = [{"Name": "service", "Value": "ferry"}]
        if per_table:
            dimensions.append({"Name": "table", "Value": self.table})
        now = datetime.now(UTC)
        found = self.cloudwatch.get_metric_statistics(
            Namespace="Ferry", MetricName=metric, Dimensions=dimensions,
            StartTime=now - timedelta(minutes=10), EndTime=now + timedelta(minutes=1),
            Period=1, Statistics=["Maximum"],
        )["Datapoints"]  # fmt: skip
        return sorted((p["Timestamp"], p["Maximum"]) for p in found)


def check_now(metrics: Metrics, config_uri: str) -> float:
    """Start the freshness check of ``config_uri`` as the deployed schedule does (a new
    schedule fires at once); the table's ``Freshness`` it published."""
    scheduler = boto3.client("scheduler", region_name=deploy.REGION)
    deployed = scheduler.get_schedule(Name=schedule_name(deploy.ENVIRONMENT), GroupName=ENVIRONMENT)
    before = len(metrics.points("Freshness"))
    name = f"{ENVIRONMENT}-freshness-drill-{uuid.uuid4().hex[:8]}"
    target = {
        key: deployed["Target"][key]
        for key in ("Arn", "RoleArn", "RetryPolicy", "DeadLetterConfig")
    }
    scheduler.create_schedule(
        Name=name, GroupName=ENVIRONMENT, ScheduleExpression=deployed["ScheduleExpression"],
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={**target, "Input": json.dumps({"configUris": [config_uri]})},
    )  # fmt: skip
    try:
        wait_for(lambda: len(metrics.points("Freshness")) > before, "the check's Freshness", 60)
    finally:
        scheduler.delete_schedule(Name=name, GroupName=ENVIRONMENT)
    return metrics.points("Freshness")[-1][1]


def published_freshness(local_runtime, function: str, start: int, table: str) -> list[float]:
    """The ``Freshness`` a state's function published for ``table`` (EMF, in its log) since
    ``start`` (the log's size then)."""
    with log_of(local_runtime, function).open("rb") as written:
        written.seek(start)
        records = emf_records(written.read().decode(), "Freshness")
    values = []
    for record in records:
        [directive] = record["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "Ferry"
        assert sorted(directive["Dimensions"][0]) == ["service", "table"]
        if record["table"] == table:
            value = record["Freshness"]
            values += value if isinstance(value, list) else [value]
    return values


def log_size(local_runtime, function: str) -> int:
    log = log_of(local_runtime, function)
    return log.stat().st_size if log.exists() else 0


def test_a_table_no_longer_replicated_rises_in_freshness_and_fires_the_rpo_alarm(
    pipeline, local_runtime, aws, sample, source_catalog, sfn, write_config, tmp_path, arm
):
    entry = table_entry(sample, "orders", (tmp_path / "replica" / "orders").as_uri(), rpo="PT5S")
    config_uri = deploy.upload_config(
        aws["s3"], pipeline.work_uri, write_config(config_document(local_runtime, [entry]))
    )

    def replicate(expected: str = "SUCCEEDED") -> None:
        execution = start(
            sfn, pipeline.state_machine_arn, deploy.execution_name("rpo"), {"configUri": config_uri}
        )
        assert follow(sfn, execution, poll_seconds=0.2, timeout_seconds=120).status == expected

    cloudwatch = boto3.client("cloudwatch", region_name=deploy.REGION)
    alarm = f"{ENVIRONMENT}-rpo-breached"
    (deployed,) = cloudwatch.describe_alarms(AlarmNames=[alarm])["MetricAlarms"]
    assert (deployed["Namespace"], deployed["MetricName"]) == ("Ferry", "TablesOverRpo")
    operations = subscribed(deployed["AlarmActions"][0])
    table = f"{sample.database}.orders"
    metrics = Metrics(table)
    notify = f"{ENVIRONMENT}-notify-success"
    notified = log_size(local_runtime, notify)

    replicate()
    # The run's end publishes the table's freshness, without waiting for the check.
    assert published_freshness(local_runtime, notify, notified, table) == [0]
    assert check_now(metrics, config_uri) == 0
    assert metrics.points("TablesOverRpo", per_table=False)[-1][1] == 0

    # The source changes and nothing replicates it.
    time.sleep(1.1)  # the metastore keeps whole seconds: the change is after the run's read
    add_partitions(source_catalog, sample.orders, ["2027-01-01"])
    changed = time.monotonic()
    first = check_now(metrics, config_uri)
    drill = f"{alarm}-drill"
    cloudwatch.put_metric_alarm(
        AlarmName=drill, Period=10, **{field: deployed[field] for field in ALARM_FIELDS}
    )
    try:
        time.sleep(max(0.0, RPO.total_seconds() + 1 - (time.monotonic() - changed)))
        later = check_now(metrics, config_uri)
        assert 0 <= first < later, (first, later)  # rising
        assert later > RPO.total_seconds()
        assert metrics.points("TablesOverRpo", per_table=False)[-1][1] >= 1
        wait_for(lambda: alarm_state(alarm) == "ALARM", "the rpo-breached alarm in ALARM", 30)
        wait_for(lambda: told(operations, alarm), "the operations topic told of it", 30)
        assert alarm_state(drill) == "ALARM"

        # A run that fails leaves the replica as it was: Abort publishes how far behind it is.
        aborted = log_size(local_runtime, f"{ENVIRONMENT}-abort")
        arm({"point": "plan.planned", "times": 100})
        replicate("FAILED")
        arm()
        [behind] = published_freshness(local_runtime, f"{ENVIRONMENT}-abort", aborted, table)
        assert behind >= later

        # Replicating again: in sync, and no table over its RPO.
        replicate()
        assert check_now(metrics, config_uri) == 0
        assert metrics.points("TablesOverRpo", per_table=False)[-1][1] == 0
        wait_for(lambda: alarm_state(drill) == "OK", "the alarm back to OK", 30)
    finally:
        cloudwatch.delete_alarms(AlarmNames=[drill])


def test_a_check_that_cannot_reach_a_catalog_names_the_config_and_alarms(
    pipeline, local_runtime, aws, sample, write_config, tmp_path
):
    """The check's own failure is alarmed separately: its invocation fails its retries, its
    record (the config named) waits in the check's dead-letter queue, and the function's
    errors alarm is in ALARM."""
    entry = table_entry(sample, "orders", (tmp_path / "replica" / "orders").as_uri(), rpo="PT5S")
    unreachable = {"name": "dr", "hive-metastore-uris": "thrift://127.0.0.1:9"}
    document = config_document(local_runtime, [entry], replica=unreachable)
    config_uri = deploy.upload_config(
        aws["s3"], pipeline.work_uri, write_config(document, "unreachable.yml")
    )
    scheduler = boto3.client("scheduler", region_name=deploy.REGION)
    deployed = scheduler.get_schedule(Name=schedule_name(deploy.ENVIRONMENT), GroupName=ENVIRONMENT)
    name = f"{ENVIRONMENT}-freshness-drill-{uuid.uuid4().hex[:8]}"
    scheduler.create_schedule(
        Name=name, GroupName=ENVIRONMENT, ScheduleExpression=deployed["ScheduleExpression"],
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={**deployed["Target"], "Input": json.dumps({"configUris": [config_uri]})},
    )  # fmt: skip
    queue = f"{ENVIRONMENT}-freshness-check-dead-letters"

    def failed() -> list[dict]:
        records = [json.loads(letter["Body"]) for letter in dead_letters(queue)]
        return [r for r in records if r["requestPayload"] == {"configUris": [config_uri]}]

    try:
        wait_for(lambda: failed() != [], "the failed check in its dead-letter queue", 60)
    finally:
        scheduler.delete_schedule(Name=name, GroupName=ENVIRONMENT)
    [record] = failed()
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    message = record["responsePayload"]["errorMessage"]
    assert message.startswith(f"freshness not measured for {config_uri}: ")
    assert "\n" not in message
    wait_for(lambda: alarm_state(f"{ENVIRONMENT}-freshness-check-errors") == "ALARM", "errors", 30)
    wait_for(lambda: alarm_state(queue) == "ALARM", "the dead-letter alarm", 30)
