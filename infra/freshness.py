"""The freshness check's schedule: every ``freshness-check-rate`` (5 minutes by default),
EventBridge Scheduler invokes the FreshnessCheck function with every config the environment
deploys; it measures each table's freshness from the catalogs and the state table and
publishes it (``ferry.freshness.metrics``), which the ``rpo-breached`` alarm and the
dashboard read (``infra/operations.py``).

As the Hive pollers' schedules: a start is not retried (the next one comes within the
period), a start that could not be delivered goes to the triggers' dead-letter queue, and
the schedule's role may invoke this function and nothing else.
"""

from __future__ import annotations

import json

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from infra.access import allow, trusted_service
from infra.configs import ReplicationConfigs
from infra.encryption import Encryption
from infra.settings import EnvironmentSettings
from infra.triggers import Triggers


def check_input(config_uris: list[str]) -> dict[str, list[str]]:
    """The check's input (``events/freshness_check.json``)."""
    return {"configUris": config_uris}


def schedule_name(environment: str) -> str:
    """``ferry-<environment>-freshness-check`` (≤ 43 characters: a schedule's limit is 64)."""
    return f"ferry-{environment}-freshness-check"


class FreshnessCheck(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        configs: ReplicationConfigs,
        function: lambda_.IFunction,
        triggers: Triggers,
        encryption: Encryption,
    ):
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "ScheduleRole",
            assumed_by=trusted_service(
                "scheduler.amazonaws.com",
                settings.account,
                [triggers.schedule_group.schedule_group_arn],  # Scheduler names the group
            ),
            description="EventBridge Scheduler starts the freshness check",
        )
        allow(self.role, ["lambda:InvokeFunction"], [function.function_arn])
        allow(self.role, ["sqs:SendMessage"], [triggers.dead_letters.queue_arn])
        allow(self.role, ["kms:GenerateDataKey", "kms:Decrypt"], [encryption.key.key_arn])
        period = settings.freshness_check_minutes * 60
        self.schedule = scheduler.CfnSchedule(
            self,
            "Schedule",
            name=schedule_name(settings.name),
            description="Measure every replicated table's freshness and publish it",
            group_name=triggers.schedule_group.schedule_group_name,
            schedule_expression=settings.freshness_check_rate,
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            state="ENABLED",
            target=scheduler.CfnSchedule.TargetProperty(
                arn=function.function_arn,
                role_arn=self.role.role_arn,
                input=json.dumps(check_input([configs.uri(p) for p in settings.configs])),
                # The next check comes within the period: a start is not retried, and one
                # older than the period is dropped to the dead-letter queue.
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                    maximum_retry_attempts=0, maximum_event_age_in_seconds=period
                ),
                dead_letter_config=scheduler.CfnSchedule.DeadLetterConfigProperty(
                    arn=triggers.dead_letters.queue_arn
                ),
            ),
        )
        self.schedule.node.add_dependency(triggers.schedule_group)
