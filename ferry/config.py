"""The replication config: one YAML file, keys compatible with Circus Train's.

``load_config`` is the only entry point; every problem it finds becomes one
``ConfigError`` line that names the file and the key.
"""

from __future__ import annotations

import posixpath
import re
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ferry import filters
from ferry.errors import ConfigError


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=_kebab, populate_by_name=True, extra="forbid", frozen=True
    )


class ReplicationMode(StrEnum):
    FULL = "FULL"  # copy the data into a new snapshot, then the metadata
    FULL_OVERWRITE = "FULL_OVERWRITE"  # replace the replica table (schema changes Hive refuses)
    METADATA_MIRROR = "METADATA_MIRROR"  # metadata only, pointing at the source's data
    METADATA_UPDATE = "METADATA_UPDATE"  # refresh the metadata, keep the replicated locations


class ReplicationStrategy(StrEnum):
    UPSERT = "UPSERT"  # never deletes
    PROPAGATE_DELETES = "PROPAGATE_DELETES"  # drops what the source dropped


# -- names and locations ---------------------------------------------------------------------

# Hive's metastore accepts database and table names that match Java's [\w_]+ (ASCII letters,
# digits, underscore: MetaStoreUtils.validateName); anything else fails only at commit.
_HIVE_NAME = re.compile(r"[A-Za-z0-9_]+")
# Hive 2.3's schema stores database names in 128 characters; Glue takes table names of 255.
MAX_DATABASE_NAME = 128
MAX_TABLE_NAME = 255


def check_hive_name(name: str, limit: int) -> str:
    """``name`` when the Hive metastore (and Glue) would accept it, else ``ValueError``."""
    if not _HIVE_NAME.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a valid Hive name: use only letters, digits and _ (A-Z, a-z, 0-9, _)"
        )
    if len(name) > limit:
        raise ValueError(f"{name[:20]!r}… has {len(name)} characters; at most {limit} are allowed")
    return name


#: Schemes both Hive (Hadoop file systems) and Ferry's file layer (pyarrow.fs) understand.
LOCATION_SCHEMES = ("file", "s3", "s3a", "s3n", "gs", "hdfs", "viewfs", "abfs", "abfss")
# Object stores: the URI's authority is the bucket (or container@account) and is required.
_BUCKET_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "abfs", "abfss"})


def check_location(location: str) -> str:
    """``location`` without its trailing slash when Ferry can write to it, else ``ValueError``.

    Hive's own spelling of a local path, ``file:/path``, is accepted. A location that would
    be read differently than it is written is refused:
    ``file://tmp/x`` names the host ``tmp`` and the path ``/x`` (Ferry would write to
    ``/x``), ``s3:///x`` names no bucket, ``..`` segments are taken literally by object
    stores (so are empty ones: ``a//b``), and a query or fragment would be dropped.
    """
    parsed = urlsplit(location)
    scheme = parsed.scheme.lower()
    if not scheme:
        raise ValueError(f"{location!r} is not a URI; write e.g. s3://bucket/path or file:///path")
    if scheme not in LOCATION_SCHEMES:
        raise ValueError(
            f"{location!r}: scheme '{scheme}' is not supported; use one of "
            + ", ".join(f"{s}://" for s in LOCATION_SCHEMES)
        )
    if parsed.query or parsed.fragment or "?" in location or "#" in location:
        raise ValueError(f"{location!r} has a '?' or '#': a location is a plain path")
    if scheme == "file" and parsed.netloc:
        raise ValueError(
            f"{location!r} names the host '{parsed.netloc}'; a local path needs three slashes: "
            f"file:///{parsed.netloc}{parsed.path}"
        )
    if scheme in _BUCKET_SCHEMES and not parsed.netloc:
        raise ValueError(f"{location!r} names no bucket; write {scheme}://bucket/path")
    path = parsed.path.rstrip("/")
    if scheme not in _BUCKET_SCHEMES and not path:
        raise ValueError(f"{location!r} is the root folder; give a folder below it")
    if path and not path.startswith("/"):
        raise ValueError(f"{location!r} is not an absolute path")
    if any(segment in ("", ".", "..") for segment in path.split("/")[1:]):
        raise ValueError(
            f"{location!r} has an empty, '.' or '..' segment; write the folder itself, "
            f"e.g. {scheme}://{parsed.netloc}{posixpath.normpath(path)}"
        )
    return location.rstrip("/")


