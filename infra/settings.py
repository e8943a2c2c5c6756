"""One settings file per environment: ``infra/environments/<name>.yml``.

An environment is one deployment of the pipeline in one account and region (dev, staging,
prod, a disaster-recovery region...). Its file says where it runs, which replication
configs it runs, what data those may read and write, how it reaches the Hive metastores,
and how much Spark it may use. A new environment is one new file; ``make synth``
synthesizes every one of them.
"""

from __future__ import annotations

import re
from datetime import timedelta
from functools import cached_property
from pathlib import Path

from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ferry.config import (
    ReplicationConfig,
    WholeNumber,
    check_schedule_expression,
    load_config,
    text,
)
from ferry.config.objectives import parse_rpo
from ferry.copying import budget
from ferry.core.duration import format_duration
from ferry.core.errors import ConfigError, SettingsError
from ferry.feeds import trigger_events
from ferry.storage import fs
from infra.settings_access import (
    ACCOUNT,
    REGION,
    AdHocAccess,
    DrAccount,
    Failback,
    KmsKey,
    S3Prefix,
    SettingsModel,
)

ROOT = Path(__file__).resolve().parents[1]
ENVIRONMENTS = Path(__file__).parent / "environments"

_NAME = re.compile(r"[a-z][a-z0-9-]{0,19}")


class Network(SettingsModel):
    """Where the functions and Spark run to reach Hive metastores (none for Glue only)."""

    vpc_id: str = Field(pattern=r"^vpc-[0-9a-f]+$")
    availability_zones: list[str] = Field(min_length=1)
    subnet_ids: list[str] = Field(min_length=1)
    security_group_ids: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_subnet_per_zone(self) -> Network:
        if len(self.subnet_ids) != len(self.availability_zones):
            raise ValueError("give one subnet-id per availability zone, in the same order")
        return self


class Spark(SettingsModel):
    """The EMR Serverless application's capacity (the release label is Ferry's own)."""

    maximum_vcpu: WholeNumber = Field(default=64, ge=4, le=4000)
    maximum_memory_gb: WholeNumber = Field(default=256, ge=8)
    maximum_disk_gb: WholeNumber = Field(default=1000, ge=20)
    idle_timeout_minutes: WholeNumber = Field(default=15, ge=1, le=10080)


class CopyBudget(SettingsModel):
    """How many tables copy data at once in this environment, and in what order they start
    (``ferry.copying.budget``): one slot is one table's copy — an inline copy Lambda, an S3
    server-side copy's Map (up to 16 copy Lambdas), or a Spark job on the EMR application."""

    #: Tables copying at once (the environment's, across every run and config).
    slots: WholeNumber = Field(default=8, ge=1, le=1000)
    #: Of those, how many only critical tables take: bulk never blocks critical.
    critical_reserved_slots: WholeNumber = Field(default=2, ge=0)
    #: A waiting copy counts one priority higher after each period (bulk reaches critical's
    #: rank after two): nothing waits forever.
    priority_aging: timedelta = Field(default=budget.DEFAULT_AGING)
    #: Seconds a table waits before asking for a slot again (growing to 30 as it waits).
    wait_seconds: WholeNumber = Field(default=budget.DEFAULT_WAIT_SECONDS, ge=1, le=30)

    @field_validator("priority_aging", mode="before")
    @classmethod
    def _aging(cls, value: object) -> timedelta:
        return parse_rpo(value)  # a positive ISO-8601 duration

    @model_validator(mode="after")
    def _room_for_normal_and_bulk(self) -> CopyBudget:
        if self.critical_reserved_slots >= self.slots:
            raise ValueError(
                f"critical-reserved-slots ({self.critical_reserved_slots}) must be fewer than "
                f"slots ({self.slots}): normal and bulk tables need at least one"
            )
        return self

    def environment(self) -> dict[str, str]:
        """The Claim copy slot function's environment (``lambdas/runtime.py``)."""
        return {
            "FERRY_COPY_SLOTS": str(self.slots),
            "FERRY_CRITICAL_RESERVED_SLOTS": str(self.critical_reserved_slots),
            "FERRY_PRIORITY_AGING": format_duration(self.priority_aging),
            "FERRY_COPY_SLOT_WAIT_SECONDS": str(self.wait_seconds),
        }


class Replication(SettingsModel):
    """One replication config this environment runs, and the data it may read."""

    config: Path
    #: Where the source tables' data lies: the functions and Spark may read only these.
    read_locations: list[S3Prefix] = Field(min_length=1)
    #: The KMS keys the source buckets encrypt with (SSE-KMS): reading needs kms:Decrypt.
    read_kms_keys: list[KmsKey] = Field(default_factory=list)


