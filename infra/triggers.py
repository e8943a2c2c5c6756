"""What starts executions: the triggers the replication configs declare, and housekeeping.

A config's ``triggers.schedule`` becomes an EventBridge Scheduler schedule, each of its
``triggers.s3`` an EventBridge rule on S3 "Object Created" events, with the same pattern
and input as ``ferry local trigger`` installs locally (``ferry/triggers.py``). A bucket in
another region (the disaster-recovery path) gets its events forwarded by a small stack in
that region (``S3EventForwarding``) to this region's default bus, where the rule matches.
Housekeeping runs on the settings' schedule, once per config.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, Environment, RemovalPolicy, Stack, TimeZone
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ferry import triggers
from infra.configs import ReplicationConfigs
from infra.encryption import Encryption
from infra.settings import EnvironmentSettings


def housekeeping_input(config_uri: str) -> dict[str, Any]:
    """The housekeeping definition's input for one config (``events/housekeeping.json``)."""
    return {"configUri": config_uri, "tables": [], "dryRun": False, "vacuum": False,
            "deleteOrphans": False}  # fmt: skip


class Triggers(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        configs: ReplicationConfigs,
        replication: sfn.IStateMachine,
        housekeeping: sfn.IStateMachine,
        encryption: Encryption,
    ):
        super().__init__(scope, construct_id)
        self.schedules: list[scheduler.Schedule] = []
        self.rules: list[events.CfnRule] = []
        # The environment's schedules in a group of their own: its metrics (target errors,
        # dropped invocations) are the alarms' (infra/operations.py). The group holds nothing
        # worth keeping once the stack is gone.
        self.schedule_group = scheduler.ScheduleGroup(
            self,
            "Schedules",
            schedule_group_name=f"ferry-{settings.name}",
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.rule_role = rule_role = iam.Role(
            self,
            "RuleRole",
            assumed_by=iam.ServicePrincipal("events.amazonaws.com"),
            description="EventBridge rules start replications",
        )
        replication.grant_start_execution(rule_role)
        for index, (path, config) in enumerate(settings.configs.items()):
            uri = configs.uri(path)
            name = path.stem
            declared = config.triggers
            if declared.schedule is not None:
                self._schedule(
                    f"Schedule{index}",
                    name=f"ferry-{settings.name}-{name}",
                    description=f"Replicate {path}",
                    expression=declared.schedule.expression,
                    time_zone=declared.schedule.time_zone,
                    machine=replication,
                    execution_input=triggers.scheduled_input(uri, declared.schedule),
                    key=encryption.key,
                )
            for number, trigger in enumerate(declared.s3):
                self.rules.append(
                    events.CfnRule(
                        self,
                        f"S3Trigger{index}x{number}",
                        name=f"ferry-{settings.name}-{name}-s3-{number}",
                        description=f"{triggers.describe_s3_trigger(trigger)} "
                        f"starts a replication of {path}",
                        event_pattern=triggers.s3_event_pattern(trigger),
                        state="ENABLED",
                        targets=[
                            events.CfnRule.TargetProperty(
                                id="replicate",
                                arn=replication.state_machine_arn,
                                role_arn=rule_role.role_arn,
                                input_transformer=events.CfnRule.InputTransformerProperty(
                                    input_paths_map=dict(triggers.S3_INPUT_PATHS),
                                    input_template=triggers.s3_input_template(uri),
                                ),
                            )
                        ],
                    )
                )
            self._schedule(
                f"Housekeeping{index}",
                name=f"ferry-{settings.name}-{name}-housekeeping",
                description=f"Delete the expired snapshots of {path}",
                expression=settings.housekeeping_schedule,
                time_zone=None,
                machine=housekeeping,
                execution_input=housekeeping_input(uri),
                key=encryption.key,
            )

    def _schedule(
        self,
        construct_id: str,
        *,
        name: str,
        description: str,
        expression: str,
        time_zone: str | None,
        machine: sfn.IStateMachine,
        execution_input: dict[str, Any],
        key: kms.IKey,
    ) -> None:
        """An EventBridge Scheduler schedule that starts ``machine`` with ``execution_input``."""
        self.schedules.append(
            scheduler.Schedule(
                self,
                construct_id,
                schedule_name=name,
                description=description,
                schedule=scheduler.ScheduleExpression.expression(
                    expression, TimeZone.of(time_zone) if time_zone else None
                ),
                target=scheduler_targets.StepFunctionsStartExecution(
                    machine,
                    input=scheduler.ScheduleTargetInput.from_object(execution_input),
                    retry_attempts=3,
                    max_event_age=Duration.hours(1),
                ),
                key=key,
                schedule_group=self.schedule_group,
            )
        )


def foreign_regions(settings: EnvironmentSettings) -> dict[str, list[dict[str, Any]]]:
    """The event patterns of S3 triggers on buckets outside the settings' region, by region."""
    found: dict[str, list[dict[str, Any]]] = {}
    for config in settings.configs.values():
        for trigger in config.triggers.s3:
            if trigger.region and trigger.region != settings.region:
                found.setdefault(trigger.region, []).append(triggers.s3_event_pattern(trigger))
    return found


class S3EventForwarding(Stack):
    """In a source bucket's region: forward its S3 events to the pipeline's region."""

    def __init__(
        self, scope: Construct, construct_id: str, *, settings: EnvironmentSettings, region: str,
        patterns: list[dict[str, Any]],
    ):  # fmt: skip
        super().__init__(
            scope,
            construct_id,
            env=Environment(account=settings.account, region=region),
            description=f"Ferry {settings.name}: S3 events of {region} to {settings.region}",
        )
        bus = events.EventBus.from_event_bus_arn(
            self,
            "PipelineBus",
            f"arn:aws:events:{settings.region}:{settings.account}:event-bus/default",
        )
        for index, pattern in enumerate(patterns):
            events.Rule(
                self,
                f"Forward{index}",
                description="S3 objects that start a replication in the pipeline's region",
                event_pattern=events.EventPattern(
                    source=pattern["source"],
                    detail_type=pattern["detail-type"],
                    detail=pattern["detail"],
                ),
                targets=[targets.EventBus(bus)],
            )
