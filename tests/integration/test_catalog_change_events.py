"""Catalog change feeds in the AWS emulator, as on AWS: Glue's catalog calls send their
EventBridge events, rules deliver them to SQS and Lambda targets, and rate schedules fire.

Every test talks to the session's emulator through boto3 and looks at what a consumer sees:
the messages a queue receives, the event a function logged, the refusals the emulator lists.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest

from ferry.local import stack

pytestmark = pytest.mark.integration

ACCOUNT = "123456789012"
REGION = "us-east-1"
TABLE_CHANGE = "Glue Data Catalog Table State Change"
DATABASE_CHANGE = "Glue Data Catalog Database State Change"
ENVELOPE = {"version", "id", "detail-type", "source", "account", "time", "region", "resources"}
ISO_SECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
#: A handler of this project that logs the event it receives (Powertools' ``log_event``).
LOGGING_HANDLER = "lambdas.summarize.handler"


@pytest.fixture
def clients(local_runtime):
    session = boto3.session.Session(region_name=REGION)
    names = ("glue", "events", "sqs", "iam", "scheduler")
    return SimpleNamespace(
        awslambda=session.client("lambda"), **{name: session.client(name) for name in names}
    )


def orders_table(clients, database: str) -> None:
    clients.glue.create_table(
        DatabaseName=database,
        TableInput={
            "Name": "orders",
            "PartitionKeys": [{"Name": "year", "Type": "int"}, {"Name": "month", "Type": "int"}],
            "StorageDescriptor": {
                "Columns": [{"Name": "id", "Type": "bigint"}],
                "Location": f"s3://src-{database}/orders",
            },
        },
    )


def queue_of_rule(clients, name: str, pattern: dict):
    """A rule on the default bus whose target is a new queue; the queue's messages."""
    url = clients.sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    clients.events.put_rule(Name=name, EventPattern=json.dumps(pattern))
    clients.events.put_targets(Rule=name, Targets=[{"Id": "queue", "Arn": arn}])

    def received() -> list[dict]:
        bodies = []
        while batch := clients.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            for message in batch:
                bodies.append(json.loads(message["Body"]))
                clients.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return bodies

    return received


