"""What starts executions: the triggers the replication configs declare, and housekeeping.

A config's ``triggers.schedule`` becomes an EventBridge Scheduler schedule, each of its
``triggers.s3`` an EventBridge rule on S3 "Object Created" events, with the same pattern
and input as ``ferry local trigger`` installs locally (``ferry/feeds/trigger_events.py``). Its
``triggers.catalog-events`` becomes, for a Glue source, an EventBridge rule on Glue's Data
Catalog events whose target is the CatalogEvents function, and for a Hive source a schedule
that starts the CatalogPoller function every minute. A bucket or a Glue catalog in another
region (the disaster-recovery path) gets its events forwarded by a small stack in that
region (``infra/forwarding.py``) to this region's default bus, where the rule matches; a Glue
catalog of another account forwards its events itself, and the default bus allows that
account to put them. Housekeeping runs on the settings' schedule, once per config.

What a rule or a schedule could not deliver, after its retries, goes to the triggers'
dead-letter queue (``infra/dead_letters.py``); a forwarding stack has a queue, a topic and
alarms of its own, in its own region.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import Duration, RemovalPolicy, TimeZone
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ferry.config import ReplicationConfig
from ferry.failover import trigger_names as names
from ferry.feeds import trigger_events
from infra.access import allow, trusted_service
from infra.configs import ReplicationConfigs
from infra.dead_letters import (
    TARGET_MAX_EVENT_AGE,
    TARGET_RETRY_ATTEMPTS,
    allow_events_to_send,
    dead_letter_queue,
)
from infra.encryption import Encryption
from infra.settings import EnvironmentSettings


def housekeeping_input(config_uri: str) -> dict[str, Any]:
    """The housekeeping definition's input for one config (``events/housekeeping.json``)."""
    return {"configUri": config_uri, "tables": [], "dryRun": False, "vacuum": False,
            "deleteOrphans": False}  # fmt: skip


#: EventBridge rules and Scheduler schedules: at most 64 characters.
LONGEST_TRIGGER_NAME = names.LONGEST_TRIGGER_NAME


