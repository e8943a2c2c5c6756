"""``ferry redrive QUEUE`` on moto: a queue that does not exist is one line and exit 2; a
message of no known shape stays in the queue (exit 1); a schedule's undelivered start and a
rule's undelivered event go again to their target, as the rule delivers it, and leave the
queue. (A failed invocation's record, sent again to its function, is the end-to-end tests':
tests/e2e/test_dead_letters.py.)"""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from ferry.commands.cli import main
from ferry.commands.dead_letters import target_input
from ferry.feeds import trigger_events

REGION = "us-east-1"
ACCOUNT = "123456789012"


@pytest.fixture
def aws(monkeypatch):
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield {name: boto3.client(name, region_name=REGION) for name in ("sqs", "events")}


def queue(aws, name: str) -> str:
    return aws["sqs"].create_queue(QueueName=name)["QueueUrl"]


def left(aws, url: str) -> list[dict]:
    return aws["sqs"].receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0
    ).get("Messages", [])


def test_a_queue_that_does_not_exist_is_one_line_and_exit_2(aws, capsys):
    assert main(["redrive", "ferry-test-no-such-queue"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert error == [f"ferry: error: there is no queue ferry-test-no-such-queue (in {REGION})"]


def test_a_message_of_no_known_shape_stays_in_the_queue(aws, capsys):
    url = queue(aws, "ferry-test-dead-letters")
    aws["sqs"].send_message(QueueUrl=url, MessageBody=json.dumps({"hello": "world"}))
    assert main(["redrive", "ferry-test-dead-letters"]) == 1
    out = capsys.readouterr().out
    assert "not redriven" in out and "0 redriven, 1 left" in out
    assert len(left(aws, url)) == 1


def test_an_undelivered_start_and_an_undelivered_event_go_to_their_targets_again(aws, capsys):
    url = queue(aws, "ferry-test-trigger-dead-letters")
    target = queue(aws, "ferry-test-target")
    target_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:ferry-test-target"
    aws["sqs"].send_message(
        QueueUrl=url,
        MessageBody=json.dumps({"configUri": "s3://work/configs/a.yml"}),
        MessageAttributes={
            "SCHEDULE_ARN": {
                "DataType": "String",
                "StringValue": f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/g/s",
            },
            "TARGET_ARN": {"DataType": "String", "StringValue": target_arn},
        },
    )
    # An S3 trigger's rule, its target the queue with Ferry's input transformer.
    rule = aws["events"].put_rule(Name="ferry-test-s3", EventPattern=json.dumps({"source": ["aws.s3"]}))
    aws["events"].put_targets(
        Rule="ferry-test-s3",
        Targets=[
            {
                "Id": "replicate",
                "Arn": target_arn,
                "InputTransformer": {
                    "InputPathsMap": trigger_events.S3_INPUT_PATHS,
                    "InputTemplate": trigger_events.s3_input_template("s3://work/configs/b.yml"),
                },
            }
        ],
    )
    event = {
        "version": "0", "id": "e-1", "detail-type": "Object Created", "source": "aws.s3",
        "account": ACCOUNT, "time": "2026-11-21T08:30:00Z", "region": REGION, "resources": [],
        "detail": {"bucket": {"name": "landing"}, "object": {"key": "tables/a/_SUCCESS"}},
    }  # fmt: skip
    aws["sqs"].send_message(
        QueueUrl=url,
        MessageBody=json.dumps(event),
        MessageAttributes={
            "RULE_ARN": {"DataType": "String", "StringValue": rule["RuleArn"]},
            "TARGET_ARN": {"DataType": "String", "StringValue": target_arn},
        },
    )
    assert main(["redrive", "ferry-test-trigger-dead-letters"]) == 0
    assert "2 redriven, 0 left" in capsys.readouterr().out
    assert left(aws, url) == []
    received = sorted(json.dumps(json.loads(m["Body"]), sort_keys=True) for m in left(aws, target))
    rule_input = target_input(
        {
            "InputTransformer": {
                "InputPathsMap": trigger_events.S3_INPUT_PATHS,
                "InputTemplate": trigger_events.s3_input_template("s3://work/configs/b.yml"),
            }
        },
        event,
        rule["RuleArn"],
    )
    assert rule_input["configUri"] == "s3://work/configs/b.yml"
    assert received == sorted(
        json.dumps(body, sort_keys=True)
        for body in ({"configUri": "s3://work/configs/a.yml"}, rule_input)
    )
