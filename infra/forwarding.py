"""The forwarding stack of a region other than the pipeline's: the events there that start
replications (S3's of a source bucket, Glue's of a source catalog of this account) go to the
pipeline's default bus, where the triggers' rules match them (``infra/triggers.py``).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Environment, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.access import trusted_service
from infra.alarms import failure_alarm
from infra.dead_letters import (
    PERIOD,
    TARGET_MAX_EVENT_AGE,
    TARGET_RETRY_ATTEMPTS,
    allow_events_key,
    dead_letter_queue,
    depth_metric,
)
from infra.encryption import Encryption
from infra.notifications import OperationsTopic
from infra.settings import EnvironmentSettings


class EventForwarding(Stack):
    """In a source bucket's or Glue catalog's region: forward the events that start
    replications to the pipeline's region.

    An event the pipeline's bus did not take, after the rule's retries, goes to this
    region's dead-letter queue; a forwarding that failed and a dead letter each turn an
    alarm of this region to ALARM, told to this region's operations topic (CloudWatch
    publishes to a topic of the alarm's region only), encrypted with this region's key.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, settings: EnvironmentSettings, region: str,
        patterns: list[dict[str, Any]],
    ):  # fmt: skip
        super().__init__(
            scope,
            construct_id,
            env=Environment(account=settings.account, region=region),
            description=f"Ferry {settings.name}: events of {region} to {settings.region}",
        )
        self.settings_name = settings.name
        bus = events.EventBus.from_event_bus_arn(
            self,
            "PipelineBus",
            f"arn:aws:events:{settings.region}:{settings.account}:event-bus/default",
        )
        # One role for the rules' target (the pipeline's bus), for these rules only.
        prefix = f"ferry-{settings.name}-forward-"
        role = iam.Role(
            self,
            "ForwardRole",
            assumed_by=trusted_service(
                "events.amazonaws.com",
                settings.account,
                [f"arn:aws:events:{region}:{settings.account}:rule/{prefix}*"],
            ),
            description=f"Ferry {settings.name}: forward events to {settings.region}",
        )
        self.encryption = Encryption(self, "Encryption", environment=settings.name)
        key = self.encryption.key
        self.topic = OperationsTopic(
            self, "OperationsTopic", environment=settings.name, key=key,
            emails=settings.alarm_emails,
        ).topic  # fmt: skip
        self.dead_letters = dead_letter_queue(
            self,
            "DeadLetters",
            name=f"ferry-{settings.name}-forwarding-dead-letters",
            key=key,
            what=f"an event of {region} the pipeline's bus ({settings.region}) did not take",
        )
        # The rules' target adds the queue's policy for each rule; the key is this module's.
        allow_events_key(key)
        self.rules: list[events.Rule] = []
        self.alarms = []
        for index, pattern in enumerate(patterns):
            self._forward(index, pattern, settings=settings, region=region, bus=bus, role=role)
        self.alarms.append(
            failure_alarm(
                self,
                f"forwarding-dead-letters-{region}",
                environment=settings.name,
                metric=depth_metric(self.dead_letters),
                description=f"Events of {region} wait in the queue "
                f"ferry-{settings.name}-forwarding-dead-letters: the pipeline in "
                f"{settings.region} did not receive them; redrive them once the cause is "
                "fixed (ferry redrive).",
                topic=self.topic,
            )
        )

    def _forward(
        self, index: int, pattern: dict[str, Any], *, settings: EnvironmentSettings,
        region: str, bus: events.IEventBus, role: iam.IRole,
    ) -> None:  # fmt: skip
        """One rule forwarding the events of ``pattern`` to the pipeline's bus, and the alarm
        of its failed forwardings."""
        prefix = f"ferry-{settings.name}-forward-"
        rule = events.Rule(
            self,
            f"Forward{index}",
            rule_name=f"{prefix}{index}",
            description="Events that start a replication in the pipeline's region",
            event_pattern=events.EventPattern(
                source=pattern["source"],
                detail_type=pattern["detail-type"],
                detail=pattern["detail"],
                account=pattern.get("account"),
            ),
            targets=[
                targets.EventBus(bus, role=role, dead_letter_queue=self.dead_letters)
            ],
        )
        # The EventBus target has no retry policy of its own: the rule's, as every other.
        cfn_rule = rule.node.default_child
        assert isinstance(cfn_rule, events.CfnRule)
        cfn_rule.add_property_override(
            "Targets.0.RetryPolicy",
            {
                "MaximumRetryAttempts": TARGET_RETRY_ATTEMPTS,
                "MaximumEventAgeInSeconds": int(TARGET_MAX_EVENT_AGE.to_seconds()),
            },
        )
        self.rules.append(rule)
        self.alarms.append(
            failure_alarm(
                self,
                f"forwarding-failed-{region}-{index}",
                environment=settings.name,
                metric=cloudwatch.Metric(
                    namespace="AWS/Events",
                    metric_name="FailedInvocations",
                    dimensions_map={"RuleName": rule.rule_name},
                    statistic="Sum",
                    period=PERIOD,
                ),
                description=f"A rule of {region} could not forward an event to the "
                f"pipeline's bus in {settings.region} (EventBridge FailedInvocations): "
                f"the event is in the queue ferry-{settings.name}-forwarding-dead-letters "
                f"of {region}; fix the bus's policy or the rule's role, then redrive it "
                "(ferry redrive).",
                topic=self.topic,
            )
        )