def config_resource_name(settings: EnvironmentSettings, config_name: str, suffix: str) -> str:
    """``ferry-<environment>-<config>[suffix]``, the config's part shortened (with a digest)
    when the whole would not fit a rule's or a schedule's name (``ferry.failover.trigger_names``:
    a failover finds them by the same names)."""
    return names.trigger_name(settings.name, config_name, suffix)


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
        catalog_events: lambda_.IFunction,
        catalog_poller: lambda_.IFunction,
    ):
        super().__init__(scope, construct_id)
        self.schedules: list[scheduler.Schedule | scheduler.CfnSchedule] = []
        self.rules: list[events.CfnRule] = []
        # The environment's schedules in a group of their own: its metrics (target errors,
        # dropped invocations) are the alarms' (infra/operations.py). The group holds nothing
        # worth keeping once the stack is gone.
        self.schedule_group = scheduler.ScheduleGroup(
            self,
            "Schedules",
            schedule_group_name=names.schedule_group(settings.name),
            removal_policy=RemovalPolicy.DESTROY,
        )
        # What a rule or a schedule could not deliver: EventBridge sends it on the queue's
        # policy, Scheduler with the schedule's role.
        self.dead_letters = dead_letter_queue(
            self,
            "DeadLetters",
            name=f"ferry-{settings.name}-trigger-dead-letters",
            key=encryption.key,
            what="an event a rule, or a start a schedule, could not deliver after its retries",
        )
        allow_events_to_send(self.dead_letters, encryption.key)
        self._build_roles(settings, replication, encryption, catalog_poller)
        accounts: set[str] = set()
        for index, (path, config) in enumerate(settings.configs.items()):
            accounts |= self._config_triggers(
                index, path, config, settings=settings, configs=configs,
                replication=replication, housekeeping=housekeeping, encryption=encryption,
                catalog_events=catalog_events, catalog_poller=catalog_poller,
            )  # fmt: skip
        if accounts:
            self._allow_glue_accounts(settings, accounts)

    def _build_roles(
        self, settings: EnvironmentSettings, replication: sfn.IStateMachine,
        encryption: Encryption, catalog_poller: lambda_.IFunction,
    ) -> None:  # fmt: skip
        """The roles the schedules, the rules and the Hive pollers' schedules act with."""
        # The role the schedules start executions with: each schedule's target adds its
        # machine and the dead-letter queue; sending to an encrypted queue also needs a data
        # key, which the target does not add.
        self.schedule_role = iam.Role(
            self,
            "ScheduleRole",
            assumed_by=trusted_service(
                "scheduler.amazonaws.com",
                settings.account,
                [self.schedule_group.schedule_group_arn],  # Scheduler names the group
            ),
            description="EventBridge Scheduler starts replications and housekeeping",
        )
        allow(self.schedule_role, ["kms:GenerateDataKey"], [encryption.key.key_arn])
        self.rule_role = rule_role = iam.Role(
            self,
            "RuleRole",
            # This account's rules named ferry-…: the stack's, and those `ferry local trigger`
            # or a person adds (any region's bus: the local runtime's rule of another region's
            # bucket starts the execution itself).
            assumed_by=trusted_service(
                "events.amazonaws.com",
                settings.account,
                [f"arn:aws:events:*:{settings.account}:rule/ferry-*"],
            ),
            description="EventBridge rules start replications",
        )
        replication.grant_start_execution(rule_role)
        # The role the Hive pollers' schedules invoke the poller with: that function only.
        self.poller_role = iam.Role(
            self,
            "PollerScheduleRole",
            assumed_by=trusted_service(
                "scheduler.amazonaws.com",
                settings.account,
                [self.schedule_group.schedule_group_arn],  # Scheduler names the group
            ),
            description="EventBridge Scheduler starts the Hive notification log pollers",
        )
        # Granted whether or not a config of the settings declares a poller: the schedules
        # installed later (`ferry local trigger`, or by hand) use this role too.
        allow(self.poller_role, ["lambda:InvokeFunction"], [catalog_poller.function_arn])
        allow(self.poller_role, ["sqs:SendMessage"], [self.dead_letters.queue_arn])
        allow(self.poller_role, ["kms:GenerateDataKey", "kms:Decrypt"], [encryption.key.key_arn])

    def _config_triggers(
        self, index: int, path: Path, config: ReplicationConfig, *,
        settings: EnvironmentSettings, configs: ReplicationConfigs,
        replication: sfn.IStateMachine, housekeeping: sfn.IStateMachine, encryption: Encryption,
        catalog_events: lambda_.IFunction, catalog_poller: lambda_.IFunction,
    ) -> set[str]:  # fmt: skip
        """What one config declares (its schedule, its S3 rules, its catalog events) and its
        housekeeping schedule; the other accounts whose Glue catalogs it reads events of."""
        accounts: set[str] = set()
        uri = configs.uri(path)
        name = path.stem
        declared = config.triggers
        if declared.schedule is not None:
            self._schedule(
                f"Schedule{index}",
                name=config_resource_name(settings, name, names.SCHEDULE_SUFFIX),
                description=f"Replicate {path}",
                expression=declared.schedule.expression,
                time_zone=declared.schedule.time_zone,
                machine=replication,
                execution_input=trigger_events.scheduled_input(uri, declared.schedule),
                key=encryption.key,
            )
        for number, trigger in enumerate(declared.s3):
            self.rules.append(
                events.CfnRule(
                    self,
                    f"S3Trigger{index}x{number}",
                    name=config_resource_name(settings, name, names.s3_rule_suffix(number)),
                    description=f"{trigger_events.describe_s3_trigger(trigger)} "
                    f"starts a replication of {path}",
                    event_pattern=trigger_events.s3_event_pattern(trigger),
                    state="ENABLED",
                    targets=[
                        events.CfnRule.TargetProperty(
                            id="replicate",
                            arn=replication.state_machine_arn,
                            role_arn=self.rule_role.role_arn,
                            input_transformer=events.CfnRule.InputTransformerProperty(
                                input_paths_map=dict(trigger_events.S3_INPUT_PATHS),
                                input_template=trigger_events.s3_input_template(uri),
                            ),
                            **rule_target_failures(self.dead_letters),
                        )
                    ],
                )
            )
        if declared.catalog_events is not None:
            if config.source_catalog.glue is not None:
                self._glue_rule(index, name, path.name, uri, config, catalog_events, settings)
                account = config.source_catalog.glue.catalog_id
                if account and account != settings.account:
                    accounts.add(account)
            else:
                self._poller_schedule(index, name, path.name, uri, catalog_poller, settings)
        self._schedule(
            f"Housekeeping{index}",
            name=config_resource_name(settings, name, names.HOUSEKEEPING_SUFFIX),
            description=f"Delete the expired snapshots of {path}",
            expression=settings.housekeeping_schedule,
            time_zone=None,
            machine=housekeeping,
            execution_input=housekeeping_input(uri),
            key=encryption.key,
        )
        return accounts

    def _allow_glue_accounts(self, settings: EnvironmentSettings, accounts: set[str]) -> None:
        """The default bus takes the events of the other accounts' Glue catalogs."""
        # A Glue catalog of another account: that account forwards its aws.glue events
        # to this bus (a rule of its own: docs/CONFIGURATION.md, Catalog events); the bus
        # lets it.
        events.CfnEventBusPolicy(
            self,
            "GlueAccounts",
            statement_id=f"ferry-{settings.name}-glue-accounts",
            statement={
                "Sid": f"ferry-{settings.name}-glue-accounts",
                "Effect": "Allow",
                "Principal": {"AWS": [f"arn:aws:iam::{a}:root" for a in sorted(accounts)]},
                "Action": "events:PutEvents",
                "Resource": f"arn:aws:events:{settings.region}:{settings.account}"
                ":event-bus/default",
            },
        )

    def _glue_rule(
        self, index: int, name: str, file_name: str, uri: str, config: ReplicationConfig,
        function: lambda_.IFunction, settings: EnvironmentSettings,
    ) -> None:  # fmt: skip
        """AWS Glue's events of the config's source databases go to the CatalogEvents
        function, the event whole with the config's URI; EventBridge may invoke it for this
        rule only."""
        rule = events.CfnRule(
            self,
            f"CatalogEvents{index}",
            name=config_resource_name(settings, name, names.CATALOG_EVENTS_SUFFIX),
            description=f"Changes of the Glue tables of {file_name} start their replications",
            event_pattern=trigger_events.glue_event_pattern(config),
            state="ENABLED",
            targets=[
                events.CfnRule.TargetProperty(
                    id="intake",
                    arn=function.function_arn,
                    input_transformer=events.CfnRule.InputTransformerProperty(
                        input_paths_map={},
                        input_template=trigger_events.catalog_event_input_template(uri),
                    ),
                    **rule_target_failures(self.dead_letters),
                )
            ],
        )
        self.rules.append(rule)
        lambda_.CfnPermission(
            self,
            f"CatalogEvents{index}Invoke",
            action="lambda:InvokeFunction",
            function_name=function.function_arn,
            principal="events.amazonaws.com",
            source_arn=rule.attr_arn,
            source_account=settings.account,
        )

    def _poller_schedule(
        self, index: int, name: str, file_name: str, uri: str, function: lambda_.IFunction,
        settings: EnvironmentSettings,
    ) -> None:  # fmt: skip
        """The Hive poller of one config, started every minute; a start that fails is not
        retried (the next one reads from where the last stopped), and goes to the dead-letter
        queue. (A poll that fails goes to the poller's own, ``infra/functions.py``.)

        A schedule of its own making (not the L2 target, which would also grant the role the
        function's versions and aliases): the role may invoke the poller's ARN and nothing
        else.
        """
        schedule = scheduler.CfnSchedule(
            self,
            f"CatalogPoller{index}",
            name=config_resource_name(settings, name, names.CATALOG_POLLER_SUFFIX),
            description=f"Read the source notification log of {file_name}",
            group_name=self.schedule_group.schedule_group_name,
            schedule_expression=trigger_events.POLLER_SCHEDULE,
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            state="ENABLED",
            target=scheduler.CfnSchedule.TargetProperty(
                arn=function.function_arn,
                role_arn=self.poller_role.role_arn,
                input=json.dumps(trigger_events.poller_input(uri)),
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                    maximum_retry_attempts=trigger_events.POLLER_RETRY_POLICY[
                        "MaximumRetryAttempts"
                    ],
                    maximum_event_age_in_seconds=trigger_events.POLLER_RETRY_POLICY[
                        "MaximumEventAgeInSeconds"
                    ],
                ),
                dead_letter_config=scheduler.CfnSchedule.DeadLetterConfigProperty(
                    arn=self.dead_letters.queue_arn
                ),
            ),
        )
        schedule.node.add_dependency(self.schedule_group)
        self.schedules.append(schedule)

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
        schedule = scheduler.Schedule(
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
                dead_letter_queue=self.dead_letters,
                role=self.schedule_role,
            ),
            key=key,
            schedule_group=self.schedule_group,
        )
        # The group is named, not referenced: without this, CloudFormation may create the
        # schedule before its group (and fail).
        schedule.node.add_dependency(self.schedule_group)
        self.schedules.append(schedule)


