"""One Ferry deployment: the pipeline of one environment (``infra/environments/<name>.yml``)."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Environment, Stack, Tags
from constructs import Construct

from infra.access import DataAccess
from infra.configs import ReplicationConfigs
from infra.encryption import Encryption
from infra.failback_function import FailbackFunction
from infra.failover import FailoverSwitch
from infra.failover_function import FailoverFunction
from infra.freshness import FreshnessCheck
from infra.functions import Functions
from infra.notifications import OperationsTopic, ReplicationEvents
from infra.operations import Operations, watch_freshness
from infra.pipeline import Pipeline
from infra.settings import EnvironmentSettings
from infra.spark import SparkCopy
from infra.state import ConfigSecret, StateTable
from infra.storage import WorkBucket
from infra.triggers import Triggers


class FerryStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, settings: EnvironmentSettings, **kwargs: Any
    ):
        super().__init__(
            scope,
            construct_id,
            env=Environment(account=settings.account, region=settings.region),
            description=f"Ferry {settings.name}: Hive table replication",
            **kwargs,
        )
        Tags.of(self).add("project", "ferry")
        Tags.of(self).add("environment", settings.name)
        self.settings = settings
        self._build_storage(settings)
        self._build_pipeline(settings)
        self._build_operations(settings)
        self._build_failover(settings)
        self._add_outputs()

    def _build_storage(self, settings: EnvironmentSettings) -> None:
        """The key, the work bucket, the topics, the state table, the secret, the configs and
        the roles' data access."""
        name = settings.name
        self.encryption = Encryption(self, "Encryption", environment=name)
        key = self.encryption.key
        self.work = WorkBucket(self, "Work", key=key, access_log_days=settings.log_retention_days)
        self.events = ReplicationEvents(
            self, "ReplicationEvents", topic_name=settings.events_topic_name, key=key
        )
        self.operations_topic = OperationsTopic(
            self, "OperationsTopic", environment=name, key=key, emails=settings.alarm_emails
        )
        self.state = StateTable(self, "State", environment=name, key=key)
        self.secret = ConfigSecret(
            self, "ConfigSecret", environment=name, key=key, names=sorted(settings.secret_variables)
        )
        self.configs = ReplicationConfigs(self, "Configs", settings=settings)
        self.access = DataAccess(self, settings)

    def _build_pipeline(self, settings: EnvironmentSettings) -> None:
        """The functions, the Spark copy, the state machines and what starts them."""
        self.functions = Functions(
            self,
            "Functions",
            settings=settings,
            encryption=self.encryption,
            work=self.work,
            state=self.state,
            secret=self.secret,
            access=self.access,
            configs=self.configs,
        )
        self.spark = SparkCopy(
            self, "Spark", settings=settings, encryption=self.encryption, work=self.work,
            access=self.access,
        )  # fmt: skip
        self.pipeline = Pipeline(
            self,
            "Pipeline",
            settings=settings,
            encryption=self.encryption,
            work=self.work,
            functions=self.functions,
            spark=self.spark,
        )
        self.triggers = Triggers(
            self,
            "Triggers",
            settings=settings,
            configs=self.configs,
            replication=self.pipeline.replication,
            housekeeping=self.pipeline.housekeeping,
            encryption=self.encryption,
            catalog_events=self.functions.by_name["CatalogEvents"],
            catalog_poller=self.functions.by_name["CatalogPoller"],
        )

    def _build_operations(self, settings: EnvironmentSettings) -> None:
        """The alarms, the dashboard and the freshness check."""
        name = settings.name
        self.operations = Operations(
            self,
            "Operations",
            environment=name,
            topic=self.operations_topic.topic,
            replication=self.pipeline.replication,
            housekeeping=self.pipeline.housekeeping,
            changes=self.pipeline.changes,
            functions=self.functions,
            triggers=self.triggers,
        )
        self.freshness = FreshnessCheck(
            self,
            "FreshnessCheck",
            settings=settings,
            configs=self.configs,
            function=self.functions.by_name["FreshnessCheck"],
            triggers=self.triggers,
            encryption=self.encryption,
        )
        watch_freshness(
            self.operations, environment=name, topic=self.operations_topic.topic,
            check_minutes=settings.freshness_check_minutes,
        )  # fmt: skip

    def _build_failover(self, settings: EnvironmentSettings) -> None:
        """The failover switch and the functions ``ferry failover`` / ``ferry failback``
        invoke."""
        self.failover = FailoverSwitch(
            self,
            "FailoverSwitch",
            settings=settings,
            function=self.functions.by_name["FailoverSwitch"],
            replication=self.pipeline.replication,
            changes=self.pipeline.changes,
            state=self.state,
            triggers=self.triggers,
            encryption=self.encryption,
        )
        self.failover_function = FailoverFunction(
            self,
            "Failover",
            function=self.functions.by_name["Failover"],
            access=self.access,
            configs=self.configs,
            secret=self.secret,
            work=self.work,
            encryption=self.encryption,
        )
        self.failback_function = FailbackFunction(
            self,
            "Failback",
            function=self.functions.by_name["Failback"],
            access=self.access,
            configs=self.configs,
            secret=self.secret,
            work=self.work,
            state=self.state,
            replication=self.pipeline.replication,
            encryption=self.encryption,
            environment=settings.name,
        )

    def _add_outputs(self) -> None:
        """What the commands and the operators read from the deployed stack."""
        outputs = {
            "ReplicationStateMachineArn": self.pipeline.replication.state_machine_arn,
            "HousekeepingStateMachineArn": self.pipeline.housekeeping.state_machine_arn,
            "CatalogChangesStateMachineArn": self.pipeline.changes.state_machine_arn,
            "ReplicationEventsTopicArn": self.events.topic.topic_arn,
            "OperationsTopicArn": self.operations_topic.topic.topic_arn,
            "WorkBucketName": self.work.bucket.bucket_name,
            "StateTableName": self.state.table.table_name,
            "ConfigSecretArn": self.secret.secret.secret_arn,
            "SparkApplicationId": self.spark.application_id,
            # The role EventBridge rules start replications with (for rules added by hand).
            "TriggerRoleArn": self.triggers.rule_role.role_arn,
            # What `ferry local trigger` installs a catalog-events trigger with, as the
            # stack does: the intake of Glue's events, the Hive poller and the role its
            # schedules invoke it with.
            "CatalogEventsFunctionArn": self.functions.by_name["CatalogEvents"].function_arn,
            "CatalogPollerFunctionArn": self.functions.by_name["CatalogPoller"].function_arn,
            "PollerScheduleRoleArn": self.triggers.poller_role.role_arn,
            # Where the rules and schedules added by hand send what they could not deliver.
            "TriggerDeadLettersArn": self.triggers.dead_letters.queue_arn,
        }
        # The freshness check, and the role its schedule invokes it with (for a check of
        # other configs, or one run by hand).
        outputs["FreshnessCheckFunctionArn"] = self.functions.by_name[
            "FreshnessCheck"
        ].function_arn
        outputs["FreshnessScheduleRoleArn"] = self.freshness.role.role_arn
        # What `ferry failover` / `ferry failback --environment NAME` invoke.
        outputs["FailoverSwitchFunctionArn"] = self.failover.function.function_arn
        outputs["FailoverFunctionArn"] = self.failover_function.function.function_arn
        outputs["FailbackFunctionArn"] = self.failback_function.function.function_arn
        if self.secret.names:
            # What the secret must hold (its template value names none: a redeploy never
            # writes over the operator's values).
            outputs["ConfigSecretVariables"] = ",".join(self.secret.names)
        for key_name, value in outputs.items():
            CfnOutput(self, key_name, value=value)
        for path in self.configs.assets:
            CfnOutput(
                self, f"ConfigUri{path.stem.title().replace('-', '')}", value=self.configs.uri(path)
            )