class EnvironmentSettings(SettingsModel):
    name: str = Field(pattern=_NAME.pattern)
    account: str = Field(pattern=ACCOUNT.pattern)
    region: str = Field(pattern=REGION.pattern)
    replications: list[Replication] = Field(min_length=1)
    #: Where replicas may be written: every replica table location must lie below one.
    write_locations: list[S3Prefix] = Field(min_length=1)
    #: The KMS keys the replica buckets encrypt with (SSE-KMS): writing needs
    #: kms:GenerateDataKey, verifying and multipart uploads kms:Decrypt.
    write_kms_keys: list[KmsKey] = Field(default_factory=list)
    network: Network | None = None
    spark: Spark = Field(default_factory=Spark)
    #: Values of the configs' ``${NAME}`` placeholders that are not secret (the functions'
    #: environment).
    variables: dict[str, str] = Field(default_factory=dict)
    #: Placeholders whose values live in the environment's Secrets Manager secret (a JSON
    #: object, filled after deployment), each with a sample value that only checks the
    #: configs at synth: the real value is never in the repository or the template.
    secret_variables: dict[str, str] = Field(default_factory=dict)
    housekeeping_schedule: str = trigger_events.HOUSEKEEPING_SCHEDULE
    #: How often the freshness check measures every table and publishes its freshness
    #: (``rate(N minutes)``, 1 to 60): the RPO alarm's period.
    freshness_check_rate: str = "rate(5 minutes)"
    log_retention_days: WholeNumber = Field(default=90, ge=1)
    #: Who is told when an alarm fires (the operations topic's e-mail subscriptions).
    alarm_emails: list[str] = Field(default_factory=list)
    tables_at_once: WholeNumber = Field(default=4, ge=1, le=40)
    copy_budget: CopyBudget = Field(default_factory=CopyBudget)
    ad_hoc_access: AdHocAccess = Field(default_factory=AdHocAccess)
    #: The replica side in another account, reached through a role there (its own stack).
    dr_account: DrAccount | None = None
    #: What failback's reverse run may write of the sources (none: nothing).
    failback: Failback | None = None

    @field_validator("variables", "secret_variables")
    @classmethod
    def _no_reserved_variables(cls, variables: dict[str, str]) -> dict[str, str]:
        reserved = sorted(k for k in variables if k.startswith(("FERRY_", "AWS_")))
        if reserved:
            raise ValueError(f"{reserved[0]} is set by the deployment itself")
        return variables

    @field_validator("housekeeping_schedule")
    @classmethod
    def _schedule(cls, expression: str) -> str:
        return check_schedule_expression(expression)

    @field_validator("freshness_check_rate")
    @classmethod
    def _freshness_rate(cls, expression: str) -> str:
        minutes = rate_minutes(check_schedule_expression(expression))
        if minutes is None or not 1 <= minutes <= 60:
            raise ValueError(
                f"{expression!r}: give a rate of 1 to 60 minutes, e.g. rate(5 minutes) (it is "
                "also the RPO alarm's period)"
            )
        return expression.strip()

    @property
    def freshness_check_minutes(self) -> int:
        """The freshness check's period, in minutes."""
        minutes = rate_minutes(self.freshness_check_rate)
        assert minutes is not None  # checked when the settings were read
        return minutes

    @property
    def stack_name(self) -> str:
        return f"Ferry-{self.name}"

    @property
    def events_topic_name(self) -> str:
        return f"ferry-{self.name}-replication-events"

    @property
    def events_topic_arn(self) -> str:
        """Known before deployment: configs name it as ``${FERRY_EVENTS_TOPIC_ARN}``."""
        return f"arn:aws:sns:{self.region}:{self.account}:{self.events_topic_name}"

    def _check_dr_role(self, config: ReplicationConfig, path: Path) -> None:
        """A config that assumes the DR stack's role asks what the role allows: the external
        id its trust requires, a session no longer than its maximum (STS refuses either at
        the first run; the synth says it first)."""
        role = config.replica_catalog.assume_role
        dr = self.dr_account
        if role is None or dr is None or role.role_arn != dr.role_arn:
            return
        where = f"{self.name}: {path}: replica-catalog.assume-role"
        if dr.external_id and role.external_id != dr.external_id:
            raise SettingsError(
                f"{where}.external-id: {role.external_id!r} is not dr-account.external-id "
                f"{dr.external_id!r}, which the role's trust requires"
            )
        if role.session_duration > dr.max_session_duration:
            raise SettingsError(
                f"{where}.session-duration: {format_duration(role.session_duration)} is longer "
                f"than the role's dr-account.max-session-duration "
                f"{format_duration(dr.max_session_duration)}"
            )

    def config_environment(self) -> dict[str, str]:
        """The functions' environment for the configs' placeholders (secrets aside)."""
        return {**self.variables, "FERRY_EVENTS_TOPIC_ARN": self.events_topic_arn}

    @cached_property
    def configs(self) -> dict[Path, ReplicationConfig]:
        """Every replication config, loaded and checked against the write locations."""
        loaded = {}
        for replication in self.replications:
            path = (
                replication.config
                if replication.config.is_absolute()
                else ROOT / replication.config
            )
            config = load_config(path, {**self.secret_variables, **self.config_environment()})
            # A replica side in the DR account is written by the DR role, in its buckets.
            self._check_dr_role(config, replication.config)
            in_dr_account = config.replica_catalog.assume_role is not None and self.dr_account
            allowed_locations = (
                [f"s3://{bucket}/" for bucket in self.dr_account.bucket_names]
                if in_dr_account and self.dr_account
                else self.write_locations
            )
            allowed_key = "dr-account.buckets" if in_dr_account else "write-locations"
            for table in config.table_replications:
                location = table.replica_table.table_location
                if location and not any(
                    _below(location, allowed) for allowed in allowed_locations
                ):
                    raise SettingsError(
                        f"{self.name}: replica location {location} of {replication.config} is "
                        f"outside {allowed_key} {allowed_locations}"
                    )
            self._check_failback(config, replication)
            loaded[replication.config] = config
        return loaded

    def _check_failback(self, config: ReplicationConfig, replication: Replication) -> None:
        """With ``failback``, a config's failback must fit it: the reverse run writes below
        the config's read-locations (its sources' data) and into its source Glue
        databases."""
        failback = self.failback
        if failback is None:
            return
        where = f"{self.name}: {replication.config}: its failback"
        for location in replication.read_locations:
            if not any(_below(location, allowed) for allowed in failback.write_locations):
                raise SettingsError(
                    f"{where} writes below {location}, outside failback.write-locations "
                    f"{failback.write_locations}"
                )
        if config.source_catalog.glue is None:
            return
        for table in config.table_replications:
            database = table.source_table.database_name.lower()
            if not any(_matches(database, allowed) for allowed in failback.databases):
                raise SettingsError(
                    f"{where} alters tables of the Glue database {database}, which "
                    f"failback.databases {failback.databases} does not name"
                )