def rule_target_failures(queue: sqs.IQueue) -> dict[str, Any]:
    """A rule target's retries and where it goes when they are spent (``CfnRule.Target``)."""
    return {
        "dead_letter_config": events.CfnRule.DeadLetterConfigProperty(arn=queue.queue_arn),
        "retry_policy": events.CfnRule.RetryPolicyProperty(
            maximum_retry_attempts=TARGET_RETRY_ATTEMPTS,
            maximum_event_age_in_seconds=int(TARGET_MAX_EVENT_AGE.to_seconds()),
        ),
    }


def foreign_regions(settings: EnvironmentSettings) -> dict[str, list[dict[str, Any]]]:
    """The event patterns of triggers outside the settings' region, by region: S3 triggers
    on buckets there, and catalog events of Glue catalogs of this account there."""
    found: dict[str, list[dict[str, Any]]] = {}
    for config in settings.configs.values():
        for trigger in config.triggers.s3:
            if trigger.region and trigger.region != settings.region:
                found.setdefault(trigger.region, []).append(
                    trigger_events.s3_event_pattern(trigger)
                )
        glue = config.source_catalog.glue
        if (
            config.triggers.catalog_events is not None
            and glue is not None
            and glue.region
            and glue.region != settings.region
            and glue.catalog_id in (None, settings.account)
        ):
            found.setdefault(glue.region, []).append(trigger_events.glue_event_pattern(config))
    return found