_THRIFT_URI = re.compile(r"thrift://(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/\[\]\s]+):(?P<port>[^/]*)")
_TOPIC_ARN = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):sns:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+):(?P<account>\d{12})"
    r":(?P<name>[A-Za-z0-9_-]{1,256}(?:\.fifo)?)"
)
_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d+")


def check_metastore_uri(uri: str) -> str:
    """``uri`` when it is ``thrift://host:port`` with a port in 1-65535, else ``ValueError``."""
    match = _THRIFT_URI.fullmatch(uri)
    if match is None:
        raise ValueError(f"{uri!r} is not thrift://host:port")
    port = match["port"]
    if not port.isdigit():
        raise ValueError(f"{uri!r}: the port {port!r} is not a number")
    if not 1 <= int(port) <= 65535:
        raise ValueError(f"{uri!r}: the port {int(port)} is not in 1-65535")
    return uri


def _split_uris(value: str) -> list[str]:
    return [uri.strip() for uri in value.split(",") if uri.strip()]


def _check_region(region: str) -> str:
    if not _REGION.fullmatch(region):
        raise ValueError(f"{region!r} is not an AWS region, e.g. us-east-1")
    return region


# -- the config -------------------------------------------------------------------------------


class GlueSettings(_Model):
    region: str | None = None
    catalog_id: str | None = None

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        return None if value is None else _check_region(value)