def _below(location: str, prefix: str) -> bool:
    """``location`` is ``prefix`` or below it; the prefix's ``*`` and ``?`` are IAM's wildcards
    (``*`` stands for any characters, ``/`` included, as in a policy's resource)."""
    location, prefix = fs.normalise(location), fs.normalise(prefix).rstrip("/")
    pattern = re.escape(prefix).replace(r"\*", ".*").replace(r"\?", ".")
    return re.fullmatch(f"{pattern}(/.*)?", location) is not None


def _matches(name: str, pattern: str) -> bool:
    """``name`` matches ``pattern``, whose ``*`` and ``?`` are IAM's wildcards."""
    regex = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.fullmatch(regex, name) is not None


def rate_minutes(expression: str) -> int | None:
    """``rate(5 minutes)`` → 5, ``rate(1 hour)`` → 60; None for a cron or another unit."""
    found = re.fullmatch(r"rate\(\s*(\d+)\s+(minutes?|hours?)\s*\)", expression.strip())
    if found is None:
        return None
    return int(found.group(1)) * (60 if found.group(2).startswith("hour") else 1)


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def environment_names() -> list[str]:
    return sorted(path.stem for path in ENVIRONMENTS.glob("*.yml"))


def load_environment(name: str) -> EnvironmentSettings:
    path = ENVIRONMENTS / f"{name}.yml"
    if not path.is_file():
        raise SettingsError(
            f"no settings for environment {name!r}: expected {_shown(path)} "
            f"(known: {', '.join(environment_names()) or 'none'})"
        )
    return load_settings(path, name)


def load_settings(path: Path, name: str) -> EnvironmentSettings:
    """The settings file at ``path`` as environment ``name`` (the local runtime's lives in
    ``ferry/local/``, not among the environments ``make synth`` deploys)."""
    try:
        documents = text.read_documents(path.read_text(encoding="utf-8"), _shown(path))
    except ConfigError as error:
        raise SettingsError(str(error)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise SettingsError(f"{_shown(path)}: cannot read the settings: {error}") from None
    document = documents[0] if documents else {}
    if len(documents) > 1 or not isinstance(document, dict):
        raise SettingsError(f"{_shown(path)}: the settings must be one YAML mapping")
    try:
        return EnvironmentSettings.model_validate({"name": name, **document})
    except ValidationError as error:
        first = error.errors()[0]
        key = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise SettingsError(f"{_shown(path)}: {key}: {first['msg']}") from None
