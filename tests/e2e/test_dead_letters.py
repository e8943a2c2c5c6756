"""Failures outside the state machines, end to end on the local runtime: a fault in the
intake of Glue's events, in the Hive poller and in a forwarding rule's target each lands in
its dead-letter queue, turns its alarms to ALARM and tells the operations topic of its
region; once the fault is gone, ``ferry redrive`` sends the dead letter again and the table
is replicated: no change is lost."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from ferry.catalog.glue import GlueCatalog
from ferry.commands import cli
from ferry.commands.local import run_local_trigger
from ferry.feeds import FeedState, trigger_events
from ferry.local import catalog_triggers as feed_triggers
from ferry.local import deploy
from ferry.local.samples import create_sample_tables, last_days
from tests.conftest import NOW
from tests.e2e.test_catalog_events import add_partitions, glue_config, wait_for
from tests.helpers import config_document

pytestmark = pytest.mark.e2e

ENVIRONMENT = f"ferry-{deploy.ENVIRONMENT}"


def alarm_state(name: str, region: str = deploy.REGION) -> str:
    cloudwatch = boto3.client("cloudwatch", region_name=region)
    (alarm,) = cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"]
    return alarm["StateValue"]


def dead_letters(queue: str, region: str = deploy.REGION) -> list[dict[str, Any]]:
    """The queue's messages, left in it (read with no visibility timeout)."""
    sqs = boto3.client("sqs", region_name=region)
    url = sqs.get_queue_url(QueueName=queue)["QueueUrl"]
    return sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0, MessageAttributeNames=["All"]
    ).get("Messages", [])


def subscribed(topic_arn: str, region: str = deploy.REGION) -> Callable[[], list[dict]]:
    """A queue subscribed to ``topic_arn``: a function that returns the messages so far."""
    sqs = boto3.client("sqs", region_name=region)
    sns = boto3.client("sns", region_name=region)
    name = f"operator-{uuid.uuid4().hex[:12]}"
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=arn)
    received: list[dict] = []

    def messages() -> list[dict]:
        while True:
            batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return received
            for message in batch:
                envelope = json.loads(message["Body"])
                body = json.loads(envelope["Message"])
                received.append({"subject": envelope.get("Subject"), **body})
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    return messages


def told(messages: Callable[[], list[dict]], alarm: str) -> bool:
    return any(m["AlarmName"] == alarm and m["NewStateValue"] == "ALARM" for m in messages())


@pytest.fixture
def glue_source(aws, unique):
    """Sample tables in the emulator's Glue, us-east-1, their files on S3."""
    source_bucket = f"src-{unique}"
    aws["s3"].create_bucket(Bucket=source_bucket)
    glue = GlueCatalog("landing", aws["glue"])
    sample = create_sample_tables(
        glue, f"events_{unique}", f"s3://{source_bucket}/warehouse", last_days(NOW.date(), 2)
    )
    return glue, sample


@pytest.fixture
def operations(pipeline):
    return subscribed(pipeline.outputs["OperationsTopicArn"])


def test_a_catalog_event_the_intake_fails_waits_in_its_queue_alarms_and_is_redriven(
    pipeline, local_runtime, aws, glue_source, bucket, write_config, catalog_triggers, arm,
    operations,
):  # fmt: skip
    glue, sample = glue_source
    config = write_config(glue_config(sample, bucket, "PT1S"))
    uri = deploy.upload_config(aws["s3"], pipeline.work_uri, config)
    assert run_local_trigger(config, local_runtime.state_dir) == 0
    # The invocation and Lambda's two retries fail: the event is given up on.
    arm({"point": "intake.glue-event", "times": 3})
    add_partitions(glue, sample.orders, ["2027-04-01"])

    # The queue and its alarm have one name.
    queue = dead = f"{ENVIRONMENT}-catalog-events-dead-letters"
    errors = f"{ENVIRONMENT}-catalog-events-errors"
    wait_for(lambda: len(dead_letters(queue)) == 1, "the event in the intake's dead-letter queue")
    (letter,) = dead_letters(queue)
    record = json.loads(letter["Body"])
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 3
    assert record["requestContext"]["functionArn"] == (
        f"{pipeline.outputs['CatalogEventsFunctionArn']}:$LATEST"
    )
    assert record["requestPayload"]["configUri"] == uri
    assert record["requestPayload"]["event"]["source"] == "aws.glue"
    assert record["responsePayload"]["errorType"] == "InjectedFault"
    wait_for(lambda: alarm_state(errors) == "ALARM", "the intake's errors alarm")
    wait_for(lambda: alarm_state(dead) == "ALARM", "the intake's dead-letter alarm")
    wait_for(lambda: told(operations, errors) and told(operations, dead), "the operators told")
    replica_db = f"{sample.database}_dr"
    assert glue.get_table(replica_db, "orders") is None  # the change went nowhere else

    arm()  # the cause is fixed
    assert cli.main(["redrive", queue]) == 0
    assert dead_letters(queue) == []

    def replicated() -> bool:
        replica = glue.get_table(replica_db, "orders")
        return replica is not None and ("2027-04-01",) in glue.list_partition_values(replica)

    wait_for(replicated, "the redriven event's partition in the replica")


