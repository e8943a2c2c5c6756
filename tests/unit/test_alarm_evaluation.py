"""The emulator's alarms (``ferry.local.emulator_cloudwatch``) and its schedules' dead letters
(``ferry.local.emulator_scheduler``), evaluated on moto's own backends: an alarm turns to
ALARM from the datapoints stored, from a metric math expression and from a queue's depth,
back to OK once they age out, and tells its topic of each change."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from moto import mock_aws

from ferry.local.emulator_cloudwatch import AlarmEvaluator
from ferry.local.emulator_scheduler import Scheduler

REGION = "us-east-1"


@pytest.fixture
def aws(monkeypatch):
    # moto's in-process backends, which the evaluator reads: not the session's emulator.
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        session = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        yield {name: session.client(name) for name in ("cloudwatch", "sns", "sqs", "scheduler")}


@pytest.fixture
def operators(aws):
    """The operations topic, a queue subscribed to it: (topic ARN, messages so far)."""
    topic = aws["sns"].create_topic(Name="ferry-test-operations")["TopicArn"]
    url = aws["sqs"].create_queue(QueueName="operator")["QueueUrl"]
    arn = aws["sqs"].get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    aws["sns"].subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)

    def messages() -> list[dict]:
        found = aws["sqs"].receive_message(QueueUrl=url, MaxNumberOfMessages=10)
        return [json.loads(json.loads(m["Body"])["Message"]) for m in found.get("Messages", [])]

    return topic, messages


def state(aws, name: str) -> str:
    (alarm,) = aws["cloudwatch"].describe_alarms(AlarmNames=[name])["MetricAlarms"]
    return alarm["StateValue"]


def errors_alarm(aws, topic: str, treat: str = "notBreaching") -> None:
    aws["cloudwatch"].put_metric_alarm(
        AlarmName="ferry-test-catalog-events-errors",
        AlarmActions=[topic],
        Namespace="AWS/Lambda",
        MetricName="Errors",
        Dimensions=[{"Name": "FunctionName", "Value": "ferry-test-catalog-events"}],
        Statistic="Sum",
        Period=300,
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
        TreatMissingData=treat,
    )


def errors(aws, value: float, function: str = "ferry-test-catalog-events") -> None:
    aws["cloudwatch"].put_metric_data(
        Namespace="AWS/Lambda",
        MetricData=[
            {
                "MetricName": "Errors",
                "Value": value,
                "Dimensions": [{"Name": "FunctionName", "Value": function}],
            }
        ],
    )


def test_an_alarm_turns_on_its_datapoints_tells_its_topic_and_turns_back(aws, operators):
    topic, messages = operators
    errors_alarm(aws, topic)
    evaluator = AlarmEvaluator(None)
    errors(aws, 0)
    errors(aws, 0, function="ferry-test-catalog-poller")  # another function's: not this one
    errors(aws, 1, function="ferry-test-catalog-poller")
    evaluator.evaluate_all()
    assert state(aws, "ferry-test-catalog-events-errors") == "OK"
    assert messages() == []

    errors(aws, 1)
    now = time.time()
    evaluator.evaluate_all(now)
    assert state(aws, "ferry-test-catalog-events-errors") == "ALARM"
    (message,) = messages()
    assert message["AlarmName"] == "ferry-test-catalog-events-errors"
    assert (message["OldStateValue"], message["NewStateValue"]) == ("OK", "ALARM")
    assert message["Trigger"]["MetricName"] == "Errors"
    evaluator.evaluate_all(now + 1)  # no change, no second message
    assert messages() == []

    evaluator.evaluate_all(now + 301)  # the error is older than the period: no data is OK
    assert state(aws, "ferry-test-catalog-events-errors") == "OK"
    assert messages() == []  # the alarm has no OK actions


def test_no_data_is_insufficient_data_when_missing_data_is_missing(aws, operators):
    topic, _ = operators
    errors_alarm(aws, topic, treat="missing")
    AlarmEvaluator(None).evaluate_all()
    assert state(aws, "ferry-test-catalog-events-errors") == "INSUFFICIENT_DATA"


@pytest.mark.parametrize(
    "expression, alarms",
    [
        # As in CloudWatch: a query with no datapoint in the period has no value there, and
        # so neither has a sum of it; FILL gives it one.
        ("FILL(errors, 0) + FILL(dropped, 0)", True),
        ("errors + dropped", False),
    ],
)
def test_a_metric_math_alarm_adds_its_queries(aws, operators, expression, alarms):
    topic, messages = operators
    aws["cloudwatch"].put_metric_alarm(
        AlarmName="ferry-test-schedule-failed",
        AlarmActions=[topic],
        Metrics=[
            {
                "Id": "errors",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "AWS/Scheduler",
                        "MetricName": "TargetErrorCount",
                        "Dimensions": [{"Name": "ScheduleGroup", "Value": "ferry-test"}],
                    },
                    "Period": 300,
                    "Stat": "Sum",
                },
                "ReturnData": False,
            },
            {
                "Id": "dropped",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "AWS/Scheduler",
                        "MetricName": "InvocationDroppedCount",
                        "Dimensions": [{"Name": "ScheduleGroup", "Value": "ferry-test"}],
                    },
                    "Period": 300,
                    "Stat": "Sum",
                },
                "ReturnData": False,
            },
            {"Id": "expr", "Expression": expression, "ReturnData": True},
        ],
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
        TreatMissingData="notBreaching",
    )
    evaluator = AlarmEvaluator(None)
    evaluator.evaluate_all()
    assert state(aws, "ferry-test-schedule-failed") == "OK"
    aws["cloudwatch"].put_metric_data(
        Namespace="AWS/Scheduler",
        MetricData=[
            {
                "MetricName": "TargetErrorCount",
                "Value": 1,
                "Dimensions": [{"Name": "ScheduleGroup", "Value": "ferry-test"}],
            }
        ],
    )
    evaluator.evaluate_all()
    if alarms:
        assert state(aws, "ferry-test-schedule-failed") == "ALARM"
        assert [m["AlarmName"] for m in messages()] == ["ferry-test-schedule-failed"]
    else:  # one of the two had no datapoint: the sum has none, and missing is not breaching
        assert state(aws, "ferry-test-schedule-failed") == "OK"
        assert messages() == []


def test_a_queue_that_holds_a_message_keeps_its_alarm_on(aws, operators):
    topic, messages = operators
    url = aws["sqs"].create_queue(QueueName="ferry-test-catalog-events-dead-letters")["QueueUrl"]
    aws["cloudwatch"].put_metric_alarm(
        AlarmName="ferry-test-catalog-events-dead-letters",
        AlarmActions=[topic],
        Namespace="AWS/SQS",
        MetricName="ApproximateNumberOfMessagesVisible",
        Dimensions=[{"Name": "QueueName", "Value": "ferry-test-catalog-events-dead-letters"}],
        Statistic="Maximum",
        Period=300,
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
        TreatMissingData="notBreaching",
    )
    evaluator = AlarmEvaluator(None)
    now = time.time()
    evaluator.evaluate_all(now)
    assert state(aws, "ferry-test-catalog-events-dead-letters") == "OK"
    aws["sqs"].send_message(QueueUrl=url, MessageBody="{}")
    evaluator.evaluate_all(now + 2)
    assert state(aws, "ferry-test-catalog-events-dead-letters") == "ALARM"
    assert [m["NewStateValue"] for m in messages()] == ["ALARM"]
    aws["sqs"].purge_queue(QueueUrl=url)  # redriven
    evaluator.evaluate_all(now + 4)  # the period's maximum is still 1
    assert state(aws, "ferry-test-catalog-events-dead-letters") == "ALARM"
    evaluator.evaluate_all(now + 310)
    assert state(aws, "ferry-test-catalog-events-dead-letters") == "OK"


def test_an_alarm_tells_no_topic_of_another_region(aws):
    west = boto3.client("sns", region_name="us-west-2")
    topic = west.create_topic(Name="ferry-test-operations")["TopicArn"]
    sqs_west = boto3.client("sqs", region_name="us-west-2")
    url = sqs_west.create_queue(QueueName="operator")["QueueUrl"]
    arn = sqs_west.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    west.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    errors_alarm(aws, topic)
    errors(aws, 1)
    AlarmEvaluator(None).evaluate_all()
    # The state changes; CloudWatch publishes to a topic of the alarm's own region only.
    assert state(aws, "ferry-test-catalog-events-errors") == "ALARM"
    assert sqs_west.receive_message(QueueUrl=url).get("Messages", []) == []


def test_a_schedule_that_cannot_start_its_target_sends_its_input_to_its_dead_letter_queue(aws):
    url = aws["sqs"].create_queue(QueueName="ferry-test-trigger-dead-letters")["QueueUrl"]
    queue = aws["sqs"].get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    aws["scheduler"].create_schedule_group(Name="ferry-test")
    gone = f"arn:aws:states:{REGION}:123456789012:stateMachine:gone"
    aws["scheduler"].create_schedule(
        Name="ferry-test-housekeeping",
        GroupName="ferry-test",
        ScheduleExpression="rate(1 hour)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={
            "Arn": gone,
            "RoleArn": "arn:aws:iam::123456789012:role/schedules",
            "Input": json.dumps({"configUri": "s3://work/configs/a.yml"}),
            "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600},
            "DeadLetterConfig": {"Arn": queue},
        },
    )
    Scheduler(None).tick(time.time())
    (letter,) = aws["sqs"].receive_message(QueueUrl=url, MessageAttributeNames=["All"])[
        "Messages"
    ]
    assert json.loads(letter["Body"]) == {"configUri": "s3://work/configs/a.yml"}
    attributes = {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}
    assert attributes["TARGET_ARN"] == gone
    assert attributes["SCHEDULE_ARN"].endswith(":schedule/ferry-test/ferry-test-housekeeping")
    statistics = aws["cloudwatch"].get_metric_statistics(
        Namespace="AWS/Scheduler",
        MetricName="TargetErrorCount",
        Dimensions=[{"Name": "ScheduleGroup", "Value": "ferry-test"}],
        StartTime=time.time() - 60,
        EndTime=time.time() + 60,
        Period=60,
        Statistics=["Sum"],
    )["Datapoints"]
    assert [d["Sum"] for d in statistics] == [1.0]