def test_partitions_added_to_a_glue_table_arrive_as_table_state_changes_of_100_at_most(
    clients, unique
):
    database = f"sales_{unique}"
    clients.glue.create_database(DatabaseInput={"Name": database})
    orders_table(clients, database)
    pattern = {"source": ["aws.glue"], "detail": {"databaseName": [database]}}
    received = queue_of_rule(clients, f"partitions-{unique}", pattern)
    values = [[str(2014 + i // 12), str(i % 12 + 1)] for i in range(150)]
    # Glue takes 100 partitions a call: 150 new partitions are two calls, two events.
    for batch in (values[:100], values[100:]):
        clients.glue.batch_create_partition(
            DatabaseName=database,
            TableName="orders",
            PartitionInputList=[{"Values": v} for v in batch],
        )

    events = received()
    assert len(events) == 2
    first, second = sorted(events, key=lambda e: -len(e["detail"]["changedPartitions"]))
    assert set(first) == ENVELOPE | {"detail"}
    assert (first["version"], first["source"], first["detail-type"]) == (
        "0",
        "aws.glue",
        TABLE_CHANGE,
    )
    assert (first["account"], first["region"]) == (ACCOUNT, REGION)
    assert ISO_SECONDS.fullmatch(first["time"])
    assert first["id"] != second["id"]
    assert first["resources"] == [f"arn:aws:glue:{REGION}:{ACCOUNT}:table/{database}/orders"]
    assert first["detail"] == {
        "databaseName": database,
        "tableName": "orders",
        "typeOfChange": "BatchCreatePartition",
        "changedPartitions": [f"[{year}, {month}]" for year, month in values[:100]],
    }
    assert second["detail"]["changedPartitions"] == [f"[{y}, {m}]" for y, m in values[100:]]


def test_tables_created_and_deleted_arrive_as_database_state_changes(clients, unique):
    database = f"sales_{unique}"
    pattern = {"source": ["aws.glue"], "detail-type": [DATABASE_CHANGE]}
    pattern["detail"] = {"databaseName": [database]}
    received = queue_of_rule(clients, f"tables-{unique}", pattern)
    clients.glue.create_database(DatabaseInput={"Name": database})
    orders_table(clients, database)
    clients.glue.delete_table(DatabaseName=database, Name="orders")

    events = received()
    assert [e["detail"]["typeOfChange"] for e in events] == [
        "CreateDatabase",
        "CreateTable",
        "DeleteTable",
    ]
    created, deleted = events[1:]
    for event in events:
        assert set(event) == ENVELOPE | {"detail"}
        assert (event["source"], event["detail-type"]) == ("aws.glue", DATABASE_CHANGE)
    table_arn = f"arn:aws:glue:{REGION}:{ACCOUNT}:table/{database}/orders"
    assert created["resources"] == deleted["resources"] == [table_arn]
    assert created["detail"] == {
        "databaseName": database,
        "typeOfChange": "CreateTable",
        "changedTables": ["orders"],
    }
    assert deleted["detail"]["changedTables"] == ["orders"]


def test_a_failed_glue_call_sends_nothing_and_a_partly_failed_batch_names_what_changed(
    clients, unique
):
    database = f"sales_{unique}"
    clients.glue.create_database(DatabaseInput={"Name": database})
    orders_table(clients, database)
    clients.glue.create_partition(
        DatabaseName=database, TableName="orders", PartitionInput={"Values": ["2026", "10"]}
    )
    received = queue_of_rule(
        clients,
        f"failed-{unique}",
        {"source": ["aws.glue"], "detail": {"databaseName": [database]}},
    )
    glue = clients.glue
    with pytest.raises(glue.exceptions.AlreadyExistsException):
        orders_table(clients, database)
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.create_partition(
            DatabaseName=database, TableName="returns", PartitionInput={"Values": ["2026", "11"]}
        )
    with pytest.raises(glue.exceptions.ClientError, match="ValidationException"):
        glue.batch_create_partition(  # more than Glue takes in one call
            DatabaseName=database,
            TableName="orders",
            PartitionInputList=[{"Values": ["2026", str(day)]} for day in range(101)],
        )
    answer = glue.batch_create_partition(
        DatabaseName=database,
        TableName="orders",
        PartitionInputList=[{"Values": ["2026", "10"]}, {"Values": ["2026", "11"]}],
    )
    assert [e["PartitionValues"] for e in answer["Errors"]] == [["2026", "10"]]

    [event] = received()
    assert event["detail"]["changedPartitions"] == ["[2026, 11]"]


# -- Lambda targets --------------------------------------------------------------------------


def logging_function(clients, name: str) -> str:
    """A function of this project's handlers that logs the event it gets; its ARN."""
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "lambda.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    role = clients.iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))
    return clients.awslambda.create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=role["Role"]["Arn"],
        Handler=LOGGING_HANDLER,
        Code={"ZipFile": b"PK\x05\x06" + b"\x00" * 18},  # an empty zip: the code is the checkout
        Timeout=30,
    )["FunctionArn"]


def logged_events(local_runtime, function: str) -> list[dict]:
    """The events a function logged (its execution environments' log, as CloudWatch's)."""
    path = Path(local_runtime.state_dir) / "aws" / "lambda" / f"{function}.log"
    found = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("message"), dict):
            found.append(record["message"])
    return found


def wait_for_event(local_runtime, function: str, seconds: float = 60) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if events := logged_events(local_runtime, function):
            return events[0]
        time.sleep(0.5)
    raise AssertionError(f"{function} logged no event in {seconds} s")


def denials(local_runtime) -> list[dict]:
    with urllib.request.urlopen(f"{local_runtime.endpoint}/ferry-api/denials") as answer:
        return json.loads(answer.read())


def test_a_rule_invokes_a_function_its_policy_allows_with_the_transformed_event_and_no_other(
    clients, local_runtime, unique
):
    database = f"sales_{unique}"
    allowed, refused = f"allowed-{unique}", f"refused-{unique}"
    allowed_arn = logging_function(clients, allowed)
    refused_arn = logging_function(clients, refused)
    rule_arn = clients.events.put_rule(
        Name=f"catalog-events-{unique}",
        EventPattern=json.dumps(
            {
                "source": ["aws.glue"],
                "detail-type": [DATABASE_CHANGE],
                "detail": {"databaseName": [database], "typeOfChange": ["CreateTable"]},
            }
        ),
    )["RuleArn"]
    config_uri = f"s3://ferry-work/configs/{unique}.yml"
    template = f'{{"configUri": "{config_uri}", "event": <aws.events.event.json>}}'
    clients.events.put_targets(
        Rule=f"catalog-events-{unique}",
        Targets=[
            {
                "Id": name,
                "Arn": arn,
                "InputTransformer": {"InputPathsMap": {}, "InputTemplate": template},
            }
            for name, arn in (("allowed", allowed_arn), ("refused", refused_arn))
        ],
    )
    # What the CDK's LambdaFunction target adds: EventBridge may invoke it, for this rule.
    clients.awslambda.add_permission(
        FunctionName=allowed,
        StatementId="catalog-events",
        Action="lambda:InvokeFunction",
        Principal="events.amazonaws.com",
        SourceArn=rule_arn,
    )
    clients.glue.create_database(DatabaseInput={"Name": database})
    orders_table(clients, database)

    received = wait_for_event(local_runtime, allowed)
    assert received["configUri"] == config_uri
    event = received["event"]
    assert set(event) == ENVELOPE | {"detail"}
    assert (event["source"], event["detail-type"], event["account"]) == (
        "aws.glue",
        DATABASE_CHANGE,
        ACCOUNT,
    )
    assert ISO_SECONDS.fullmatch(event["time"])
    assert event["detail"] == {
        "databaseName": database,
        "typeOfChange": "CreateTable",
        "changedTables": ["orders"],
    }
    assert logged_events(local_runtime, refused) == []
    refusals = [d for d in denials(local_runtime) if d["resource"] == refused_arn]
    assert [(d["caller"], d["action"]) for d in refusals] == [
        ("events.amazonaws.com", "lambda:InvokeFunction")
    ]


def schedule_role(clients, name: str, may_invoke: str | None) -> str:
    """A role EventBridge Scheduler may assume, allowed to invoke ``may_invoke``; its ARN."""
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "scheduler.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
            }
        ],
    }
    role = clients.iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))
    if may_invoke:
        statement = {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": may_invoke}
        clients.iam.put_role_policy(
            RoleName=name,
            PolicyName="invoke",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [statement]}),
        )
    return role["Role"]["Arn"]


