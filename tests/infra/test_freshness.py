"""The freshness check, the RPO alarm and the dashboard, in every example environment: a
schedule of the environment's group invokes the check with every deployed config, under a
role that may invoke it and nothing else; the check's role reads the state and publishes in
the namespace ``Ferry`` only; ``rpo-breached`` reads ``TablesOverRpo`` over the check's
period and tells the operations topic; the dashboard shows freshness per table, worst first."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Template

from infra.freshness import schedule_name
from infra.settings import environment_names
from tests.infra.test_dead_letters import (
    actions_of,
    alarm,
    allows,
    arn_of,
    function_logical,
    of_type,
    statements_of,
)
from tests.infra.test_first_deploy import decide, role_of_function

pytestmark = pytest.mark.infra


@pytest.fixture(scope="module", params=environment_names())
def built(request, stacks):
    stack = stacks[request.param]
    return stack, Template.from_stack(stack).to_json()["Resources"]


def test_a_schedule_invokes_the_check_with_every_deployed_config(built):
    stack, resources = built
    name = stack.settings.name
    check = function_logical(resources, "FreshnessCheck")
    [schedule] = [
        s["Properties"]
        for s in of_type(resources, "AWS::Scheduler::Schedule").values()
        if s["Properties"]["Name"] == schedule_name(name)
    ]
    assert len(schedule["Name"]) <= 64
    assert schedule["GroupName"] == f"ferry-{name}"
    assert schedule["ScheduleExpression"] == stack.settings.freshness_check_rate
    target = schedule["Target"]
    assert target["Arn"] == arn_of(check)
    period = stack.settings.freshness_check_minutes * 60
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": period}
    assert target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0].startswith("TriggersDeadLetters")
    uris = [stack.resolve(stack.configs.uri(path)) for path in stack.settings.configs]
    assert json.loads(target["Input"]) == {"configUris": uris}
    # The schedule's role: this function, the dead-letter queue and its key; nothing else.
    role = target["RoleArn"]["Fn::GetAtt"][0]
    statements = statements_of(resources, role)
    assert allows(statements, "lambda:InvokeFunction", arn_of(check))
    assert sorted(a for s in statements for a in actions_of(s)) == [
        "kms:Decrypt", "kms:GenerateDataKey", "lambda:InvokeFunction", "sqs:SendMessage",
    ]  # fmt: skip
    trust = resources[role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert [t["Principal"] for t in trust] == [{"Service": "scheduler.amazonaws.com"}]


def test_the_checks_role_reads_the_state_and_publishes_in_its_namespace_only(built):
    _, resources = built
    check = function_logical(resources, "FreshnessCheck")
    role = resources[check]["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = statements_of(resources, role)
    actions = {a for s in statements for a in actions_of(s)}
    [metrics] = [s for s in statements if "cloudwatch:PutMetricData" in actions_of(s)]
    assert metrics["Resource"] == "*"  # IAM authorizes PutMetricData on * only
    assert metrics["Condition"] == {"StringEquals": {"cloudwatch:namespace": "Ferry"}}
    state = [s for s in statements if any(a.startswith("dynamodb:") for a in actions_of(s))]
    assert [a for s in state for a in actions_of(s)] == ["dynamodb:BatchGetItem"]
    # It replicates nothing: no data, no catalog write, no publication to consumers.
    assert not {a for a in actions if a.startswith(("s3:Put", "s3:Delete", "sns:"))}
    assert not {a for a in actions if a.startswith("glue:") and "Get" not in a}


def test_the_rpo_alarm_reads_tables_over_rpo_over_the_checks_period(built):
    stack, resources = built
    name = stack.settings.name
    (topic,) = [
        k
        for k, v in of_type(resources, "AWS::SNS::Topic").items()
        if v["Properties"]["TopicName"].endswith("-operations")
    ]
    rpo = alarm(resources, f"ferry-{name}-rpo-breached")
    assert (rpo["Namespace"], rpo["MetricName"], rpo["Statistic"]) == (
        "Ferry", "TablesOverRpo", "Maximum",
    )  # fmt: skip
    assert rpo["Dimensions"] == [{"Name": "service", "Value": "ferry"}]
    assert rpo["Period"] == stack.settings.freshness_check_minutes * 60
    assert (rpo["Threshold"], rpo["EvaluationPeriods"]) == (1, 1)
    assert rpo["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert rpo["TreatMissingData"] == "notBreaching"
    assert rpo["AlarmActions"] == [{"Ref": topic}]
    # The check's own failure is alarmed on separately.
    errors = alarm(resources, f"ferry-{name}-freshness-check-errors")
    assert errors["MetricName"] == "Errors"


def test_the_dashboard_shows_freshness_per_table_worst_first(built):
    _, resources = built
    (dashboard,) = of_type(resources, "AWS::CloudWatch::Dashboard").values()
    body = "".join(
        part if isinstance(part, str) else "?"
        for part in dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    )
    widgets = {w["properties"].get("title"): w for w in json.loads(body)["widgets"]}
    freshness = widgets["Freshness per table (s), worst first"]["properties"]
    [[query]] = freshness["metrics"]
    assert query["expression"] == (
        'SELECT MAX(Freshness) FROM SCHEMA("Ferry", service, "table") '
        'GROUP BY "table" ORDER BY MAX() DESC LIMIT 20'
    )
    over = widgets["Tables past their RPO"]["properties"]
    assert over["metrics"][0][:4] == ["Ferry", "TablesOverRpo", "service", "ferry"]


def test_the_check_may_publish_in_the_namespace_ferry_and_no_other(deployed, simulator):
    stack, template, resolved = deployed
    role = role_of_function(template, "-freshness-check")

    def may(namespace: str) -> bool:
        context = {"cloudwatch:namespace": namespace}
        decision = decide(simulator, template, resolved, role, "cloudwatch:PutMetricData", "*",
                          context)  # fmt: skip
        return decision == "Allowed"

    assert may("Ferry")
    assert not may("AWS/Lambda") and not may("Other")
    name, region, account = stack.settings.name, stack.settings.region, stack.settings.account
    table = f"arn:aws:dynamodb:{region}:{account}:table/ferry-{name}-state"
    allowed = decide(simulator, template, resolved, role, "dynamodb:BatchGetItem", table)
    refused = decide(simulator, template, resolved, role, "dynamodb:PutItem", table)
    assert (allowed, refused) == ("Allowed", "ImplicitlyDenied")
