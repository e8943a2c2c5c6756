"""One Ferry deployment per environment (dev, prod, ...)."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack, Tags
from constructs import Construct

from infra.notifications import ReplicationEvents
from infra.storage import WorkBucket


class FerryStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, environment: str, **kwargs: Any):
        super().__init__(scope, construct_id, **kwargs)
        Tags.of(self).add("project", "ferry")
        Tags.of(self).add("environment", environment)
        self.events = ReplicationEvents(self, "ReplicationEvents", environment=environment)
        self.work = WorkBucket(self, "Work")
        CfnOutput(self, "ReplicationEventsTopicArn", value=self.events.topic.topic_arn)
        CfnOutput(self, "WorkBucketName", value=self.work.bucket.bucket_name)