def every_minute(clients, name: str, function_arn: str, role: str, body: dict) -> None:
    clients.scheduler.create_schedule(
        Name=name,
        ScheduleExpression="rate(1 minute)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": function_arn, "RoleArn": role, "Input": json.dumps(body)},
    )


def test_a_rate_schedule_invokes_its_function_right_away_with_its_role(
    clients, local_runtime, unique
):
    function = f"polled-{unique}"
    function_arn = logging_function(clients, function)
    role = schedule_role(clients, f"schedule-{unique}", function_arn)
    config_uri = f"s3://ferry-work/configs/{unique}.yml"
    name = f"poller-{unique}"
    body = {"configUri": config_uri, "due": "<aws.scheduler.scheduled-time>"}
    every_minute(clients, name, function_arn, role, body)
    try:
        received = wait_for_event(local_runtime, function, seconds=45)
    finally:
        clients.scheduler.delete_schedule(Name=name)
    assert received["configUri"] == config_uri
    assert ISO_SECONDS.fullmatch(received["due"])


def test_a_schedule_whose_role_may_not_invoke_its_function_is_refused(
    clients, local_runtime, unique
):
    function = f"unpolled-{unique}"
    function_arn = logging_function(clients, function)
    role = schedule_role(clients, f"schedule-{unique}", may_invoke=None)
    name = f"refused-{unique}"
    every_minute(clients, name, function_arn, role, {"configUri": "s3://ferry-work/x.yml"})
    try:
        deadline, refusals = time.monotonic() + 30, []
        while not refusals and time.monotonic() < deadline:
            time.sleep(0.5)
            refusals = [d for d in denials(local_runtime) if d["resource"] == function_arn]
    finally:
        clients.scheduler.delete_schedule(Name=name)
    assert [d["action"] for d in refusals] == ["lambda:InvokeFunction"]
    assert refusals[0]["caller"].endswith(f"assumed-role/schedule-{unique}/scheduler")
    assert logged_events(local_runtime, function) == []


def test_a_deployed_rule_with_its_function_permission_invokes_the_function(
    clients, local_runtime, unique
):
    """What the CDK's ``LambdaFunction`` target synthesizes — a rule with an input transformer
    and an ``AWS::Lambda::Permission`` — deployed by the local runtime, delivers."""
    database, config_uri = f"sales_{unique}", f"s3://ferry-work/configs/{unique}.yml"
    function = f"deployed-{unique}"
    template = {
        "Resources": {
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "RoleName": function,
                    "AssumeRolePolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "lambda.amazonaws.com"},
                                "Action": "sts:AssumeRole",
                            }
                        ],
                    },
                },
            },
            "Function": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "FunctionName": function,
                    "Runtime": "python3.12",
                    "Handler": LOGGING_HANDLER,
                    "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                    "Timeout": 30,
                },
            },
            "Rule": {
                "Type": "AWS::Events::Rule",
                "Properties": {
                    "Name": f"deployed-{unique}",
                    "EventPattern": {
                        "source": ["aws.glue"],
                        "detail": {"databaseName": [database]},
                    },
                    "Targets": [
                        {
                            "Id": "catalog-events",
                            "Arn": {"Fn::GetAtt": ["Function", "Arn"]},
                            "InputTransformer": {
                                "InputPathsMap": {},
                                "InputTemplate": f'{{"configUri": "{config_uri}", '
                                '"event": <aws.events.event.json>}',
                            },
                        }
                    ],
                },
            },
            "Permission": {
                "Type": "AWS::Lambda::Permission",
                "Properties": {
                    "Action": "lambda:InvokeFunction",
                    "FunctionName": {"Fn::GetAtt": ["Function", "Arn"]},
                    "Principal": "events.amazonaws.com",
                    "SourceArn": {"Fn::GetAtt": ["Rule", "Arn"]},
                },
            },
        }
    }
    session = boto3.session.Session(region_name=REGION)
    stack.Deployment(
        template, f"Catalog-{unique}", ACCOUNT, REGION, lambda s, r=None: session.client(s, r)
    ).deploy()
    clients.glue.create_database(DatabaseInput={"Name": database})

    received = wait_for_event(local_runtime, function)
    assert received["configUri"] == config_uri
    assert received["event"]["detail"] == {
        "databaseName": database,
        "typeOfChange": "CreateDatabase",
    }
