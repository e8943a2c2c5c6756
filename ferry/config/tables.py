"""The tables of a config: ``table-replications``, each a source table (or a pattern of
them), its replica, how it is replicated, and what the replica gets that the source does
not have (``transform-options``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ferry.config import filters
from ferry.config.base import WholeNumber, _Model
from ferry.config.checks import (
    MAX_DATABASE_NAME,
    MAX_TABLE_NAME,
    check_hive_name,
    check_location,
)
from ferry.config.circus_train import PARTITION_PAGES
from ferry.config.copier_options import CopierOptions
from ferry.config.housekeeping import OrphanedDataStrategy
from ferry.config.objectives import Priority, parse_priority, parse_rpo
from ferry.core.errors import ConfigError


class ReplicationMode(StrEnum):
    FULL = "FULL"  # copy the data into a new snapshot, then the metadata
    FULL_OVERWRITE = "FULL_OVERWRITE"  # replace the replica table (schema changes Hive refuses)
    METADATA_MIRROR = "METADATA_MIRROR"  # metadata only, pointing at the source's data
    METADATA_UPDATE = "METADATA_UPDATE"  # refresh the metadata, keep the replicated locations


class ReplicationStrategy(StrEnum):
    UPSERT = "UPSERT"  # never deletes
    PROPAGATE_DELETES = "PROPAGATE_DELETES"  # drops what the source dropped


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
    ``avro.schema.url`` points at the copy (``ferry/storage/avro.py``).
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


class TableReplication(_Model):
    circus_train_keys: ClassVar[Mapping[str, str]] = {
        "partition-iterator-batch-size": PARTITION_PAGES,
        "partition-fetcher-buffer-size": PARTITION_PAGES,
    }

    source_table: SourceTableConfig
    replica_table: ReplicaTableConfig = Field(default_factory=ReplicaTableConfig)
    replication_mode: ReplicationMode = ReplicationMode.FULL
    replication_strategy: ReplicationStrategy = ReplicationStrategy.UPSERT
    orphaned_data_strategy: OrphanedDataStrategy = OrphanedDataStrategy.HOUSEKEEPING
    copier_options: CopierOptions | None = None
    transform_options: TransformOptions = Field(default_factory=TransformOptions)
    table_mappings: dict[str, str] = Field(default_factory=dict)
    #: How far behind its source the replica may fall (``PT15M``); None: no objective.
    rpo: timedelta | None = None
    #: Which copies start first when the copy budget is taken (the config's own default).
    priority: Priority | None = None

    @field_validator("rpo", mode="before")
    @classmethod
    def _rpo(cls, value: Any) -> timedelta | None:
        return None if value is None else parse_rpo(value)

    @field_validator("priority", mode="before")
    @classmethod
    def _priority(cls, value: Any) -> Priority | None:
        return None if value is None else parse_priority(value)

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
