"""The catalogs a config replicates between, and where its notifications go.

A catalog is a Hive metastore (``hive-metastore-uris``) or the Glue Data Catalog
(``glue``); notifications are Circus Train's ``sns-event-listener``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ferry.config.assume_role import AssumeRole
from ferry.config.base import WholeNumber, _Model
from ferry.config.checks import check_region
from ferry.config.circus_train import NO_HADOOP_CONFIGURATION, NO_SSH_TUNNEL

_THRIFT_URI = re.compile(r"thrift://(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/\[\]\s]+):(?P<port>[^/]*)")
_TOPIC_ARN = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):sns:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+):(?P<account>\d{12})"
    r":(?P<name>[A-Za-z0-9_-]{1,256}(?:\.fifo)?)"
)


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


_ACCOUNT_ID = re.compile(r"\d{12}")


class GlueSettings(_Model):
    region: str | None = None
    #: The AWS account whose Data Catalog it is: 12 digits.
    catalog_id: str | None = None

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        return None if value is None else check_region(value)

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
        "site-xml": NO_HADOOP_CONFIGURATION,
        "configuration-properties": NO_HADOOP_CONFIGURATION,
        "metastore-tunnel": NO_SSH_TUNNEL,
    }

    name: str
    hive_metastore_uris: str | None = None
    glue: GlueSettings | None = None
    #: Most partitions read or written by one catalog call (Glue writes at most 100 a call).
    batch_size: WholeNumber = Field(default=1000, ge=1, le=1000)
    #: The role Ferry assumes to reach this side in another account: its Glue catalog and
    #: the buckets of the tables written there (``ferry.config.assume_role``).
    assume_role: AssumeRole | None = None

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
        check_region(value)
        topic = _TOPIC_ARN.fullmatch(info.data.get("topic") or "")
        if topic is not None and topic["region"] != value:
            raise ValueError(
                f"{value!r} is not the topic's region {topic['region']!r} "
                "(SNS publishes to a topic only in its own region)"
            )
        return value
