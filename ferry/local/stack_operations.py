"""The stack's triggers and operations resources, created in the emulator
(``ferry.local.stack``): the EventBridge rules, the Scheduler's groups and schedules, the
CloudWatch alarms (``ferry.local.emulator_cloudwatch`` evaluates them) and dashboards."""

from __future__ import annotations

import json
from typing import Any

from ferry.local.stack_context import Creator, StackContext


def rule(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    bus = properties.get("EventBusName")
    region = stack.region
    if isinstance(bus, str) and bus.startswith("arn:"):
        region = bus.split(":")[3]
    events = stack.client("events", region)
    name = properties.get("Name") or stack.name(logical, limit=64)
    arguments: dict[str, Any] = {
        "Name": name,
        "State": properties.get("State", "ENABLED"),
        "Description": properties.get("Description", ""),
    }
    if "EventPattern" in properties:
        arguments["EventPattern"] = json.dumps(properties["EventPattern"])
    if "ScheduleExpression" in properties:
        arguments["ScheduleExpression"] = properties["ScheduleExpression"]
    arn = events.put_rule(**arguments)["RuleArn"]
    targets = [
        {
            key: (json.dumps(value) if key == "Input" and not isinstance(value, str) else value)
            for key, value in target.items()
        }
        for target in properties.get("Targets", [])
    ]
    if targets:
        events.put_targets(Rule=name, Targets=targets)
    stack.set(logical, name, Arn=arn)


def schedule_group(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    scheduler = stack.client("scheduler")
    name = properties.get("Name") or stack.name(logical, limit=64)
    try:
        arn = scheduler.get_schedule_group(Name=name)["Arn"]
    except scheduler.exceptions.ResourceNotFoundException:
        arn = scheduler.create_schedule_group(Name=name)["ScheduleGroupArn"]
    stack.set(logical, name, Arn=arn)


def schedule(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    scheduler = stack.client("scheduler")
    name = properties.get("Name") or stack.name(logical, limit=64)
    target = {
        key: value
        for key, value in properties["Target"].items()
        if key in ("Arn", "RoleArn", "Input", "RetryPolicy", "DeadLetterConfig")
    }
    group = properties.get("GroupName", "default")
    arguments = {
        "Name": name,
        "GroupName": group,
        "ScheduleExpression": properties["ScheduleExpression"],
        "FlexibleTimeWindow": properties.get("FlexibleTimeWindow", {"Mode": "OFF"}),
        "Target": target,
        "State": properties.get("State", "ENABLED"),
    }
    if properties.get("ScheduleExpressionTimezone"):
        arguments["ScheduleExpressionTimezone"] = properties["ScheduleExpressionTimezone"]
    try:
        scheduler.get_schedule(Name=name, GroupName=group)
        scheduler.update_schedule(**arguments)
    except scheduler.exceptions.ResourceNotFoundException:
        scheduler.create_schedule(**arguments)
    arn = f"arn:aws:scheduler:{stack.region}:{stack.account}:schedule/{group}/{name}"
    stack.set(logical, name, Arn=arn)


def alarm(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    name = properties.get("AlarmName") or stack.name(logical, limit=255)
    arguments = {
        key: properties[key]
        for key in (
            "AlarmDescription",
            "AlarmActions",
            "OKActions",
            "InsufficientDataActions",
            "DatapointsToAlarm",
            "ExtendedStatistic",
            "MetricName",
            "Namespace",
            "Statistic",
            "Period",
            "EvaluationPeriods",
            "Threshold",
            "ComparisonOperator",
            "TreatMissingData",
            "Dimensions",
            "Metrics",
        )  # fmt: skip
        if key in properties
    }
    for number in ("Period", "EvaluationPeriods", "DatapointsToAlarm"):
        if number in arguments:
            arguments[number] = int(arguments[number])
    if "Threshold" in arguments:
        arguments["Threshold"] = float(arguments["Threshold"])
    stack.client("cloudwatch").put_metric_alarm(AlarmName=name, **arguments)
    arn = f"arn:aws:cloudwatch:{stack.region}:{stack.account}:alarm:{name}"
    stack.set(logical, name, Arn=arn)


def dashboard(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    name = properties.get("DashboardName") or stack.name(logical)
    body = properties["DashboardBody"]
    stack.client("cloudwatch").put_dashboard(
        DashboardName=name, DashboardBody=body if isinstance(body, str) else json.dumps(body)
    )
    stack.set(logical, name)


#: The creator of each resource type of this module, by CloudFormation type.
CREATORS: dict[str, Creator] = {
    "AWS::Events::Rule": rule,
    "AWS::Scheduler::ScheduleGroup": schedule_group,
    "AWS::Scheduler::Schedule": schedule,
    "AWS::CloudWatch::Alarm": alarm,
    "AWS::CloudWatch::Dashboard": dashboard,
}
