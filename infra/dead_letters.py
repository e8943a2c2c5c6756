"""Where a failure outside the state machines goes: a dead-letter queue, and an alarm.

Step Functions retries and catches what fails inside an execution, and a failed execution
is alarmed on. What starts executions runs outside them: EventBridge rules, Scheduler
schedules, and the functions they invoke asynchronously (the catalog change feeds' intake
and poller). Lambda retries such an invocation twice and then drops the event, EventBridge
and Scheduler drop what they could not deliver after their retries, and none of them fails
an execution: without a queue the change is lost, without an alarm nobody knows. So each of
them sends what failed to a dead-letter queue of this module (encrypted with the stack's
key, kept 14 days), and each queue that holds a message turns an alarm to ALARM; the
README's runbook says how to send the messages again (``ferry redrive``).
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ferry.feeds import trigger_events

#: How long a dead letter waits for its redrive (SQS's longest).
RETENTION = Duration.days(14)
#: Lambda's asynchronous invocations: its two retries, within six hours (its longest).
ASYNC_RETRY_ATTEMPTS = 2
ASYNC_MAX_EVENT_AGE = Duration.hours(6)
#: EventBridge rules' and Scheduler schedules' targets: a few retries within two hours, as
#: the rules and schedules ``ferry local trigger`` installs (``ferry.feeds.trigger_events``).
TARGET_RETRY_ATTEMPTS = trigger_events.TARGET_RETRY_ATTEMPTS
TARGET_MAX_EVENT_AGE = Duration.seconds(trigger_events.TARGET_MAX_EVENT_AGE_SECONDS)
#: The alarms' period.
PERIOD = Duration.minutes(5)


def dead_letter_queue(
    scope: Construct, construct_id: str, *, name: str, key: kms.IKey, what: str
) -> sqs.Queue:
    """A queue of dead letters (``what`` fails into it), encrypted with ``key``, TLS only."""
    queue = sqs.Queue(
        scope,
        construct_id,
        queue_name=name,
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=key,
        data_key_reuse=Duration.hours(1),
        enforce_ssl=True,
        retention_period=RETENTION,
        # Its messages are redriven or given up on by an operator, never by a deploy: a stack
        # deleted with dead letters in them would lose them (CloudFormation keeps it then).
        removal_policy=RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    )
    Validations.of(queue).acknowledge(
        Acknowledgment(
            id="AwsSolutions-SQS3",
            reason=f"This queue is itself a dead-letter queue: {what} fails into it",
        )
    )
    return queue


def allow_events_to_send(queue: sqs.Queue, key: kms.IKey) -> None:
    """EventBridge sends a rule's undelivered events to ``queue`` on the queue's policy (its
    rules of this account and region only), and encrypts them with ``key``."""
    stack = Stack.of(queue)
    rules = stack.format_arn(service="events", resource="rule", resource_name="*")
    queue.add_to_resource_policy(
        iam.PolicyStatement(
            sid="UndeliveredEventsOfThisAccountsRules",
            principals=[iam.ServicePrincipal("events.amazonaws.com")],
            actions=["sqs:SendMessage"],
            resources=[queue.queue_arn],
            conditions={"ArnLike": {"aws:SourceArn": rules}},
        )
    )
    allow_events_key(key)


def allow_events_key(key: kms.IKey) -> None:
    """EventBridge encrypts the undelivered events of this account's rules with ``key``."""
    rules = Stack.of(key).format_arn(service="events", resource="rule", resource_name="*")
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="EventBridgeDeadLetters",
            principals=[iam.ServicePrincipal("events.amazonaws.com")],
            actions=["kms:Decrypt", "kms:GenerateDataKey"],
            resources=["*"],
            conditions={"ArnLike": {"aws:SourceArn": rules}},
        )
    )


def depth_metric(queue: sqs.IQueue) -> cloudwatch.IMetric:
    """The dead letters waiting in ``queue`` (the most seen in a period)."""
    return queue.metric_approximate_number_of_messages_visible(
        period=PERIOD, statistic="Maximum"
    )
