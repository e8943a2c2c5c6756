"""The replication config: one YAML file, keys compatible with Circus Train's.

``load_config`` is the only entry point; every problem it finds becomes one
``ConfigError`` line that names the file and the key.

Circus Train's files load as they are. Each of its keys is either implemented or accepted
with one warning (``ReplicationConfig.warnings``) that says what Ferry does instead: each
model lists those keys in ``circus_train_keys``. A key that is neither Ferry's nor Circus
Train's is an error, with the closest known key as a suggestion. Spring's profile documents
and ``${NAME}`` placeholders are resolved first (``ferry.config_text``).
"""

from __future__ import annotations

import difflib
import os
import posixpath
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ferry import config_text, filters
from ferry.errors import ConfigError
from ferry.triggers import check_schedule_expression, check_time_zone


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=_kebab, populate_by_name=True, extra="forbid", frozen=True
    )

    #: Circus Train's keys at this level that Ferry accepts without using them, each with
    #: what Ferry does instead (the warning a person reads).
    circus_train_keys: ClassVar[Mapping[str, str]] = {}
    #: Keys at this level whose value is a location (``check_location``): one written with
    #: repeated slashes is read as Hadoop reads it (``read_as_hadoop``), with a warning.
    location_keys: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _empty_means_default(cls, data: Any) -> Any:
        """A key with no value (``copier-options:``) means its default, as in Spring.

        Only where None is not itself a value: an empty ``subject:`` stays "no subject".
        """
        if not isinstance(data, dict):
            return data
        fields = _fields_by_key(cls)
        return {
            key: value
            for key, value in data.items()
            if value is not None
            or key not in fields
            or fields[key].is_required()
            or _admits_none(fields[key].annotation)
        }


class ReplicationMode(StrEnum):
    FULL = "FULL"  # copy the data into a new snapshot, then the metadata
    FULL_OVERWRITE = "FULL_OVERWRITE"  # replace the replica table (schema changes Hive refuses)
    METADATA_MIRROR = "METADATA_MIRROR"  # metadata only, pointing at the source's data
    METADATA_UPDATE = "METADATA_UPDATE"  # refresh the metadata, keep the replicated locations


class ReplicationStrategy(StrEnum):
    UPSERT = "UPSERT"  # never deletes
    PROPAGATE_DELETES = "PROPAGATE_DELETES"  # drops what the source dropped


class OrphanedDataStrategy(StrEnum):
    """What happens to replica data that a replication replaced (or a delete orphaned)."""

    HOUSEKEEPING = "HOUSEKEEPING"  # recorded in the ledger, deleted after expired-path-duration
    NONE = "NONE"  # left where it is


@dataclass(frozen=True)
class ConfigWarning:
    """Something the config says that Ferry reads otherwise than written, and how.

    A Circus Train key Ferry accepts without using it (and what Ferry does instead), or a
    location Ferry reads in Hadoop's spelling (``read_as_hadoop``).
    """

    source: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}"


def _not_a_boolean(value: Any) -> Any:
    """A number must not be YAML's ``true`` or ``false``: pydantic would take them as 1 and 0.

    Text of digits stays a number (a value that is only a ``${NAME}`` placeholder is text).
    """
    if isinstance(value, bool):
        raise ValueError(f"{'true' if value else 'false'} is not a whole number")
    return value