def test_a_poll_that_fails_waits_in_its_queue_alarms_and_is_redriven(
    pipeline, local_runtime, aws, sample, source_catalog, replica_catalog, write_config,
    catalog_triggers, arm, operations, tmp_path,
):  # fmt: skip
    replica_db = f"{sample.database}_dr"
    config = write_config(
        config_document(
            local_runtime,
            [
                {
                    "source-table": {"database-name": sample.database, "table-name": "orders"},
                    "replica-table": {
                        "database-name": replica_db,
                        "table-location": (tmp_path / "replica" / "orders").as_uri(),
                    },
                }
            ],
            triggers={"catalog-events": {"window": "PT1S", "poll-interval": "PT1S"}},
        )
    )
    uri = deploy.upload_config(aws["s3"], pipeline.work_uri, config)
    state = FeedState(boto3.client("dynamodb"), pipeline.state_table)
    # A poll reads the change and fails before handing it over, three times (armed before
    # the first poll starts: a running poll reads its faults when it starts).
    arm({"point": "poller.read", "times": 3})
    assert run_local_trigger(config, local_runtime.state_dir) == 0
    wait_for(lambda: state.position(uri) is not None, "the poller's first poll")
    day = "2026-12-02"
    add_partitions(source_catalog, sample.orders, [day])

    queue = f"{ENVIRONMENT}-catalog-poller-dead-letters"
    errors = f"{ENVIRONMENT}-catalog-poller-errors"
    wait_for(lambda: len(dead_letters(queue)) == 1, "the poll in the poller's dead-letter queue")
    # The schedule is gone: only the redriven poll can bring the change.
    scheduler = boto3.client("scheduler", region_name=deploy.REGION)
    scheduler.delete_schedule(Name=feed_triggers.schedule_name(config), GroupName=ENVIRONMENT)
    (letter,) = dead_letters(queue)
    record = json.loads(letter["Body"])
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestPayload"] == trigger_events.poller_input(uri)
    assert record["responsePayload"]["errorMessage"] == "injected failure at poller.read"
    wait_for(lambda: alarm_state(errors) == "ALARM", "the poller's errors alarm")
    wait_for(lambda: alarm_state(queue) == "ALARM", "the poller's dead-letter alarm")
    wait_for(lambda: told(operations, errors) and told(operations, queue), "the operators told")
    assert replica_catalog.get_table(replica_db, "orders") is None

    arm()
    assert cli.main(["redrive", queue]) == 0
    assert dead_letters(queue) == []
    wait_for(
        lambda: (
            replica_catalog.get_table(replica_db, "orders") is not None
            and (day,)
            in replica_catalog.list_partition_values(
                replica_catalog.get_table(replica_db, "orders")
            )
        ),
        "the redriven poll's partition in the replica metastore",
    )


WEST = "us-west-2"


def deploy_forwarding(config) -> dict[str, Any]:
    """The stack that forwards the events of the config's Glue catalog in us-west-2 to the
    pipeline's region, synthesized by the CDK app and deployed into the emulator, as
    ``cdk deploy`` deploys it; the template."""
    import aws_cdk as cdk

    from ferry.local import stack
    from infra.forwarding import EventForwarding
    from infra.settings import load_settings

    settings = load_settings(deploy.SETTINGS, deploy.ENVIRONMENT)
    app = cdk.App()
    name = f"{settings.stack_name}-events-{WEST}"
    forwarding = EventForwarding(
        app, name, settings=settings, region=WEST, patterns=[trigger_events.glue_event_pattern(config)]
    )
    template = app.synth().get_stack_by_name(forwarding.stack_name).template
    session = boto3.session.Session(region_name=WEST)

    def client(service: str, region: str | None = None) -> Any:
        return session.client(service, region_name=region or WEST)

    stack.Deployment(template, name, deploy.ACCOUNT, WEST, client).deploy()
    return template