class CatalogConfig(_Model):
    """A Hive metastore (``hive-metastore-uris``) or the Glue Data Catalog (``glue``)."""

    name: str
    hive_metastore_uris: str | None = None
    glue: GlueSettings | None = None
    #: Most partitions read or written by one catalog call (Glue writes at most 100 a call).
    batch_size: int = Field(default=1000, ge=1, le=1000)

    @field_validator("hive_metastore_uris")
    @classmethod
    def _thrift_uris(cls, value: str | None) -> str | None:
        if value is not None:
            uris = _split_uris(value)
            if not uris:
                raise ValueError("no URI given; write thrift://host:port[,thrift://host:port…]")
            for uri in uris:
                check_metastore_uri(uri)
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> CatalogConfig:
        if (self.hive_metastore_uris is None) == (self.glue is None):
            raise ValueError("give exactly one of 'hive-metastore-uris' or 'glue'")
        return self

    @property
    def metastore_uris(self) -> list[str]:
        return _split_uris(self.hive_metastore_uris or "")

    def same_catalog_as(self, other: CatalogConfig) -> bool:
        """True when both sections certainly name one catalog.

        Hive: they share a metastore URI (host compared case-insensitively). Glue: the same
        region and catalog id as written (an omitted region or id is the SDK's default, which
        only the run knows, so it matches only another omitted one).
        """
        if self.glue is not None and other.glue is not None:
            return (self.glue.region, self.glue.catalog_id) == (
                other.glue.region,
                other.glue.catalog_id,
            )
        if self.glue is None and other.glue is None:
            return bool(
                {u.lower() for u in self.metastore_uris} & {u.lower() for u in other.metastore_uris}
            )
        return False

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

    @field_validator("topic")
    @classmethod
    def _topic_arn(cls, value: str) -> str:
        # A malformed ARN fails only when publishing, and a failed notification never fails
        # a replication: consumers would silently hear nothing.
        if not _TOPIC_ARN.fullmatch(value):
            raise ValueError(
                f"{value!r} is not an SNS topic ARN "
                "(arn:aws:sns:<region>:<12-digit account>:<name>)"
            )
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        _check_region(value)
        topic = _TOPIC_ARN.fullmatch(info.data.get("topic", ""))
        if topic is not None and topic["region"] != value:
            raise ValueError(
                f"{value!r} is not the topic's region {topic['region']!r} "
                "(SNS publishes to a topic only in its own region)"
            )
        return value


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
    #: Circus Train's switch for its diff. Ferry always diffs (a partition whose data and
    #: metadata are unchanged is never copied again), so this only lifts the need for a
    #: partition-filter.
    generate_partition_filter: bool = False

    @field_validator("database_name")
    @classmethod
    def _database(cls, value: str) -> str:
        return check_hive_name(value, MAX_DATABASE_NAME)

    @field_validator("table_name")
    @classmethod
    def _table(cls, value: str) -> str:
        return check_hive_name(value, MAX_TABLE_NAME)

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

    @field_validator("database_name")
    @classmethod
    def _database(cls, value: str | None) -> str | None:
        return None if value is None else check_hive_name(value, MAX_DATABASE_NAME)

    @field_validator("table_name")
    @classmethod
    def _table(cls, value: str | None) -> str | None:
        return None if value is None else check_hive_name(value, MAX_TABLE_NAME)

    @field_validator("table_location")
    @classmethod
    def _uri(cls, value: str | None) -> str | None:
        return None if value is None else check_location(value)


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
        copies = (ReplicationMode.FULL, ReplicationMode.FULL_OVERWRITE)
        if self.replication_mode in copies and not self.replica_table.table_location:
            raise ValueError(
                "replica-table.table-location is required for replication-mode "
                f"{self.replication_mode.value}"
            )
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
        """One replica table per replication, and never the source table itself.

        Hive (and Glue) names are case-insensitive: ``Sales.Orders`` is ``sales.orders``.
        """
        seen: dict[str, int] = {}
        for index, replication in enumerate(self.table_replications):
            name = replication.replica_qualified_name
            first = seen.setdefault(name.lower(), index)
            if first != index:
                earlier = self.table_replications[first].replica_qualified_name
                spelling = (
                    "" if earlier == name else f" (as {earlier}; Hive names are case-insensitive)"
                )
                raise ValueError(
                    f"two table-replications write the same replica table {name}{spelling}: "
                    f"table-replications[{first}] and table-replications[{index}]"
                )
        if self.source_catalog.same_catalog_as(self.replica_catalog):
            for index, replication in enumerate(self.table_replications):
                source = replication.source_table.qualified_name
                if source.lower() == replication.replica_qualified_name.lower():
                    raise ValueError(
                        f"table-replications[{index}].replica-table: the replica table {source} "
                        "is the source table itself (source-catalog and replica-catalog are the "
                        "same catalog); give replica-table another database-name or table-name"
                    )
        return self

    def copier_options_for(self, replication: TableReplication) -> CopierOptions:
        return replication.copier_options or self.copier_options

    def select(self, tables: list[str] | tuple[str, ...] = ()) -> list[TableReplication]:
        """The replications of the named source tables (all of them when none is named)."""
        if not tables:
            return list(self.table_replications)
        # Hive names are case-insensitive, so is the selection.
        wanted = {name.lower() for name in tables}
        known = {r.source_table.qualified_name.lower() for r in self.table_replications}
        for name in tables:
            if name.lower() not in known:
                listed = ", ".join(
                    sorted({r.source_table.qualified_name for r in self.table_replications})
                )
                raise ConfigError(f"{name}: not in the config (its tables: {listed})")
        # A source replicated to two replicas is two replications: both are selected.
        return [
            r for r in self.table_replications if r.source_table.qualified_name.lower() in wanted
        ]

    def replication_of(
        self, source_table: str, replica_table: str | None = None
    ) -> TableReplication:
        """The one replication a pipeline state works on: its source (and replica) table."""
        for replication in self.select([source_table]):
            if replica_table is None or (
                replication.replica_qualified_name.lower() == replica_table.lower()
            ):
                return replication
        raise ConfigError(f"{source_table} → {replica_table}: not in the config")


def load_config(path: str | Path) -> ReplicationConfig:
    """Read and validate the config file at ``path``."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config: {error.strerror}") from None
    return parse_config_text(_decode(data, str(path)), str(path))


def load_config_uri(uri: str) -> ReplicationConfig:
    """Read and validate the config at a URI (``s3://``, ``file://``), as the pipeline does."""
    from ferry import fs  # the CLI reads local files without pyarrow

    if "://" not in uri:
        return load_config(uri)
    try:
        data = fs.read_bytes(uri)
    except OSError as error:
        raise ConfigError(f"{uri}: cannot read config: {str(error).splitlines()[0]}") from None
    return parse_config_text(_decode(data, uri), uri)


def _decode(data: bytes, source: str) -> str:
    """The config's text; YAML files are UTF-8 (a byte-order mark is allowed)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ConfigError(
            f"{source}: not UTF-8 text: byte 0x{data[error.start]:02x} on line {line}; "
            "save the config as UTF-8"
        ) from None


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
        # A check of the whole config names its keys in its message.
        line = f"{_path(loc)}: {message}" if loc else message
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
