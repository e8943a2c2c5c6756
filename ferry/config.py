"""The replication config: one YAML file, keys compatible with Circus Train's.

``load_config`` is the only entry point; every problem it finds becomes one
``ConfigError`` line that names the file and the key.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ferry import filters
from ferry.errors import ConfigError


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=_kebab, populate_by_name=True, extra="forbid", frozen=True
    )


class ReplicationMode(StrEnum):
    FULL = "FULL"
    METADATA_MIRROR = "METADATA_MIRROR"


class ReplicationStrategy(StrEnum):
    UPSERT = "UPSERT"


class GlueSettings(_Model):
    region: str | None = None
    catalog_id: str | None = None


class CatalogConfig(_Model):
    """A Hive metastore (``hive-metastore-uris``) or the Glue Data Catalog (``glue``)."""

    name: str
    hive_metastore_uris: str | None = None
    glue: GlueSettings | None = None
    #: Most partitions read or written by one catalog call (Glue writes at most 100 a call).
    batch_size: int = Field(default=1000, ge=1, le=1000)

    @model_validator(mode="after")
    def _one_kind(self) -> CatalogConfig:
        if (self.hive_metastore_uris is None) == (self.glue is None):
            raise ValueError("give exactly one of 'hive-metastore-uris' or 'glue'")
        if self.hive_metastore_uris is not None:
            for uri in self.metastore_uris:
                if not uri.startswith("thrift://") or ":" not in uri.removeprefix("thrift://"):
                    raise ValueError(f"hive-metastore-uris: {uri!r} is not thrift://host:port")
        return self

    @property
    def metastore_uris(self) -> list[str]:
        return [uri.strip() for uri in (self.hive_metastore_uris or "").split(",") if uri.strip()]

    @property
    def description(self) -> str:
        """What notifications and replica parameters say the catalog is."""
        if self.glue is not None:
            return f"glue:{self.glue.region or 'default'}"
        return self.hive_metastore_uris or ""


class SnsEventListener(_Model):
    """Circus Train's ``sns-event-listener``: where START, SUCCESS and FAILURE go.

    ``topic`` is the default; ``start-topic``, ``success-topic`` and ``fail-topic`` override
    it per message type. ``headers`` are copied into every message.
    """

    topic: str | None = None
    start_topic: str | None = None
    success_topic: str | None = None
    fail_topic: str | None = None
    region: str | None = None
    subject: str | None = "Ferry replication"
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _a_topic_for_each_type(self) -> SnsEventListener:
        if self.topic is None and None in (self.start_topic, self.success_topic, self.fail_topic):
            raise ValueError(
                "give 'topic', or all of 'start-topic', 'success-topic' and 'fail-topic'"
            )
        return self

    def topic_for(self, message_type: str) -> str:
        """The topic ARN a START, SUCCESS or FAILURE message is published to."""
        specific = {
            "START": self.start_topic,
            "SUCCESS": self.success_topic,
            "FAILURE": self.fail_topic,
        }[message_type]
        return specific or self.topic  # type: ignore[return-value]


class CopierOptions(BaseModel):
    """How data is copied. Circus Train's own copier options are accepted and ignored."""

    model_config = ConfigDict(
        alias_generator=_kebab, populate_by_name=True, extra="allow", frozen=True
    )

    threads: int = Field(default=8, ge=1, le=256)
    chunk_size_mib: int = Field(default=8, ge=1, le=1024)
    #: At most this much data is copied inline (in the CLI, or in a Lambda); more goes to Spark.
    inline_threshold_mib: int = Field(default=1024, ge=0)
    #: Files per batch of the S3 server-side copy (one Lambda invocation each).
    s3_batch_files: int = Field(default=100, ge=1, le=1000)
    #: Objects above this size are copied in parts (CopyObject's own limit is 5 GiB).
    multipart_threshold_mib: int = Field(default=5120, ge=5, le=5120)
    part_size_mib: int = Field(default=512, ge=5, le=5120)


class SourceTableConfig(_Model):
    database_name: str
    table_name: str
    partition_filter: str | None = None
    partition_limit: int | None = Field(default=None, ge=1)

    @field_validator("partition_filter")
    @classmethod
    def _renderable(cls, value: str | None) -> str | None:
        if value is not None:
            filters.check_template(value)
        return value

    @property
    def qualified_name(self) -> str:
        return f"{self.database_name}.{self.table_name}"


class ReplicaTableConfig(_Model):
    database_name: str | None = None
    table_name: str | None = None
    table_location: str | None = None

    @field_validator("table_location")
    @classmethod
    def _uri(cls, value: str | None) -> str | None:
        if value is not None:
            if "://" not in value:
                raise ValueError(
                    f"{value!r} is not a URI; write e.g. s3://bucket/path or file:///path"
                )
            value = value.rstrip("/")
        return value