def test_an_event_the_forwarding_rule_cannot_deliver_waits_in_its_region_alarms_and_is_redriven(
    pipeline, local_runtime, aws, unique, bucket, write_config, catalog_triggers, arm,
):  # fmt: skip
    from ferry.config import load_config

    source_bucket = f"src-{unique}"
    boto3.client("s3", region_name=WEST).create_bucket(
        Bucket=source_bucket, CreateBucketConfiguration={"LocationConstraint": WEST}
    )
    west = GlueCatalog("west", boto3.client("glue", region_name=WEST))
    sample = create_sample_tables(
        west, f"landing_{unique}", f"s3://{source_bucket}/warehouse", last_days(NOW.date(), 2)
    )
    replica_db = f"{sample.database}_dr"
    path = write_config(
        {
            "source-catalog": {"name": "west", "glue": {"region": WEST}},
            "replica-catalog": {"name": "dr", "glue": {"region": deploy.REGION}},
            "triggers": {"catalog-events": {"window": "PT1S"}},
            "table-replications": [
                {
                    "source-table": {"database-name": sample.database, "table-name": "orders"},
                    "replica-table": {
                        "database-name": replica_db,
                        "table-location": f"s3://{bucket}/orders",
                    },
                }
            ],
        }
    )
    assert run_local_trigger(path, local_runtime.state_dir) == 0
    # The region's forwarding as the stack deploys it, instead of the rule installed by hand.
    hand_made = feed_triggers.rule_name(path)
    events_west = boto3.client("events", region_name=WEST)
    events_west.remove_targets(Rule=hand_made, Ids=["pipeline"])
    events_west.delete_rule(Name=hand_made)
    deploy_forwarding(load_config(path))
    operators = subscribed(
        f"arn:aws:sns:{WEST}:{deploy.ACCOUNT}:{ENVIRONMENT}-operations", region=WEST
    )
    # The pipeline's bus does not take the forwarded event: every attempt (and the rule's
    # eight retries) fails.
    arm({"point": "eventbridge.event-bus", "times": 100})
    add_partitions(west, sample.orders, ["2027-05-01"])

    queue = f"{ENVIRONMENT}-forwarding-dead-letters"
    failed = f"{ENVIRONMENT}-forwarding-failed-{WEST}-0"
    dead = f"{ENVIRONMENT}-forwarding-dead-letters-{WEST}"
    wait_for(lambda: len(dead_letters(queue, WEST)) == 1, "the event in the forwarding queue")
    (letter,) = dead_letters(queue, WEST)
    attributes = {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}
    assert attributes["TARGET_ARN"] == f"arn:aws:events:{deploy.REGION}:{deploy.ACCOUNT}:event-bus/default"
    assert attributes["ERROR_CODE"] == "InjectedFault"
    assert attributes["RETRY_ATTEMPTS"] == "8"
    event = json.loads(letter["Body"])
    assert (event["source"], event["region"]) == ("aws.glue", WEST)
    assert event["detail"]["databaseName"] == sample.database
    for alarm in (failed, dead):
        wait_for(lambda alarm=alarm: alarm_state(alarm, WEST) == "ALARM", f"{alarm} in ALARM")
    wait_for(lambda: told(operators, failed) and told(operators, dead), "the operators told")
    assert west.get_table(replica_db, "orders") is None
    glue_east = GlueCatalog("dr", aws["glue"])
    assert glue_east.get_table(replica_db, "orders") is None

    arm()
    assert cli.main(["redrive", queue, "--region", WEST]) == 0
    assert dead_letters(queue, WEST) == []

    def replicated() -> bool:
        replica = glue_east.get_table(replica_db, "orders")
        return replica is not None and ("2027-05-01",) in glue_east.list_partition_values(replica)

    wait_for(replicated, "the redriven event's partition in the replica")


def test_a_start_an_installed_s3_trigger_could_not_deliver_waits_in_the_triggers_queue(
    pipeline, local_runtime, aws, glue_source, bucket, unique, write_config, arm, operations
):
    """A rule `ferry local trigger` installs fails into the stack's triggers' queue, as the
    stack's own rules do, and is redriven from there."""
    glue, sample = glue_source
    document = glue_config(sample, bucket, "PT1S")
    document["triggers"] = {"s3": [{"bucket": f"src-{unique}", "prefix": "warehouse/"}]}
    config = write_config(document)
    assert run_local_trigger(config, local_runtime.state_dir) == 0
    queue = f"{ENVIRONMENT}-trigger-dead-letters"
    assert dead_letters(queue) == []
    # The rule's delivery to the state machine and its retries fail: the start is given up on.
    arm({"point": "eventbridge.states", "times": 100})
    marker = f"warehouse/{sample.database}.db/orders/_SUCCESS"
    aws["s3"].put_object(Bucket=f"src-{unique}", Key=marker, Body=b"")
    wait_for(lambda: len(dead_letters(queue)) == 1, "the start in the triggers' queue", 300)
    (letter,) = dead_letters(queue)
    started = json.loads(letter["Body"])
    assert started["source"] == "aws.s3"
    assert started["detail"]["object"]["key"] == marker
    wait_for(lambda: alarm_state(queue) == "ALARM", "the triggers' dead-letter alarm")
    wait_for(lambda: told(operations, queue), "the operators told")
    replica_db = f"{sample.database}_dr"
    assert glue.get_table(replica_db, "orders") is None  # no run started

    arm()  # the cause is fixed
    assert cli.main(["redrive", queue]) == 0
    assert dead_letters(queue) == []
    wait_for(lambda: glue.get_table(replica_db, "orders") is not None, "the redriven run's replica")
