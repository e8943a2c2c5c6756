"""Topics: replication events for consumers (START, SUCCESS, FAILURE) and alarms for operators."""

from __future__ import annotations

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
        for email in emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
