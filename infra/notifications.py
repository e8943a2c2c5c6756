"""The SNS topic that tells consumers about every replication (START, SUCCESS, FAILURE)."""

from __future__ import annotations

from aws_cdk import aws_sns as sns
from constructs import Construct


class ReplicationEvents(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, environment: str):
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self,
            "Topic",
            topic_name=f"ferry-{environment}-replication-events",
            display_name="Ferry replication events",
            enforce_ssl=True,
        )
