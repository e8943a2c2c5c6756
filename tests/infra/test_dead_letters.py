"""What fails outside the state machines reaches a queue and an alarm, in every example
environment: the functions a rule or a schedule starts fail into a dead-letter queue of their
own, every rule's and schedule's target into the triggers' one, and each forwarding stack of
another region into a queue of its region, alarmed to a topic of its region."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Template

from ferry import statemachine
from infra.dead_letters import ASYNC_RETRY_ATTEMPTS, TARGET_RETRY_ATTEMPTS
from infra.functions import kebab
from infra.settings import environment_names

pytestmark = pytest.mark.infra


@pytest.fixture(scope="module", params=environment_names())
def deployed(request, stacks):
    stack = stacks[request.param]
    return stack, Template.from_stack(stack).to_json()["Resources"]


def of_type(resources: dict, kind: str) -> dict[str, dict]:
    return {k: v for k, v in resources.items() if v["Type"] == kind}


def arn_of(logical: str) -> dict:
    return {"Fn::GetAtt": [logical, "Arn"]}


def statements_of(resources: dict, role: str) -> list[dict]:
    """Every statement of the policies attached to the role ``role`` (a logical id)."""
    return [
        statement
        for policy in of_type(resources, "AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def actions_of(statement: dict) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else actions


def allows(statements: list[dict], action: str, resource: object) -> bool:
    for statement in statements:
        actions = actions_of(statement)
        targets = statement["Resource"]
        targets = targets if isinstance(targets, list) else [targets]
        if statement["Effect"] == "Allow" and action in actions and resource in targets:
            return True
    return False


def function_logical(resources: dict, name: str) -> str:
    (logical,) = [
        k
        for k, v in of_type(resources, "AWS::Lambda::Function").items()
        if v["Properties"]["FunctionName"].endswith(f"-{kebab(name)}")
    ]
    return logical


def alarm(resources: dict, name: str) -> dict:
    (found,) = [
        v["Properties"]
        for v in of_type(resources, "AWS::CloudWatch::Alarm").values()
        if v["Properties"]["AlarmName"] == name
    ]
    return found


def test_each_function_a_rule_or_a_schedule_starts_fails_into_its_queue_and_alarms(deployed):
    stack, resources = deployed
    (key,) = of_type(resources, "AWS::KMS::Key")
    (topic,) = [
        k
        for k, v in of_type(resources, "AWS::SNS::Topic").items()
        if v["Properties"]["TopicName"].endswith("-operations")
    ]
    configs = of_type(resources, "AWS::Lambda::EventInvokeConfig")
    # What a rule or a schedule targets, whatever the configs declare: the feed functions
    # and the freshness check.
    targeted = {
        json.dumps(t["Arn"])
        for rule in of_type(resources, "AWS::Events::Rule").values()
        for t in rule["Properties"]["Targets"]
    } | {
        json.dumps(s["Properties"]["Target"]["Arn"])
        for s in of_type(resources, "AWS::Scheduler::Schedule").values()
    }
    by_function = {json.dumps(c["Properties"]["FunctionName"]): c for c in configs.values()}
    functions = {function_logical(resources, name) for name in statemachine.OUT_OF_BAND_FUNCTIONS}
    assert {json.dumps({"Ref": f}) for f in functions} == set(by_function)
    for target in targeted:
        if "Functions" in target:  # a function's ARN: it must have its destination
            logical = json.loads(target)["Fn::GetAtt"][0]
            assert json.dumps({"Ref": logical}) in by_function, target
    name = stack.settings.name
    for function in statemachine.OUT_OF_BAND_FUNCTIONS:
        logical = function_logical(resources, function)
        config = by_function[json.dumps({"Ref": logical})]
        properties = config["Properties"]
        assert properties["Qualifier"] == "$LATEST"
        assert properties["MaximumRetryAttempts"] == ASYNC_RETRY_ATTEMPTS
        assert properties["MaximumEventAgeInSeconds"] == 6 * 3600
        destination = properties["DestinationConfig"]["OnFailure"]["Destination"]
        queue = destination["Fn::GetAtt"][0]
        queue_properties = resources[queue]["Properties"]
        assert queue_properties["QueueName"] == f"ferry-{name}-{kebab(function)}-dead-letters"
        assert queue_properties["KmsMasterKeyId"] == arn_of(key)
        assert queue_properties["MessageRetentionPeriod"] == 14 * 86400
        # Lambda sends with the function's role: that queue, with the key, and no other.
        role = resources[logical]["Properties"]["Role"]["Fn::GetAtt"][0]
        statements = statements_of(resources, role)
        assert allows(statements, "sqs:SendMessage", destination)
        assert allows(statements, "kms:GenerateDataKey", arn_of(key))
        sqs = [s for s in statements if any(a.startswith("sqs:") for a in actions_of(s))]
        assert [(actions_of(s), s["Resource"]) for s in sqs] == [
            (["sqs:SendMessage"], destination)
        ]
        # Lambda checks the role at configuration: the policy exists before the config.
        assert any("DefaultPolicy" in d for d in config["DependsOn"])
        errors = alarm(resources, f"ferry-{name}-{kebab(function)}-errors")
        assert (errors["Namespace"], errors["MetricName"], errors["Statistic"]) == (
            "AWS/Lambda", "Errors", "Sum",
        )  # fmt: skip
        assert errors["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": logical}}]
        depth = alarm(resources, f"ferry-{name}-{kebab(function)}-dead-letters")
        assert (depth["Namespace"], depth["MetricName"]) == (
            "AWS/SQS", "ApproximateNumberOfMessagesVisible",
        )  # fmt: skip
        assert depth["Dimensions"] == [
            {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}
        ]
        for found in (errors, depth):
            assert found["AlarmActions"] == [{"Ref": topic}]
            assert found["Threshold"] == 1
            assert found["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_every_rule_and_schedule_target_retries_then_fails_into_the_triggers_queue(deployed):
    stack, resources = deployed
    (key,) = of_type(resources, "AWS::KMS::Key")
    (queue,) = [
        k
        for k, v in of_type(resources, "AWS::SQS::Queue").items()
        if v["Properties"]["QueueName"] == f"ferry-{stack.settings.name}-trigger-dead-letters"
    ]
    rules = of_type(resources, "AWS::Events::Rule")
    schedules = of_type(resources, "AWS::Scheduler::Schedule")
    assert rules and schedules
    for rule in rules.values():
        for target in rule["Properties"]["Targets"]:
            assert target["DeadLetterConfig"] == {"Arn": arn_of(queue)}
            assert target["RetryPolicy"]["MaximumRetryAttempts"] == TARGET_RETRY_ATTEMPTS
            assert target["RetryPolicy"]["MaximumEventAgeInSeconds"] == 2 * 3600
    # EventBridge sends on the queue's policy, for this account's rules, and may encrypt.
    (policy,) = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in of_type(resources, "AWS::SQS::QueuePolicy").values()
        if p["Properties"]["Queues"] == [{"Ref": queue}]
    ]
    (events,) = [s for s in policy if s.get("Principal") == {"Service": "events.amazonaws.com"}]
    assert events["Action"] == "sqs:SendMessage"
    assert "aws:SourceArn" in events["Condition"]["ArnLike"]
    key_policy = resources[key]["Properties"]["KeyPolicy"]["Statement"]
    assert any(
        s.get("Principal") == {"Service": "events.amazonaws.com"}
        and "kms:GenerateDataKey" in s["Action"]
        and "aws:SourceArn" in s["Condition"]["ArnLike"]
        for s in key_policy
    )
    # Scheduler sends with the schedule's role: the queue, and a data key of the key.
    for schedule in schedules.values():
        target = schedule["Properties"]["Target"]
        assert target["DeadLetterConfig"] == {"Arn": arn_of(queue)}
        assert "MaximumRetryAttempts" in target["RetryPolicy"]
        role = target["RoleArn"]["Fn::GetAtt"][0]
        statements = statements_of(resources, role)
        assert allows(statements, "sqs:SendMessage", arn_of(queue)), role
        assert allows(statements, "kms:GenerateDataKey", arn_of(key)), role
    depth = alarm(resources, f"ferry-{stack.settings.name}-trigger-dead-letters")
    assert depth["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}
    ]


def test_each_forwarding_stack_has_its_queue_topic_and_alarms_in_its_own_region(app, stacks):
    from infra.forwarding import EventForwarding

    forwarders = [c for c in app.node.children if isinstance(c, EventForwarding)]
    assert forwarders, "an example environment should show the cross-region path"
    for forwarder in forwarders:
        name = forwarder.settings_name
        resources = Template.from_stack(forwarder).to_json()["Resources"]
        (key,) = of_type(resources, "AWS::KMS::Key")
        (topic,) = of_type(resources, "AWS::SNS::Topic")
        (queue,) = of_type(resources, "AWS::SQS::Queue")
        assert resources[topic]["Properties"]["KmsMasterKeyId"] == arn_of(key)
        assert resources[queue]["Properties"]["KmsMasterKeyId"] == arn_of(key)
        # CloudWatch publishes this region's alarms of the environment to the topic.
        (policy,) = of_type(resources, "AWS::SNS::TopicPolicy").values()
        (cloudwatch,) = [
            s
            for s in policy["Properties"]["PolicyDocument"]["Statement"]
            if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
        ]
        source = json.dumps(cloudwatch["Condition"]["ArnLike"]["aws:SourceArn"])
        assert f":cloudwatch:{forwarder.region}:{forwarder.account}:alarm:ferry-{name}-*" in source
        rules = of_type(resources, "AWS::Events::Rule")
        for rule in rules.values():
            (target,) = rule["Properties"]["Targets"]
            assert target["DeadLetterConfig"] == {"Arn": arn_of(queue)}
            assert target["RetryPolicy"]["MaximumRetryAttempts"] == TARGET_RETRY_ATTEMPTS
            assert "RoleArn" in target
        alarms = [v["Properties"] for v in of_type(resources, "AWS::CloudWatch::Alarm").values()]
        assert len(alarms) == len(rules) + 1
        failed = {
            json.dumps(a["Dimensions"]) for a in alarms if a.get("MetricName") == "FailedInvocations"
        }
        assert failed == {
            json.dumps([{"Name": "RuleName", "Value": {"Ref": rule_id}}]) for rule_id in rules
        }
        assert any(a.get("MetricName") == "ApproximateNumberOfMessagesVisible" for a in alarms)
        for found in alarms:
            assert found["AlarmActions"] == [{"Ref": topic}]  # this region's topic
            assert found["AlarmName"].startswith(f"ferry-{name}-")
