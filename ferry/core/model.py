"""Ferry's own model of catalog objects: databases, tables, partitions, storage.

Both catalog adapters (Hive metastore, Glue) translate to and from these immutable values,
so the replication logic never sees Thrift structs or Glue dictionaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum


class CatalogKind(StrEnum):
    """Which kind of catalog holds a table: each registers Iceberg tables its own way."""

    HIVE_METASTORE = "hive-metastore"
    GLUE = "glue"


class TableType(StrEnum):
    MANAGED = "MANAGED_TABLE"
    EXTERNAL = "EXTERNAL_TABLE"
    VIEW = "VIRTUAL_VIEW"


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    comment: str | None = None
    #: Glue's column parameters (an Iceberg table's ``iceberg.field.id``, ...); a Hive
    #: metastore's columns have none.
    parameters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SortColumn:
    name: str
    order: int  # 1 ascending, 0 descending, as Hive stores it


@dataclass(frozen=True)
class StorageDescriptor:
    """Where and how a table's or partition's data is stored."""

    location: str | None
    columns: tuple[Column, ...] = ()
    input_format: str | None = None
    output_format: str | None = None
    serde_library: str | None = None
    serde_name: str | None = None
    serde_parameters: Mapping[str, str] = field(default_factory=dict)
    compressed: bool = False
    number_of_buckets: int = -1
    bucket_columns: tuple[str, ...] = ()
    sort_columns: tuple[SortColumn, ...] = ()
    parameters: Mapping[str, str] = field(default_factory=dict)
    stored_as_sub_directories: bool = False

    def with_location(self, location: str | None) -> StorageDescriptor:
        return replace(self, location=location)


@dataclass(frozen=True)
class Database:
    name: str
    description: str | None = None
    location: str | None = None
    parameters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    database: str
    name: str
    table_type: TableType
    storage: StorageDescriptor
    partition_keys: tuple[Column, ...] = ()
    parameters: Mapping[str, str] = field(default_factory=dict)
    owner: str | None = None
    view_original_text: str | None = None
    view_expanded_text: str | None = None
    #: Glue's table ``Description``; a Hive metastore keeps a table's comment in its
    #: ``comment`` parameter instead.
    description: str | None = None
    #: When the catalog last changed the table (Hive: ``transient_lastDdlTime``, else its
    #: create time; Glue: ``UpdateTime``, else ``CreateTime``), and its version (Glue's
    #: ``VersionId``), as the catalog read them: freshness (``ferry.freshness``) compares
    #: them; never written, never part of what "the same table" means.
    changed_at: datetime | None = field(default=None, compare=False)
    version_id: str | None = field(default=None, compare=False)

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.name}"

    @property
    def is_view(self) -> bool:
        return self.table_type is TableType.VIEW

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_keys)

    @property
    def location(self) -> str | None:
        return self.storage.location


@dataclass(frozen=True)
class Partition:
    values: tuple[str, ...]
    storage: StorageDescriptor
    parameters: Mapping[str, str] = field(default_factory=dict)
    #: When the catalog created or last changed it (Hive: the later of ``createTime`` and
    #: ``transient_lastDdlTime``; Glue: ``CreationTime``), as read; never written.
    changed_at: datetime | None = field(default=None, compare=False)

    @property
    def location(self) -> str | None:
        return self.storage.location


def partition_name(keys: tuple[Column, ...], values: tuple[str, ...]) -> str:
    """The Hive partition name, e.g. ``dt=2026-11-20/hour=01`` (path-escaped like Hive)."""
    return "/".join(
        f"{escape_path_name(k.name)}={escape_path_name(v)}"
        for k, v in zip(keys, values, strict=True)
    )


# Characters Hive's FileUtils.escapePathName escapes in partition folder names.
_HIVE_ESCAPED = set("\"#%'*/:=?\\\x7f{[]^")


def escape_path_name(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPED or ord(c) < 0x20 else c for c in value)