#: A whole number of the config: an int, or text of one; never a boolean.
WholeNumber = Annotated[int, BeforeValidator(_not_a_boolean)]


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
    stores (so are empty ones: ``a//b``), and a query or fragment would be dropped. When a
    config file loads, a location whose only fault is repeated slashes is read as Hadoop
    reads it instead (``read_as_hadoop``).
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


_REPEATED_SLASHES = re.compile(r"/{2,}")


def read_as_hadoop(location: str) -> str | None:
    """``location`` as Hive reads it, when only repeated slashes keep Ferry from taking it
    as written; else None (Ferry takes it as written, or refuses it either way).

    Hadoop's ``Path``, through which Hive and Circus Train read every location, collapses
    repeated slashes in the path and keeps the scheme and authority:
    ``file:/data/warehouse//db/table`` is ``file:/data/warehouse/db/table``,
    ``s3://bucket/warehouse//db/table`` is ``s3://bucket/warehouse/db/table``. Configs
    write such locations by joining placeholders, ``${warehouse-uri}/db/table`` with a
    warehouse URI that ends in ``/``. Ferry's file layer would take the empty segment
    literally (an object store keeps it in the key), so the location is rewritten the way
    Hive will read it; a location still refused after that (``..``, no bucket) is refused
    as written.
    """
    try:
        check_location(location)
        return None
    except ValueError:
        pass
    scheme, colon, rest = location.partition(":")
    if not colon or "?" in location or "#" in location:
        return None
    authority = ""
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        authority, rest = f"//{authority}", slash + path
    normal = f"{scheme}:{authority}{_REPEATED_SLASHES.sub('/', rest)}"
    try:
        return check_location(normal)
    except ValueError:
        return None


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


_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_IP_ADDRESS = re.compile(r"\d+\.\d+\.\d+\.\d+")
# Names S3 reserves for its own kinds of bucket and access point.
_RESERVED_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_RESERVED_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


def check_bucket_name(name: str) -> str:
    """``name`` when it is an S3 general purpose bucket's name, else ``ValueError``."""
    if "://" in name or "/" in name:
        raise ValueError(
            f"{name!r} is not a bucket name: give the bucket alone (e.g. landing), "
            "and the start of the keys as 'prefix'"
        )
    if not 3 <= len(name) <= 63:
        raise ValueError(f"{name!r} is not a bucket name: S3 bucket names have 3-63 characters")
    if not _BUCKET.fullmatch(name) or ".." in name:
        raise ValueError(
            f"{name!r} is not a bucket name: lower-case letters, digits, '.' and '-' only, "
            "starting and ending with a letter or digit, no '..'"
        )
    if _IP_ADDRESS.fullmatch(name):
        raise ValueError(f"{name!r} is not a bucket name: S3 refuses names like IP addresses")
    if name.startswith(_RESERVED_BUCKET_PREFIXES) or name.endswith(_RESERVED_BUCKET_SUFFIXES):
        raise ValueError(f"{name!r} is not a bucket name: S3 reserves its prefix or suffix")
    return name


# -- what Ferry does instead of Circus Train's keys -------------------------------------------

_NO_HADOOP_CONFIGURATION = (
    "Ferry reads no Hadoop configuration: metastores are the catalog's hive-metastore-uris "
    "(or glue), S3 settings come from the AWS SDK's environment"
)
_NO_SSH_TUNNEL = (
    "Ferry opens no SSH tunnel: forward a port yourself (ssh -L 9083:metastore:9083 bastion) "
    "and point hive-metastore-uris at it, or run Ferry inside the metastore's network"
)
_METRICS = (
    "Ferry sends no metrics to Graphite: the pipeline publishes each table's metrics (bytes and "
    "files replicated, failures) to CloudWatch, namespace Ferry"
)
_PARTITION_PAGES = (
    "Ferry reads partitions in pages of the catalog's batch-size (default 1000) and never holds "
    "a whole table's partitions"
)
_LEDGER = (
    "Ferry's housekeeping ledger is a DynamoDB table of the pipeline: there is no database to "
    "configure"
)
_NO_BANDWIDTH_LIMIT = "Ferry does not throttle copies: lower copier-options.threads instead"
_SPARK_BALANCES = (
    "Ferry's Spark copy balances files by size over the job's executors; the EMR Serverless "
    "application's capacity sets how many"
)
_SDK_CREDENTIALS = (
    "Ferry reads no Hadoop credential provider (JCEKS): AWS access comes from the AWS SDK's "
    "credentials (the Lambda's or Spark job's IAM role, the environment, a profile); keep other "
    "secrets in AWS Secrets Manager"
)
_ASSUME_ROLE = (
    "Ferry copies with the credentials of the process that runs the copy (in the pipeline, the "
    "Lambda's or Spark job's IAM role): grant that role the target bucket, e.g. with a bucket "
    "policy for cross-account replicas"
)
_S3_MULTIPART_UPLOAD = (
    "Ferry's uploads to S3 (inline and Spark copies) are multipart as the file layer decides; "
    "S3 to S3 copies use copier-options.multipart-threshold-mib and part-size-mib"
)
_RETRIES = (
    "Ferry retries each failed S3 request 3 times with backoff, then the state machine retries "
    "the step; files of batches already copied are not copied again"
)
_COPIER_CHOSEN = (
    "Ferry chooses the copier itself: none, metadata only, inline, S3 server-side or Spark "
    "(copier-options.inline-threshold-mib)"
)

# -- the config -------------------------------------------------------------------------------


_ACCOUNT_ID = re.compile(r"\d{12}")


class GlueSettings(_Model):
    region: str | None = None
    #: The AWS account whose Data Catalog it is: 12 digits.
    catalog_id: str | None = None

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        return None if value is None else _check_region(value)

    @field_validator("catalog_id", mode="before")
    @classmethod
    def _account_id(cls, value: Any) -> Any:
        # Written unquoted, YAML reads 123456789012 as a number: its digits are the id.
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str) and not _ACCOUNT_ID.fullmatch(value):
            raise ValueError(
                f"{value!r} is not an AWS account id: a catalog id is the 12 digits of the "
                'account whose catalog it is, e.g. "123456789012" (quoted)'
            )
        return value


class CatalogConfig(_Model):
    """A Hive metastore (``hive-metastore-uris``) or the Glue Data Catalog (``glue``)."""

    circus_train_keys: ClassVar[Mapping[str, str]] = {
        "disable-snapshots": (
            "Ferry takes no HDFS snapshots: it lists the source files once, into the manifest, "
            "and verifies every copied file"
        ),
        "site-xml": _NO_HADOOP_CONFIGURATION,
        "configuration-properties": _NO_HADOOP_CONFIGURATION,
        "metastore-tunnel": _NO_SSH_TUNNEL,
    }

    name: str
    hive_metastore_uris: str | None = None
    glue: GlueSettings | None = None
    #: Most partitions read or written by one catalog call (Glue writes at most 100 a call).
    batch_size: WholeNumber = Field(default=1000, ge=1, le=1000)

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

    circus_train_keys: ClassVar[Mapping[str, str]] = {
        "queue-size": "Ferry publishes each message when its table reaches it, with no queue",
    }

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

    @field_validator("topic", "start_topic", "success_topic", "fail_topic")
    @classmethod
    def _topic_arn(cls, value: str | None) -> str | None:
        # A malformed ARN fails only when publishing, and a failed notification never fails
        # a replication: consumers would silently hear nothing.
        if value is not None and not _TOPIC_ARN.fullmatch(value):
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
        topic = _TOPIC_ARN.fullmatch(info.data.get("topic") or "")
        if topic is not None and topic["region"] != value:
            raise ValueError(
                f"{value!r} is not the topic's region {topic['region']!r} "
                "(SNS publishes to a topic only in its own region)"
            )
        return value


MIB = 1024 * 1024


#: Locations a plan lists at once unless ``copier-options.threads`` says otherwise.
LISTING_THREADS = 8


