"""What every handler shares: Powertools, and the settings parsed once from the environment.

Handlers never read the environment themselves and domain code never does: the settings
model is built here, once per cold start, and handed to the state modules (``ferry.states``)
as their ``StateContext``.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from functools import cache

from aws_lambda_powertools import Logger, Metrics, Tracer
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from ferry.config import load_config_uri
from ferry.config.text import SECRET_PLACEHOLDER
from ferry.copying import budget
from ferry.copying.budget.dynamodb import DynamoDbSlots
from ferry.core.errors import ConfigError, FerryError, SecretNotFilledError
from ferry.feeds import ChangeFeeds, FeedState, WindowExecutions
from ferry.lifecycle import replica_state
from ferry.replicas.ledger import LONGEST_LEASE
from ferry.states.context import StateContext
from ferry.storage import fs
from ferry.storage.aws import AwsClients

SERVICE = "ferry"
NAMESPACE = "Ferry"


class Settings(BaseModel):
    """The Lambda functions' environment (set by the CDK stack, or the local runtime)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    work_uri: str = Field(
        alias="FERRY_WORK_URI", description="s3://bucket/prefix for plans, manifests, reports"
    )
    max_concurrency: int = Field(
        default=4, ge=1, alias="FERRY_MAX_CONCURRENCY", description="tables replicated at once"
    )
    s3_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
        description="S3's endpoint when it is not AWS's own (the local runtime's emulator)",
    )
    region: str | None = Field(
        default=None, validation_alias=AliasChoices("AWS_REGION", "AWS_DEFAULT_REGION")
    )
    state_table: str | None = Field(
        default=None,
        alias="FERRY_STATE_TABLE",
        description="DynamoDB table of replica locks and the snapshot ledger (none: neither)",
    )
    config_secret: str | None = Field(
        default=None,
        alias="FERRY_CONFIG_SECRET",
        description="Secrets Manager secret (a JSON object) of the configs' secret placeholders",
    )
    config_secret_variables: str = Field(
        default="",
        alias="FERRY_CONFIG_SECRET_VARIABLES",
        description="the names the secret must hold, comma-separated (the settings' "
        "secret-variables)",
    )
    changes_state_machine: str | None = Field(
        default=None,
        alias="FERRY_CHANGES_STATE_MACHINE_ARN",
        description="the change window state machine the catalog change feeds start",
    )
    replication_state_machine: str | None = Field(
        default=None,
        alias="FERRY_REPLICATION_STATE_MACHINE_ARN",
        description="the replication state machine failback's reverse run is started on",
    )
    lock_lease: timedelta = Field(
        default=replica_state.DEFAULT_LEASE,
        gt=timedelta(0),
        le=LONGEST_LEASE,
        alias="FERRY_LOCK_LEASE",
        description="how long a replication holds its replica table's lock at most (ISO-8601)",
    )

    copy_slots: int | None = Field(
        default=None,
        ge=1,
        alias="FERRY_COPY_SLOTS",
        description="the environment's copy budget: tables copying at once (none: no budget)",
    )
    critical_reserved_slots: int = Field(
        default=0, ge=0, alias="FERRY_CRITICAL_RESERVED_SLOTS",
        description="how many of the copy slots only critical tables take",
    )  # fmt: skip
    priority_aging: timedelta = Field(
        default=budget.DEFAULT_AGING, gt=timedelta(0), alias="FERRY_PRIORITY_AGING",
        description="a waiting copy counts one priority higher after each (ISO-8601)",
    )  # fmt: skip
    copy_slot_wait_seconds: int = Field(
        default=budget.DEFAULT_WAIT_SECONDS, ge=1, alias="FERRY_COPY_SLOT_WAIT_SECONDS",
        description="seconds a table waits before asking for a copy slot again",
    )  # fmt: skip

    def copy_budget(self) -> budget.CopyBudget | None:
        """The environment's copy budget; a slot lasts as long as a replica's lock."""
        if self.copy_slots is None:
            return None
        return budget.CopyBudget(
            self.copy_slots, self.critical_reserved_slots, self.priority_aging,
            self.lock_lease, self.copy_slot_wait_seconds,
        )  # fmt: skip

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> Settings:
        """Errors name the variable, e.g. ``FERRY_WORK_URI: Field required``."""
        return cls.model_validate(dict(os.environ if environ is None else environ))


logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)


@cache
def settings() -> Settings:
    return Settings.from_environment()


@cache
def context() -> StateContext:
    """What the states share (``ferry.states.context``), built once per cold start."""
    aws = AwsClients()
    fs.configure(fs.S3Settings(settings().s3_endpoint or None, settings().region or None), aws)
    state = None
    if settings().state_table:
        state = replica_state.open_state(
            state_table=settings().state_table,
            dynamodb=aws.client("dynamodb"),
            lease=settings().lock_lease,
        )
    copy_budget = settings().copy_budget()
    slots = None
    if copy_budget is not None and settings().state_table:
        slots = budget.EnvironmentBudget(
            copy_budget, DynamoDbSlots(aws.client("dynamodb"), settings().state_table)
        )
    return StateContext(
        settings().work_uri, aws, state=state, config_environment=config_environment(aws),
        budget=slots,
    )  # fmt: skip


@cache
def feeds() -> ChangeFeeds:
    """The change feeds' steps (``ferry.feeds``), on the state table and the change window
    state machine of the environment."""
    if not settings().state_table:
        raise ConfigError("FERRY_STATE_TABLE: the change feeds keep their windows there")
    aws = AwsClients()
    executions = WindowExecutions(
        aws.client("stepfunctions"), settings().changes_state_machine or ""
    )
    environment = config_environment(aws)
    runs = context()
    return ChangeFeeds(
        FeedState(aws.client("dynamodb"), settings().state_table),
        executions,
        lambda uri: load_config_uri(uri, environment),
        lambda catalog: runs.catalogs(catalog, runs.aws),
    )


def config_environment(aws: AwsClients) -> dict[str, str]:
    """The configs' placeholders: the function's environment, then its secret's values."""
    environment = dict(os.environ)
    if settings().config_secret:
        reply = aws.client("secretsmanager").get_secret_value(SecretId=settings().config_secret)
        values = json.loads(reply.get("SecretString") or "{}")
        if not isinstance(values, dict):
            raise FerryError(
                f"secret {settings().config_secret} must hold a JSON object of placeholder values"
            )
        unset = sorted(str(k) for k, v in values.items() if v == SECRET_PLACEHOLDER)
        if unset:
            raise SecretNotFilledError(
                f"secret {settings().config_secret} still holds the placeholder of "
                f"{', '.join(unset)}: put the values after the first deploy (aws "
                "secretsmanager put-secret-value --secret-id <it> --secret-string "
                f'\'{{"{unset[0]}": "..."}}\'), then run again'
            )
        declared = [n for n in settings().config_secret_variables.split(",") if n]
        missing = [name for name in declared if values.get(name) in (None, "")]
        if missing:
            raise SecretNotFilledError(
                f"secret {settings().config_secret} holds no value for {', '.join(missing)}: "
                "put every value the configs expect (aws secretsmanager put-secret-value "
                "--secret-id <it> --secret-string '{"
                + ", ".join(f'"{name}": "..."' for name in declared)
                + "}'), then run again"
            )
        environment.update({str(k): str(v) for k, v in values.items()})
    return environment
