"""An execution that overruns its definition's ``TimeoutSeconds`` turns the stack's
timed-out alarm to ALARM on the local runtime, and the operations topic is told.

The deployed replication state machine's limit is 24 h: the drill runs a state machine of a
1 s limit under the deployed machine's role, watched by an alarm made exactly as the
deployed ``ferry-<env>-replication-timed-out`` (its metric, statistic, period, threshold
and actions), with only the state machine it watches changed.
"""

from __future__ import annotations

import json
import time

import boto3
import pytest

from ferry.local import deploy
from ferry.statemachine.executions import follow, start
from tests.e2e.test_catalog_events import wait_for
from tests.e2e.test_dead_letters import ENVIRONMENT, alarm_state, subscribed, told

pytestmark = pytest.mark.e2e

#: What a CloudWatch alarm's definition is made of, beside its name and what it watches.
ALARM_FIELDS = (
    "AlarmDescription", "AlarmActions", "Namespace", "MetricName", "Statistic", "Period",
    "EvaluationPeriods", "Threshold", "ComparisonOperator", "TreatMissingData",
)  # fmt: skip


def test_an_execution_over_its_time_limit_turns_the_timed_out_alarm_to_alarm(pipeline):
    cloudwatch = boto3.client("cloudwatch", region_name=deploy.REGION)
    sfn = boto3.client("stepfunctions", region_name=deploy.REGION)
    deployed_name = f"{ENVIRONMENT}-replication-timed-out"
    (deployed,) = cloudwatch.describe_alarms(AlarmNames=[deployed_name])["MetricAlarms"]
    assert (deployed["Namespace"], deployed["MetricName"]) == ("AWS/States", "ExecutionsTimedOut")
    (watched,) = deployed["Dimensions"]
    assert watched["Name"] == "StateMachineArn"
    replication = sfn.describe_state_machine(stateMachineArn=watched["Value"])
    assert json.loads(replication["definition"])["TimeoutSeconds"] == 24 * 3600

    drill = sfn.create_state_machine(
        name=f"{ENVIRONMENT}-timeout-drill-{time.monotonic_ns()}",
        definition=json.dumps({
            "Comment": "Overruns its time limit",
            "TimeoutSeconds": 1,
            "StartAt": "Hold",
            "States": {"Hold": {"Type": "Wait", "Seconds": 30, "End": True}},
        }),  # fmt: skip
        roleArn=replication["roleArn"],
    )["stateMachineArn"]
    alarm = f"{deployed_name}-drill"
    cloudwatch.put_metric_alarm(
        AlarmName=alarm,
        Dimensions=[{"Name": "StateMachineArn", "Value": drill}],
        **{field: deployed[field] for field in ALARM_FIELDS if field in deployed},
    )
    operations = subscribed(deployed["AlarmActions"][0])
    try:
        assert alarm_state(alarm) != "ALARM"
        execution = start(sfn, drill, deploy.execution_name("drill"), {})
        outcome = follow(sfn, execution, poll_seconds=0.2, timeout_seconds=20)
        assert outcome.status == "TIMED_OUT"
        wait_for(lambda: alarm_state(alarm) == "ALARM", "the timed-out alarm in ALARM")
        wait_for(lambda: told(operations, alarm), "the operations topic told of it")
    finally:
        cloudwatch.delete_alarms(AlarmNames=[alarm])
        sfn.delete_state_machine(stateMachineArn=drill)
