"""What a catalog's change feed says: which table changed, how, and when.

Both feeds become the same ``CatalogChange``s: the EventBridge events AWS Glue sends for
its Data Catalog (``glue_changes``) and the events of a Hive metastore's notification log
(``hive_changes``). A change only says which table to look at: the replication that follows
compares the catalogs (``ferry.planning.diff``), so a lost, repeated or reordered event changes when
a table is replicated, never what the replica holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ferry.catalog.hive_events import HiveEvent
from ferry.config import ReplicationConfig
from ferry.statemachine.payloads import optional_time

#: The detail-types of the events AWS Glue sends for its Data Catalog.
GLUE_TABLE_CHANGE = "Glue Data Catalog Table State Change"
GLUE_DATABASE_CHANGE = "Glue Data Catalog Database State Change"
GLUE_DETAIL_TYPES = (GLUE_TABLE_CHANGE, GLUE_DATABASE_CHANGE)

#: The database events that name no table of the database: nothing to replicate yet (a new
#: database), or tables that each have an event of their own.
_DATABASE_ONLY = frozenset(
    {"CreateDatabase", "DeleteDatabase", "UpdateDatabase", "CREATE_DATABASE", "DROP_DATABASE",
     "ALTER_DATABASE"}
)  # fmt: skip


@dataclass(frozen=True)
class CatalogChange:
    """One table changed in the source catalog (``kind``: the API call or Hive's event type)."""

    database: str
    table: str
    kind: str
    #: When the catalog made the change; None when the feed does not say.
    time: datetime | None = None

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.table}".lower()


@dataclass(frozen=True)
class GlueEventOrigin:
    """Which catalog an event is from: its account and region."""

    account: str | None
    region: str | None


def glue_changes(event: Mapping[str, Any]) -> tuple[GlueEventOrigin, list[CatalogChange]]:
    """The table changes of one EventBridge event of AWS Glue's Data Catalog.

    A Table State Change names one table (``tableName``) and, for partition calls, up to 100
    of its partitions; a Database State Change names the tables a ``CreateTable``,
    ``DeleteTable`` or ``BatchDeleteTable`` changed (``changedTables``). Any other event
    (a job, a crawler, a database alone) changes no table.
    """
    origin = GlueEventOrigin(event.get("account"), event.get("region"))
    detail = event.get("detail")
    if event.get("source") != "aws.glue" or not isinstance(detail, Mapping):
        return origin, []
    database, kind = detail.get("databaseName"), str(detail.get("typeOfChange") or "")
    time = optional_time(event.get("time"))
    if not isinstance(database, str) or kind in _DATABASE_ONLY:
        return origin, []
    match event.get("detail-type"):
        case "Glue Data Catalog Table State Change":
            tables = [detail.get("tableName")]
        case "Glue Data Catalog Database State Change":
            tables = list(detail.get("changedTables") or [])
        case _:
            return origin, []
    return origin, [
        CatalogChange(database, table, kind, time) for table in tables if isinstance(table, str)
    ]


def hive_changes(events: Iterable[HiveEvent]) -> list[CatalogChange]:
    """The table changes of events of a Hive metastore's notification log."""
    return [
        CatalogChange(event.database, event.table, event.type, event.time)
        for event in events
        if event.database and event.table and event.type not in _DATABASE_ONLY
    ]


@dataclass
class TableChanges:
    """The changes of one source table in a batch of events: how many, the earliest, how."""

    count: int = 0
    first: datetime | None = None
    kinds: set[str] = field(default_factory=set)

    def add(self, change: CatalogChange) -> None:
        self.count += 1
        self.kinds.add(change.kind)
        if change.time is not None and (self.first is None or change.time < self.first):
            self.first = change.time


@dataclass(frozen=True)
class Scoped:
    """The changes of a batch that the config replicates, by source table (``db.table``),
    and how many it does not."""

    tables: dict[str, TableChanges]
    ignored: int


def in_scope(config: ReplicationConfig, changes: Sequence[CatalogChange]) -> Scoped:
    """The changes of tables some replication of ``config`` selects, merged per table."""
    tables: dict[str, TableChanges] = {}
    ignored = 0
    for change in changes:
        name = change.qualified_name
        if not any(r.selects(name) for r in config.table_replications):
            ignored += 1
            continue
        tables.setdefault(name, TableChanges()).add(change)
    return Scoped(tables, ignored)