class CopierOptions(_Model):
    """How data is copied: Ferry's options, and Circus Train's S3 to S3 options translated.

    Circus Train's ``s3s3-*`` sizes are bytes; Ferry's are MiB (rounded up). Its other
    copier options (DistCp's, S3MapReduceCp's) are accepted with a warning.
    """

    circus_train_keys: ClassVar[Mapping[str, str]] = {
        # DistCp (to HDFS)
        "file-attribute": (
            "Ferry copies file contents only: the replica's owner, permissions and times are "
            "the writer's (object stores keep none)"
        ),
        "preserve-raw-xattrs": "Ferry copies file contents only, never extended attributes",
        "atomic-commit": (
            "every Ferry run writes a new snapshot folder and points the replica at it only "
            "after every file is verified: readers never see a partial copy"
        ),
        "atomic-work-path": "Ferry writes straight into the run's new snapshot folder",
        "blocking": "Ferry's copies always finish (and are verified) before the commit",
        "copy-strategy": _SPARK_BALANCES,
        "max-maps": _SPARK_BALANCES,
        "num-of-workers-per-map": _SPARK_BALANCES,
        "filters-file": "Ferry copies every file of a selected partition",
        "ignore-failures": (
            "a file Ferry cannot copy fails its table (its new snapshot is removed unless "
            "referenced); the other tables go on"
        ),
        "log-path": "Ferry writes each copy's report under the work location, runs/<event-id>/",
        "task-bandwidth": _NO_BANDWIDTH_LIMIT,
        "skip-crc": "Ferry verifies every copied file's size at the target",
        "ssl-configuration-file": "Ferry reaches S3 and GCS over TLS by default; no hftps://",
        "ignore-missing-partition-folder-errors": (
            "Ferry lists each partition's folder; a missing folder has no files to copy"
        ),
        "copier-factory-class": _COPIER_CHOSEN,
        "data-manipulator-factory-class": "Ferry deletes replica data through its own file layer",
        "tmp-dir": "Ferry stages nothing: files stream into the snapshot folder",
        # S3MapReduceCp (HDFS to S3) and S3 to S3
        "credential-provider": _SDK_CREDENTIALS,
        "storage-class": (
            "Ferry writes objects in the bucket's default storage class; an S3 lifecycle rule "
            "can move them to another"
        ),
        "s3-server-side-encryption": (
            "Ferry's objects get the target bucket's default encryption (SSE-S3, or SSE-KMS "
            "when the bucket sets it)"
        ),
        "canned-acl": (
            "Ferry sets no ACL: the bucket owner owns the objects (S3's default, ACLs disabled)"
        ),
        "region": "Ferry looks each bucket's region up (HeadBucket)",
        "s3-endpoint-uri": "Ferry's S3 endpoint is AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL",
        "multipart-upload-chunk-size": _S3_MULTIPART_UPLOAD,
        "multipart-upload-threshold": _S3_MULTIPART_UPLOAD,
        "upload-retry-count": _RETRIES,
        "upload-retry-delay-ms": _RETRIES,
        "s3s3-retry-max-copy-attempts": _RETRIES,
        "upload-buffer-size": "Ferry's streaming buffer is copier-options.chunk-size-mib",
        "assume-role": _ASSUME_ROLE,
        "assume-role-session-duration-seconds": _ASSUME_ROLE,
    }
    #: Circus Train's S3 to S3 options and the Ferry option each sets (sizes: bytes → MiB).
    circus_train_translations: ClassVar[Mapping[str, tuple[str, bool]]] = {
        "s3s3-max-thread-pool-size": ("threads", False),
        "s3s3-multipart-copy-threshold-in-bytes": ("multipart-threshold-mib", True),
        "s3s3-multipart-copy-part-size-in-bytes": ("part-size-mib", True),
    }

    #: Files copied at once. None: each copier chooses from the manifest (many small
    #: files: more threads; a few large ones: fewer, each in parallel parts) and a plan
    #: lists on ``LISTING_THREADS``.
    threads: WholeNumber | None = Field(default=None, ge=1, le=256)
    #: Read and write size; a file up to this size is copied to S3 with one request.
    chunk_size_mib: WholeNumber = Field(default=8, ge=1, le=1024)
    #: At most this much data is copied inline (in the CLI, or in a Lambda); more goes to Spark.
    inline_threshold_mib: WholeNumber = Field(default=1024, ge=0)
    #: Files per batch of the S3 server-side copy (one Lambda invocation each).
    s3_batch_files: WholeNumber = Field(default=100, ge=1, le=1000)
    #: Bytes per batch of the S3 server-side copy, at most (a larger object is a batch of its
    #: own): what one 15-minute Lambda copies, across regions too, with time to spare.
    s3_batch_gib: WholeNumber = Field(default=25, ge=1, le=5120)
    #: Objects above this size are copied in parts (CopyObject's own limit is 5 GiB).
    multipart_threshold_mib: WholeNumber = Field(default=5120, ge=5, le=5120)
    part_size_mib: WholeNumber = Field(default=512, ge=5, le=5120)

    @property
    def listing_threads(self) -> int:
        """Locations a plan lists at once: ``threads`` when given."""
        return self.threads or LISTING_THREADS

    @model_validator(mode="before")
    @classmethod
    def _translate_circus_train(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for key, (ferry_key, in_bytes) in cls.circus_train_translations.items():
            if key not in data:
                continue
            value = data.pop(key)
            if ferry_key in data or ferry_key.replace("-", "_") in data:
                raise ValueError(f"give '{ferry_key}' or Circus Train's '{key}', not both")
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError(f"{key}: {value!r} is not a whole number")
            try:
                number = int(value)
            except ValueError:
                raise ValueError(f"{key}: {value!r} is not a whole number") from None
            data[ferry_key] = -(-number // MIB) if in_bytes else number
        return data


class SourceTableConfig(_Model):
    """The source: one table (``table-name``), or every table matching ``table-name-pattern``.

    A pattern is a Python regular expression matched against the whole table name, ignoring
    case (Hive names are case-insensitive); ``exclude`` lists names or patterns to leave out.
    """

    circus_train_keys: ClassVar[Mapping[str, str]] = {
        "table-location": (
            "Ferry takes the source table's location from the catalog; a partition stored "
            "outside it is copied under its partition name (e.g. dt=2026-11-20)"
        ),
    }

    database_name: str
    table_name: str | None = None
    table_name_pattern: str | None = None
    exclude: tuple[str, ...] = ()
    partition_filter: str | None = None
    partition_limit: WholeNumber | None = Field(default=None, ge=1)
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
    def _table(cls, value: str | None) -> str | None:
        return None if value is None else check_hive_name(value, MAX_TABLE_NAME)

    @field_validator("table_name_pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            if not value.strip():
                raise ValueError("an empty pattern; write e.g. '.*' for every table")
            _compile(value)
        return value

    @field_validator("exclude", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("exclude")
    @classmethod
    def _patterns(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            _compile(pattern)
        return value

    @field_validator("partition_filter")
    @classmethod
    def _renderable(cls, value: str | None) -> str | None:
        if value is not None:
            filters.check_template(value)
        return value

    @model_validator(mode="after")
    def _one_selection(self) -> SourceTableConfig:
        if self.table_name is None and self.table_name_pattern is None:
            raise PydanticCustomError(
                "missing_key",
                "missing key '{key}'",
                {"key": "table-name", "hint": " (or 'table-name-pattern' for many tables)"},
            )
        if self.table_name is not None and self.table_name_pattern is not None:
            raise ValueError("give 'table-name' or 'table-name-pattern', not both")
        if self.exclude and self.table_name_pattern is None:
            raise ValueError("'exclude' goes with 'table-name-pattern' only")
        return self

    @property
    def is_pattern(self) -> bool:
        return self.table_name_pattern is not None

    @property
    def qualified_name(self) -> str:
        """``db.table``; for a pattern, what it selects (for messages)."""
        if self.table_name_pattern is not None:
            return f"{self.database_name}.{self.table_name_pattern!r}"
        return f"{self.database_name}.{self.table_name}"

    def matches(self, database: str, table: str) -> bool:
        """True when this source selects ``database.table`` (case-insensitively)."""
        if database.lower() != self.database_name.lower():
            return False
        if self.table_name_pattern is None:
            return table.lower() == (self.table_name or "").lower()
        if not _compile(self.table_name_pattern).fullmatch(table):
            return False
        return not any(_compile(pattern).fullmatch(table) for pattern in self.exclude)


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as error:
        raise ValueError(f"{pattern!r} is not a regular expression: {error}") from None


class ReplicaTableConfig(_Model):
    location_keys: ClassVar[frozenset[str]] = frozenset({"table-location"})

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


class AvroSerdeOptions(_Model):
    """Circus Train's ``avro-serde-options``: where the replica's copy of an Avro schema goes.

    The schema file a table's ``avro.schema.url`` names is copied to
    ``<base-url>/<event-id>/<file>`` (``…/<event-id>/.schema/<file>`` when ``base-url`` is the
    replica's ``table-location``, so Hive never reads it as data); the replica's
    ``avro.schema.url`` points at the copy (``ferry/avro.py``).
    """

    location_keys: ClassVar[frozenset[str]] = frozenset({"base-url"})

    base_url: str | None = None

    @field_validator("base_url")
    @classmethod
    def _uri(cls, value: str | None) -> str | None:
        return None if value is None or not value.strip() else check_location(value)


class TransformOptions(_Model):
    """What the replica gets that the source does not have.

    At the top level they apply to every table; a table's own ``transform-options`` override
    them option by option, as in Circus Train (a table's ``table-properties`` replace the
    top-level ones whole).
    """

    table_properties: dict[str, str] = Field(default_factory=dict)
    avro_serde_options: AvroSerdeOptions | None = None

    @field_validator("table_properties", mode="before")
    @classmethod
    def _as_strings(cls, value: Any) -> Any:
        """Spring's ``'[a.b]'`` key escape is the key ``a.b``; scalar values are text."""
        if not isinstance(value, dict):
            return value
        properties = {}
        for key, item in value.items():
            name = str(key)
            if name.startswith("[") and name.endswith("]"):
                name = name[1:-1]
            if isinstance(item, bool):
                item = "true" if item else "false"  # as Java writes booleans
            elif isinstance(item, int | float):
                item = str(item)
            properties[name] = item
        return properties

    @property
    def avro_base_url(self) -> str | None:
        return self.avro_serde_options.base_url if self.avro_serde_options else None

    def over(self, defaults: TransformOptions) -> TransformOptions:
        """These options, each one not given here taken from ``defaults``."""
        return TransformOptions(
            table_properties=self.table_properties or defaults.table_properties,
            avro_serde_options=(
                self.avro_serde_options
                if self.avro_base_url is not None
                else defaults.avro_serde_options
            ),
        )


def _parse_iso_duration(value: Any) -> timedelta:
    """An ISO-8601 duration of days, hours, minutes and seconds (``P3D``, ``PT12H``).

    As Java's ``Duration.parse``, which Circus Train's housekeeping uses: no years, months or
    weeks (their length varies). One parser for the config and the lock's lease.
    """
    from ferry.duration import parse_duration

    if isinstance(value, timedelta):
        return value
    if not isinstance(value, str):
        raise ValueError(
            f"{value!r} is not an ISO-8601 duration of days, hours, minutes and seconds, "
            "e.g. P3D, PT12H, P1DT6H"
        )
    return parse_duration(value)


class HousekeepingSettings(_Model):
    """Circus Train's ``housekeeping``: how long replaced replica data is kept.

    Data a replication replaced is recorded in the ledger and deleted once
    ``expired-path-duration`` has passed, so that readers that resolved the old location
    can finish. Circus Train's database settings are accepted with a warning.
    """

    circus_train_keys: ClassVar[Mapping[str, str]] = {
        "schema-name": _LEDGER,
        "db-init-script": _LEDGER,
        "data-source": _LEDGER,
        "h2": _LEDGER,
        "fetch-legacy-replica-path-page-size": "Ferry's housekeeping pages its ledger itself",
        "cleanup-threads": "Ferry's housekeeping deletes with its own thread pool",
    }

    expired_path_duration: timedelta = timedelta(days=3)

    @field_validator("expired_path_duration", mode="before")
    @classmethod
    def _iso_duration(cls, value: Any) -> timedelta:
        duration = _parse_iso_duration(value)
        if duration <= timedelta(0):
            raise ValueError(
                f"{value!r}: give a positive duration; readers of replaced data need time to finish"
            )
        return duration


@dataclass(frozen=True)
class Housekeeping:
    """The housekeeping settings that apply to one table replication."""

    orphaned_data_strategy: OrphanedDataStrategy
    expired_path_duration: timedelta

    @property
    def enabled(self) -> bool:
        return self.orphaned_data_strategy is OrphanedDataStrategy.HOUSEKEEPING


class TableReplication(_Model):
    circus_train_keys: ClassVar[Mapping[str, str]] = {
        "partition-iterator-batch-size": _PARTITION_PAGES,
        "partition-fetcher-buffer-size": _PARTITION_PAGES,
    }

    source_table: SourceTableConfig
    replica_table: ReplicaTableConfig = Field(default_factory=ReplicaTableConfig)
    replication_mode: ReplicationMode = ReplicationMode.FULL
    replication_strategy: ReplicationStrategy = ReplicationStrategy.UPSERT
    orphaned_data_strategy: OrphanedDataStrategy = OrphanedDataStrategy.HOUSEKEEPING
    copier_options: CopierOptions | None = None
    transform_options: TransformOptions = Field(default_factory=TransformOptions)
    table_mappings: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _location_for_full(self) -> TableReplication:
        mode = self.replication_mode
        copies = mode in (ReplicationMode.FULL, ReplicationMode.FULL_OVERWRITE)
        if copies and not self.replica_table.table_location:
            raise ValueError(
                f"replica-table.table-location is required for replication-mode {mode}"
            )
        return self

    @model_validator(mode="after")
    def _pattern_keeps_names(self) -> TableReplication:
        if self.source_table.is_pattern and self.replica_table.table_name is not None:
            raise ValueError(
                "replica-table.table-name cannot go with source-table.table-name-pattern: each "
                "matched table keeps its name (replica-table.database-name may rename the "
                "database)"
            )
        return self

    @property
    def replica_database(self) -> str:
        return self.replica_table.database_name or self.source_table.database_name

    @property
    def replica_table_name(self) -> str:
        return self.replica_table.table_name or self.source_table.table_name or ""

    @property
    def replica_qualified_name(self) -> str:
        return f"{self.replica_database}.{self.replica_table_name}"

    def selects(self, qualified_name: str) -> bool:
        """True when this replication replicates the source table ``db.table``."""
        database, _, table = qualified_name.partition(".")
        return bool(table) and self.source_table.matches(database, table)

    def for_table(self, table: str) -> TableReplication:
        """The replication of one table this one selects: a pattern's, made concrete.

        The table keeps its name; a ``table-location`` is the root under which each matched
        table gets ``<table-location>/<table>``. A replication of one table is itself.
        """
        if not self.source_table.is_pattern:
            return self
        try:
            check_hive_name(table, MAX_TABLE_NAME)
        except ValueError as error:
            raise ConfigError(f"{self.source_table.database_name}.{table}: {error}") from None
        source = self.source_table.model_copy(
            update={"table_name": table, "table_name_pattern": None, "exclude": ()}
        )
        replica = self.replica_table
        if replica.table_location:
            replica = replica.model_copy(
                update={"table_location": f"{replica.table_location}/{table}"}
            )
        return self.model_copy(update={"source_table": source, "replica_table": replica})


class EmrServerlessSettings(_Model):
    """Where ``ferry replicate`` runs the Spark copy on AWS (else: spark-submit, locally)."""

    application_id: str
    execution_role_arn: str
    #: The copy job, uploaded (``emr_jobs/copy_files.py``), e.g. ``s3://bucket/copy_files.py``.
    entry_point: str
    spark_submit_parameters: str | None = None
    region: str | None = None


class ScheduleTrigger(_Model):
    """``triggers.schedule``: runs at the times of a cron or rate expression, in a time zone.

    An EventBridge Scheduler schedule on AWS (``ferry.triggers.scheduled_input``); the local
    runtime fires no schedules.
    """

    expression: str
    #: The IANA time zone EventBridge Scheduler evaluates the expression in.
    time_zone: str = "UTC"

    @field_validator("expression")
    @classmethod
    def _expression(cls, value: str) -> str:
        return check_schedule_expression(value)

    @field_validator("time_zone")
    @classmethod
    def _time_zone(cls, value: str) -> str:
        return check_time_zone(value)


class S3Trigger(_Model):
    """One of ``triggers.s3``: an object created in ``bucket`` whose key starts with
    ``prefix`` and ends with ``suffix`` starts a run (``ferry.triggers.s3_event_pattern``).

    ``region`` is the bucket's region when it is not the pipeline's (S3 sends its events to
    EventBridge in the bucket's region: cross-region disaster recovery).
    """

    bucket: str
    prefix: str = ""
    #: The marker a writer creates last; "" starts a run on every object.
    suffix: str = "_SUCCESS"
    region: str | None = None

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, value: str) -> str:
        return check_bucket_name(value)

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if value.startswith("s3://"):
            raise ValueError(
                f"{value!r}: give the start of the keys (e.g. warehouse/sales.db/), "
                "without s3:// and the bucket"
            )
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        return None if value is None else _check_region(value)


class Triggers(_Model):
    """What starts a replication of the config besides a person: ``schedule`` and ``s3``.

    Ferry's own key. The CDK stack deploys them; ``ferry local trigger`` installs the S3
    triggers into the local runtime.
    """

    schedule: ScheduleTrigger | None = None
    s3: tuple[S3Trigger, ...] = ()

    @field_validator("s3", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _distinct(self) -> Triggers:
        # Two equal rules would start two runs for each object.
        for index, trigger in enumerate(self.s3):
            first = self.s3.index(trigger)
            if first != index:
                raise ValueError(
                    f"s3[{first}] and s3[{index}] are the same trigger; "
                    "each object would start two runs"
                )
        return self

    @property
    def declared(self) -> bool:
        """True when the config declares any trigger."""
        return self.schedule is not None or bool(self.s3)


class ReplicationConfig(_Model):
    """A whole config file.

    Top-level ``copier-options``, ``transform-options`` and ``orphaned-data-strategy`` apply
    to every table replication; a table's own override them (copier options key by key),
    as in Circus Train. Each ``TableReplication`` of a loaded config holds the settings that
    apply to it, so the steps read them from the replication alone.
    """

    circus_train_keys: ClassVar[Mapping[str, str]] = {
        "graphite": _METRICS,
        "metrics-reporter": (
            "Ferry reports no metrics periodically: the pipeline publishes each table's "
            "metrics to CloudWatch (namespace Ferry) when the table finishes"
        ),
        "security": _SDK_CREDENTIALS,
        "gcp-security": (
            "Ferry reads gs:// locations with Google's default credentials "
            "(GOOGLE_APPLICATION_CREDENTIALS)"
        ),
        "extension-packages": (
            "Ferry loads no Java extensions: SNS notifications are built in "
            "(sns-event-listener), Avro schemas too (transform-options.avro-serde-options)"
        ),
        "spring": (
            "Spring Boot's settings do not apply to Ferry; profile documents are chosen with "
            "SPRING_PROFILES_ACTIVE"
        ),
        "instance": (
            "Ferry keeps its local state under --home (default .ferry) and its plans under "
            "--work-uri"
        ),
        "logging": "Ferry logs to stderr (-v for more); in the pipeline to CloudWatch Logs",
    }

    source_catalog: CatalogConfig
    replica_catalog: CatalogConfig
    sns_event_listener: SnsEventListener | None = None
    emr_serverless: EmrServerlessSettings | None = None
    housekeeping: HousekeepingSettings = Field(default_factory=HousekeepingSettings)
    triggers: Triggers = Field(default_factory=Triggers)
    # The defaults of every table: declared before table-replications, which they shape.
    copier_options: CopierOptions = Field(default_factory=CopierOptions)
    transform_options: TransformOptions = Field(default_factory=TransformOptions)
    orphaned_data_strategy: OrphanedDataStrategy = OrphanedDataStrategy.HOUSEKEEPING
    #: None or empty: Circus Train's housekeeping-only config (``housekeeping_only``).
    table_replications: list[TableReplication] = Field(default_factory=list)

    _warnings: tuple[ConfigWarning, ...] = PrivateAttr(default=())

    @field_validator("table_replications")
    @classmethod
    def _apply_top_level_defaults(
        cls, replications: list[TableReplication], info: ValidationInfo
    ) -> list[TableReplication]:
        copier = info.data.get("copier_options") or CopierOptions()
        transform = info.data.get("transform_options") or TransformOptions()
        orphaned = info.data.get("orphaned_data_strategy") or OrphanedDataStrategy.HOUSEKEEPING
        return [_with_defaults(r, copier, transform, orphaned) for r in replications]

    @model_validator(mode="after")
    def _triggers_start_replications(self) -> ReplicationConfig:
        if self.housekeeping_only and self.triggers.declared:
            raise ValueError(
                "triggers: a trigger starts a replication of the config, and it has no "
                "table-replications; give it table-replications or remove the triggers"
            )
        return self

    @model_validator(mode="after")
    def _distinct_replicas(self) -> ReplicationConfig:
        """One replica table per replication, and never the source table itself.

        Hive (and Glue) names are case-insensitive: ``Sales.Orders`` is ``sales.orders``.
        Which tables a pattern selects is known only once the source catalog is read: its
        replicas are checked then (``ferry.selection.expand``).
        """
        seen: dict[str, int] = {}
        for index, replication in enumerate(self.table_replications):
            if replication.source_table.is_pattern:
                continue
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
                source = replication.source_table
                if source.is_pattern:
                    if source.database_name.lower() == replication.replica_database.lower():
                        raise ValueError(
                            f"table-replications[{index}].replica-table: each table matching "
                            f"{source.table_name_pattern!r} would be its own replica "
                            "(source-catalog and replica-catalog are the same catalog, and "
                            "matched tables keep their names); give replica-table another "
                            "database-name"
                        )
                elif source.qualified_name.lower() == replication.replica_qualified_name.lower():
                    raise ValueError(
                        f"table-replications[{index}].replica-table: the replica table "
                        f"{source.qualified_name} is the source table itself (source-catalog "
                        "and replica-catalog are the same catalog); give replica-table another "
                        "database-name or table-name"
                    )
        return self

    @property
    def warnings(self) -> tuple[ConfigWarning, ...]:
        """Circus Train's keys that Ferry accepted without using them, in file order, then
        the locations Ferry reads in Hadoop's spelling."""
        return self._warnings

    @property
    def housekeeping_only(self) -> bool:
        """True when the config has no ``table-replications``: Circus Train's
        housekeeping-only config, which ``ferry housekeeping`` takes and a replication
        refuses."""
        return not self.table_replications

    def copier_options_for(self, replication: TableReplication) -> CopierOptions:
        return replication.copier_options or self.copier_options

    def housekeeping_for(self, replication: TableReplication) -> Housekeeping:
        """What housekeeping does with the data this replication replaces."""
        return Housekeeping(
            orphaned_data_strategy=replication.orphaned_data_strategy,
            expired_path_duration=self.housekeeping.expired_path_duration,
        )

    def select(self, tables: Sequence[str] = ()) -> list[TableReplication]:
        """The replications (as written) of the named source tables; all when none is named.

        A name a ``table-name-pattern`` matches selects that replication; which tables it
        selects when none is named is known only from the source catalog
        (``ferry.selection.expand``).
        """
        if not tables:
            return list(self.table_replications)
        # Hive names are case-insensitive, so is the selection.
        for name in tables:
            if not any(r.selects(name) for r in self.table_replications):
                listed = ", ".join(
                    sorted({r.source_table.qualified_name for r in self.table_replications})
                )
                tables_of = f"its tables: {listed}" if listed else "it has no table-replications"
                raise ConfigError(f"{name}: not in the config ({tables_of})")
        # A source replicated to two replicas is two replications: both are selected.
        return [r for r in self.table_replications if any(r.selects(n) for n in tables)]

    def replication_of(
        self, source_table: str, replica_table: str | None = None
    ) -> TableReplication:
        """The one replication a pipeline state works on: its source (and replica) table.

        A table a pattern selected gets that replication, made concrete for it.
        """
        table = source_table.partition(".")[2]
        for replication in self.table_replications:
            if not replication.selects(source_table):
                continue
            concrete = replication.for_table(table)
            if replica_table is None or (
                concrete.replica_qualified_name.lower() == replica_table.lower()
            ):
                return concrete
        raise ConfigError(f"{source_table} → {replica_table}: not in the config")


def _with_defaults(
    replication: TableReplication,
    copier: CopierOptions,
    transform: TransformOptions,
    orphaned: OrphanedDataStrategy,
) -> TableReplication:
    """``replication`` with the top-level settings it does not override itself."""
    own_copier = replication.copier_options
    merged_copier = (
        CopierOptions.model_validate(
            {
                **copier.model_dump(by_alias=True, exclude_unset=True),
                **own_copier.model_dump(by_alias=True, exclude_unset=True),
            }
        )
        if own_copier is not None
        else copier
    )
    fields = replication.model_fields_set
    return replication.model_copy(
        update={
            "copier_options": merged_copier,
            "transform_options": (
                replication.transform_options.over(transform)
                if "transform_options" in fields
                else transform
            ),
            "orphaned_data_strategy": (
                replication.orphaned_data_strategy
                if "orphaned_data_strategy" in fields
                else orphaned
            ),
        }
    )


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> ReplicationConfig:
    """Read and validate the config file at ``path``.

    ``${NAME}`` placeholders are resolved from ``environ`` (default: this process's
    environment, read now).
    """
    path = Path(path)
    try:
        with path.open("rb") as file:
            # A little past the most a config may hold: a larger file is refused unread.
            data = file.read(config_text.MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config: {error.strerror or error}") from None
    return parse_config_text(_decode(_at_most(data, str(path)), str(path)), str(path), environ)


def load_config_uri(uri: str, environ: Mapping[str, str] | None = None) -> ReplicationConfig:
    """Read and validate the config at a URI (``s3://``, ``file://``), as the pipeline does."""
    from ferry import fs  # the CLI reads local files without pyarrow

    if "://" not in uri:
        return load_config(uri, environ)
    try:
        data = fs.read_bytes(uri, limit=config_text.MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{uri}: cannot read config: {str(error).splitlines()[0]}") from None
    return parse_config_text(_decode(_at_most(data, uri), uri), uri, environ)


def _at_most(data: bytes, source: str) -> bytes:
    """``data`` when it is no more than a config may hold (``MAX_CONFIG_BYTES``)."""
    if len(data) > config_text.MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{source}: larger than {config_text.MAX_CONFIG_BYTES // (1024 * 1024)} MiB, the most "
            "a config may hold; is it the config?"
        )
    return data


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


def parse_config_text(
    text: str, source: str, environ: Mapping[str, str] | None = None
) -> ReplicationConfig:
    """Validate YAML text; ``source`` names it in errors (a path or a URI).

    A file of several YAML documents is Circus Train's Spring profiles: the documents of the
    active profiles (``SPRING_PROFILES_ACTIVE``) are merged first (``ferry.config_text``).
    """
    environ = os.environ if environ is None else environ
    documents = config_text.read_documents(text, source)
    return parse_config(config_text.apply_profiles(documents, environ, source), source, environ)


def parse_config(
    data: Any, source: str = "config", environ: Mapping[str, str] | None = None
) -> ReplicationConfig:
    """Validate an already parsed config document.

    In order: ``${NAME}`` placeholders are resolved (from ``environ``, default this process's
    environment); Circus Train's keys that Ferry does not use become warnings; an unset
    placeholder is an error unless it sits under such a key (its value is never used); a
    location with repeated slashes is read as Hadoop reads it, with a warning; then the
    models check the rest.
    """
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: the config must be a mapping with 'source-catalog' and 'replica-catalog'"
        )
    environ = os.environ if environ is None else environ
    data, unresolved = config_text.resolve_placeholders(data, environ)
    warnings: list[ConfigWarning] = []
    data = _set_aside_circus_train_keys(data, ReplicationConfig, (), source, warnings)
    ignored = [_path_of(w.key) for w in warnings]
    for placeholder in unresolved:
        if not any(placeholder.path[: len(path)] == path for path in ignored):
            raise ConfigError(
                f"{source}: {_path(list(placeholder.path))}: {placeholder.placeholder} is not "
                f"set in the environment (write ${{NAME:default}} for a default)"
            )
    data = _read_locations_as_hadoop(data, ReplicationConfig, (), source, warnings)
    try:
        config = ReplicationConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"{source}: {describe_validation_error(error)}") from None
    config._warnings = tuple(warnings)
    return config


# -- Circus Train's keys ----------------------------------------------------------------------


def _set_aside_circus_train_keys(
    data: Any,
    model: type[BaseModel],
    path: config_text.KeyPath,
    source: str,
    warnings: list[ConfigWarning],
) -> Any:
    """``data`` without the Circus Train keys ``model`` does not use, each one a warning.

    Walks the document along the models' fields; anything unknown is left for the model to
    refuse (with a suggestion, ``describe_validation_error``).
    """
    if not isinstance(data, dict):
        return data
    known = _fields_by_key(model)
    set_aside: Mapping[str, str] = getattr(model, "circus_train_keys", {})
    kept = {}
    for key, value in data.items():
        field = known.get(key) if isinstance(key, str) else None
        if field is not None:
            kept[key] = _descend(
                value, field, (*path, key),
                lambda d, m, p: _set_aside_circus_train_keys(d, m, p, source, warnings),
            )  # fmt: skip
        elif isinstance(key, str) and key in set_aside:
            warnings.append(ConfigWarning(source, _path([*path, key]), set_aside[key]))
        else:
            kept[key] = value
    return kept


def _read_locations_as_hadoop(
    data: Any,
    model: type[BaseModel],
    path: config_text.KeyPath,
    source: str,
    warnings: list[ConfigWarning],
) -> Any:
    """``data`` with each location that has repeated slashes as Hadoop reads it, each one
    a warning naming its key, as written and as read (``read_as_hadoop``).

    Walks the document along the models' fields, as ``_set_aside_circus_train_keys`` does;
    a location Ferry refuses either way is left for the model to refuse as written.
    """
    if not isinstance(data, dict):
        return data
    known = _fields_by_key(model)
    locations: frozenset[str] = getattr(model, "location_keys", frozenset())
    read = {}
    for key, value in data.items():
        field = known.get(key) if isinstance(key, str) else None
        if isinstance(key, str) and _kebab(key) in locations and isinstance(value, str):
            normal = read_as_hadoop(value)
            if normal is not None:
                warnings.append(
                    ConfigWarning(
                        source,
                        _path([*path, key]),
                        f"{value!r} is read as {normal!r}: repeated slashes count as one, "
                        "as Hive (Hadoop's Path) reads a location",
                    )
                )
                value = normal
        elif field is not None:
            value = _descend(
                value, field, (*path, key),
                lambda d, m, p: _read_locations_as_hadoop(d, m, p, source, warnings),
            )  # fmt: skip
        read[key] = value
    return read


def _descend(
    value: Any,
    field: Any,
    path: config_text.KeyPath,
    walk: Callable[[Any, type[BaseModel], config_text.KeyPath], Any],
) -> Any:
    """``value`` of a model's ``field`` (at ``path``), ``walk``ed where it holds a model or a
    list of them; as it is otherwise. The config walkers' one way down the models."""
    inner = _model_of(field.annotation)
    if inner is None:
        return value
    if isinstance(value, list):
        return [walk(item, inner, (*path, index)) for index, item in enumerate(value)]
    return walk(value, inner, path)


def _fields_by_key(model: type[BaseModel]) -> dict[str, Any]:
    """A model's fields by every spelling it accepts: ``table-name`` and ``table_name``."""
    fields = {}
    for name, field in model.model_fields.items():
        fields[name] = field
        fields[field.alias or name] = field
    return fields


def _admits_none(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(
        None
    ) in typing.get_args(annotation)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model inside ``X``, ``X | None``, ``list[X]`` or ``tuple[X, ...]``, if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, tuple, Sequence):
        for argument in typing.get_args(annotation):
            found = _model_of(argument)
            if found is not None:
                return found
    return None


def _model_at(loc: Sequence[Any]) -> type[BaseModel] | None:
    """The model whose keys are at ``loc`` of the document (list indexes skipped)."""
    model: type[BaseModel] | None = ReplicationConfig
    for part in loc:
        if isinstance(part, int):
            continue
        field = _fields_by_key(model).get(part) if model is not None else None
        model = _model_of(field.annotation) if field is not None else None
        if model is None:
            return None
    return model


def known_keys(model: type[BaseModel]) -> list[str]:
    """Every key ``model`` accepts: its own (kebab-case) and Circus Train's it sets aside."""
    own = [field.alias or name for name, field in model.model_fields.items()]
    translated = list(getattr(model, "circus_train_translations", {}))
    return own + translated + list(getattr(model, "circus_train_keys", {}))


def _suggestion(key: Any, loc: Sequence[Any]) -> str:
    model = _model_at(loc)
    if model is None or not isinstance(key, str):
        return ""
    close = difflib.get_close_matches(key, known_keys(model), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def _path_of(text: str) -> config_text.KeyPath:
    """``a.b[0].c`` as a key path (the inverse of ``_path``)."""
    parts: list[str | int] = []
    for piece in re.findall(r"[^.\[\]]+|\[\d+\]", text):
        parts.append(int(piece[1:-1]) if piece.startswith("[") else piece)
    return tuple(parts)


# -- errors -----------------------------------------------------------------------------------


def describe_validation_error(error: ValidationError) -> str:
    """One line for the first problem pydantic found (and how many more there are)."""
    problems = error.errors()
    first = problems[0]
    loc = list(first["loc"])
    kind = first["type"]
    if kind == "missing":
        line = f"missing key '{loc[-1]}' in {_path(loc[:-1])}"
    elif kind == "missing_key":  # a key the model requires one of several of
        context = first.get("ctx") or {}
        line = f"missing key '{context['key']}' in {_path(loc)}{context.get('hint', '')}"
    elif kind == "extra_forbidden":
        line = f"unknown key '{loc[-1]}' in {_path(loc[:-1])}{_suggestion(loc[-1], loc[:-1])}"
    else:
        message = first["msg"].removeprefix("Value error, ")
        # A check of the whole config names its keys in its message.
        line = f"{_path(loc)}: {message}" if loc else message
    if len(problems) > 1:
        line += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return line


def _path(loc: Sequence[Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "the top level"