class TransformOptions(_Model):
    table_properties: dict[str, str] = Field(default_factory=dict)


class TableReplication(_Model):
    source_table: SourceTableConfig
    replica_table: ReplicaTableConfig = Field(default_factory=ReplicaTableConfig)
    replication_mode: ReplicationMode = ReplicationMode.FULL
    replication_strategy: ReplicationStrategy = ReplicationStrategy.UPSERT
    copier_options: CopierOptions | None = None
    transform_options: TransformOptions = Field(default_factory=TransformOptions)
    table_mappings: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _location_for_full(self) -> TableReplication:
        if self.replication_mode is ReplicationMode.FULL and not self.replica_table.table_location:
            raise ValueError("replica-table.table-location is required for replication-mode FULL")
        return self

    @property
    def replica_database(self) -> str:
        return self.replica_table.database_name or self.source_table.database_name

    @property
    def replica_table_name(self) -> str:
        return self.replica_table.table_name or self.source_table.table_name

    @property
    def replica_qualified_name(self) -> str:
        return f"{self.replica_database}.{self.replica_table_name}"


class EmrServerlessSettings(_Model):
    """Where ``ferry replicate`` runs the Spark copy on AWS (else: spark-submit, locally)."""

    application_id: str
    execution_role_arn: str
    #: The copy job, uploaded (``emr_jobs/copy_files.py``), e.g. ``s3://bucket/copy_files.py``.
    entry_point: str
    spark_submit_parameters: str | None = None
    region: str | None = None


class ReplicationConfig(_Model):
    source_catalog: CatalogConfig
    replica_catalog: CatalogConfig
    sns_event_listener: SnsEventListener | None = None
    emr_serverless: EmrServerlessSettings | None = None
    copier_options: CopierOptions = Field(default_factory=CopierOptions)
    table_replications: list[TableReplication] = Field(min_length=1)

    @model_validator(mode="after")
    def _distinct_replicas(self) -> ReplicationConfig:
        seen: set[str] = set()
        for replication in self.table_replications:
            name = replication.replica_qualified_name
            if name in seen:
                raise ValueError(f"two table-replications write the same replica table {name}")
            seen.add(name)
        return self

    def copier_options_for(self, replication: TableReplication) -> CopierOptions:
        return replication.copier_options or self.copier_options

    def select(self, tables: list[str] | tuple[str, ...] = ()) -> list[TableReplication]:
        """The replications of the named source tables (all of them when none is named)."""
        if not tables:
            return list(self.table_replications)
        known = {r.source_table.qualified_name: r for r in self.table_replications}
        for name in tables:
            if name not in known:
                listed = ", ".join(sorted(known))
                raise ConfigError(f"{name}: not in the config (its tables: {listed})")
        return [known[name] for name in dict.fromkeys(tables)]


def load_config(path: str | Path) -> ReplicationConfig:
    """Read and validate the config file at ``path``."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config: {error.strerror}") from None
    return parse_config_text(text, str(path))


def load_config_uri(uri: str) -> ReplicationConfig:
    """Read and validate the config at a URI (``s3://``, ``file://``), as the pipeline does."""
    from ferry import fs  # the CLI reads local files without pyarrow

    if "://" not in uri:
        return load_config(uri)
    try:
        text = fs.read_bytes(uri).decode()
    except OSError as error:
        raise ConfigError(f"{uri}: cannot read config: {str(error).splitlines()[0]}") from None
    return parse_config_text(text, uri)


def parse_config_text(text: str, source: str) -> ReplicationConfig:
    """Validate YAML text; ``source`` names it in errors (a path or a URI)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise ConfigError(f"{source}: invalid YAML{where}: {problem}") from None
    return parse_config(data, source=source)


def parse_config(data: Any, source: str = "config") -> ReplicationConfig:
    """Validate an already parsed config document."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the config must be a mapping with 'table-replications'")
    try:
        return ReplicationConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"{source}: {describe_validation_error(error)}") from None


def describe_validation_error(error: ValidationError) -> str:
    """One line for the first problem pydantic found (and how many more there are)."""
    problems = error.errors()
    first = problems[0]
    loc = list(first["loc"])
    kind = first["type"]
    if kind == "missing":
        line = f"missing key '{loc[-1]}' in {_path(loc[:-1])}"
    elif kind == "extra_forbidden":
        line = f"unknown key '{loc[-1]}' in {_path(loc[:-1])}"
    else:
        message = first["msg"].removeprefix("Value error, ")
        line = f"{_path(loc)}: {message}"
    if len(problems) > 1:
        line += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return line


def _path(loc: list[Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "the top level"
