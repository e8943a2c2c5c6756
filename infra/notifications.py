"""Topics: replication events for consumers (START, SUCCESS, FAILURE) and alarms for operators."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct


class ReplicationEvents(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, topic_name: str, key: kms.IKey):
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self,
            "Topic",
            topic_name=topic_name,
            display_name="Ferry replication events",
            master_key=key,
            enforce_ssl=True,
        )


class OperationsTopic(Construct):
    """Where alarms go: e-mail subscriptions from the environment's ``alarm-emails``."""

    def __init__(
        self, scope: Construct, construct_id: str, *, environment: str, key: kms.IKey,
        emails: list[str],
    ):  # fmt: skip
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self,
            "Topic",
            topic_name=f"ferry-{environment}-operations",
            display_name="Ferry alarms",
            master_key=key,
            enforce_ssl=True,
        )
        # A topic policy replaces SNS's default one, and ``enforce_ssl`` writes one (its TLS
        # Deny): without this Allow, CloudWatch may not publish the alarms to the topic. Only
        # this environment's alarms, of this account.
        stack = Stack.of(self)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AlarmsOfThisEnvironment",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "ArnLike": {"aws:SourceArn": alarm_arn_pattern(stack, environment)},
                    "StringEquals": {"aws:SourceAccount": stack.account},
                },
            )
        )
        for email in emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))


def alarm_name_prefix(environment: str) -> str:
    """Every alarm of an environment is named ``ferry-<env>-...`` (``infra/operations.py``)."""
    return f"ferry-{environment}-"


def alarm_arn_pattern(stack: Stack, environment: str) -> str:
    return stack.format_arn(
        service="cloudwatch",
        resource="alarm",
        resource_name=f"{alarm_name_prefix(environment)}*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
