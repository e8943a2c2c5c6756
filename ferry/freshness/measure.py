"""``measure``: one ``TableFreshness`` per table of a config (see ``ferry.freshness``)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from ferry.catalog import Catalog
from ferry.config import Priority, ReplicationConfig, TableReplication
from ferry.config.filters import render_partition_filter
from ferry.core.errors import CatalogUnreachableError, FerryError
from ferry.core.model import Table
from ferry.freshness.pending_changes import SourceChanges, iceberg_changes, table_changes
from ferry.iceberg.recognise import is_iceberg
from ferry.lifecycle import replica_state
from ferry.planning import selection
from ferry.planning.source_versions import SourceVersion, held_by
from ferry.replicas.ledger import Outcome, Outcomes

#: Tables measured at once: each one is a few catalog calls, mostly waiting.
DEFAULT_THREADS = 16


class FreshnessState(StrEnum):
    IN_SYNC = "in sync"
    BEHIND = "behind"
    FAILING = "failing"
    NEVER_REPLICATED = "never replicated"
    SOURCE_MISSING = "source missing"
    #: The table's catalog entries could not be read (``detail`` says why).
    UNKNOWN = "unknown"


#: Worst first: how ``ferry status`` orders tables (after those over their RPO).
_SEVERITY = [
    FreshnessState.FAILING,
    FreshnessState.UNKNOWN,
    FreshnessState.SOURCE_MISSING,
    FreshnessState.NEVER_REPLICATED,
    FreshnessState.BEHIND,
    FreshnessState.IN_SYNC,
]


@dataclass(frozen=True)
class TableFreshness:
    """How fresh one replica is, and how its replications have ended."""

    source_table: str
    replica_table: str
    state: FreshnessState
    #: Now minus the time of the oldest source change the replica lacks; zero in sync;
    #: None when it cannot be told (never replicated, source missing, unknown).
    behind: timedelta | None
    rpo: timedelta | None
    over_rpo: bool
    priority: Priority
    #: The source's version now, and the one the replica holds (``ferry.planning.source_versions``).
    source_version: str | None = None
    replica_version: str | None = None
    #: When the source was read for the version the replica holds.
    replica_read_at: datetime | None = None
    #: How many source changes the replica lacks (partitions, snapshots, table changes).
    changes_lacking: int = 0
    last_success: datetime | None = None
    last_success_event: str | None = None
    failing_since: datetime | None = None
    last_failure: datetime | None = None
    last_error: str | None = None
    #: Why the state is UNKNOWN or SOURCE_MISSING, for people.
    detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Stable keys for ``ferry status --json`` (times ISO 8601, durations in seconds)."""

        def moment(value: datetime | None) -> str | None:
            return value.isoformat() if value else None

        def seconds(value: timedelta | None) -> float | None:
            return value.total_seconds() if value is not None else None

        return {
            "sourceTable": self.source_table,
            "replicaTable": self.replica_table,
            "state": self.state.value,
            "behindSeconds": seconds(self.behind),
            "rpoSeconds": seconds(self.rpo),
            "overRpo": self.over_rpo,
            "priority": self.priority.value,
            "sourceVersion": self.source_version,
            "replicaVersion": self.replica_version,
            "replicaReadAt": moment(self.replica_read_at),
            "changesLacking": self.changes_lacking,
            "lastSuccess": moment(self.last_success),
            "lastSuccessEvent": self.last_success_event,
            "failingSince": moment(self.failing_since),
            "lastFailure": moment(self.last_failure),
            "lastError": self.last_error,
            "detail": self.detail,
        }


def worst_first(tables: Sequence[TableFreshness]) -> list[TableFreshness]:
    """Over their RPO first, then failing, ..., in sync; the furthest behind first."""
    return sorted(
        tables,
        key=lambda t: (
            not t.over_rpo,
            _SEVERITY.index(t.state),
            -(t.behind or timedelta(0)).total_seconds(),
            t.source_table,
        ),
    )


def measure(
    config: ReplicationConfig,
    source: Catalog,
    replica: Catalog,
    outcomes: Outcomes | None,
    now: datetime,
    *,
    tables: Sequence[str] = (),
    region: str | None = None,
    threads: int = DEFAULT_THREADS,
) -> list[TableFreshness]:
    """One ``TableFreshness`` per table of ``config`` (``tables``: some of them), worst first.

    Reads both catalogs' tables, the partitions the replica lacks, and the outcomes
    (``outcomes``: the state store; None: the catalogs alone) in one batch. ``region``: the
    default AWS region, for a Glue replica catalog's key in the state store. A catalog that
    does not answer raises ``CatalogUnreachableError``.
    """
    replications = selection.expand(config, tables, source.list_table_names)
    keys = [replica_state.replica_of(config.replica_catalog, r, region) for r in replications]
    recorded = outcomes.outcomes(keys) if outcomes is not None and keys else {}
    # Every table of both sides in a few calls (a Hive metastore: 100 a call; Glue: a page
    # of the database); only partitions and Iceberg metadata are read table by table.
    sources = _tables(source, [(r.source_table.database_name, r.source_table.table_name or "")
                               for r in replications])  # fmt: skip
    replicas = _tables(replica, [(r.replica_database, r.replica_table_name) for r in replications])

    def one(index: int) -> TableFreshness:
        replication = replications[index]
        found = (
            sources.get(_name(replication.source_table.database_name,
                              replication.source_table.table_name or "")),
            replicas.get(_name(replication.replica_database, replication.replica_table_name)),
        )  # fmt: skip
        return _measure_one(replication, source, replica, recorded.get(keys[index]), now, found)

    with ThreadPoolExecutor(max(1, threads), thread_name_prefix="ferry-freshness") as pool:
        measured = list(pool.map(one, range(len(replications))))
    return worst_first(measured)


def _name(database: str, table: str) -> str:
    return f"{database}.{table}".lower()


def _tables(catalog: Catalog, names: Sequence[tuple[str, str]]) -> dict[str, Table]:
    """The tables of ``names`` that exist, by ``database.table`` in lower case."""
    by_database: dict[str, list[str]] = {}
    for database, table in names:
        by_database.setdefault(database, []).append(table)
    found: dict[str, Table] = {}
    for database, tables in by_database.items():
        for name, table in catalog.get_tables(database, tables).items():
            found[_name(database, name)] = table
    return found


def _measure_one(
    replication: TableReplication,
    source: Catalog,
    replica: Catalog,
    outcome: Outcome | None,
    now: datetime,
    tables: tuple[Table | None, Table | None],
) -> TableFreshness:
    base: dict[str, Any] = {
        "source_table": replication.source_table.qualified_name,
        "replica_table": replication.replica_qualified_name,
        "rpo": replication.rpo,
        "priority": replication.priority,
    }
    if outcome is not None:
        base.update(
            last_success=outcome.last_success_at,
            last_success_event=outcome.last_success_event,
            failing_since=outcome.failing_since,
            last_failure=outcome.last_failure_at,
            last_error=outcome.last_error,
        )
    failing = outcome is not None and outcome.failing
    try:
        changes, held_version, read_at, detail = _read(
            replication, source, replica, outcome, now, *tables
        )
    except CatalogUnreachableError:
        raise
    except FerryError as error:
        return _freshness(base, FreshnessState.UNKNOWN, None, failing, detail=str(error))
    base.update(replica_version=held_version, replica_read_at=read_at)
    if changes is None:
        state = FreshnessState.SOURCE_MISSING if detail else FreshnessState.NEVER_REPLICATED
        return _freshness(base, state, None, failing, detail=detail)
    lacking = changes.lacking
    behind = max(now - lacking[0], timedelta(0)) if lacking else timedelta(0)
    state = FreshnessState.BEHIND if lacking else FreshnessState.IN_SYNC
    base.update(source_version=str(changes.version), changes_lacking=len(lacking))
    return _freshness(base, state, behind, failing)


def _read(
    replication: TableReplication,
    source: Catalog,
    replica: Catalog,
    outcome: Outcome | None,
    now: datetime,
    source_table: Table | None,
    replica_table: Table | None,
) -> tuple[SourceChanges | None, str | None, datetime | None, str | None]:
    """The source's changes the replica lacks (None: no source, or no replica yet), the
    version the replica holds, when it was read, and why there are no changes to tell."""
    selected = replication.source_table
    version, read_at = held_by(replica_table.parameters) if replica_table else (None, None)
    if outcome is not None and outcome.source_read_at is not None:
        if read_at is None or outcome.source_read_at > read_at:
            version, read_at = outcome.source_version, outcome.source_read_at
    if source_table is None:
        why = f"source table {selected.qualified_name} not found in catalog '{source.name}'"
        return None, version, read_at, why
    if replica_table is None and (outcome is None or outcome.last_success_at is None):
        return None, version, read_at, None
    if is_iceberg(source_table):
        return iceberg_changes(source_table, SourceVersion.parse(version)), version, read_at, None
    partition_filter = render_partition_filter(selected.partition_filter, lambda: now)
    held = SourceVersion.parse(version)
    changes = table_changes(
        source, source_table, replica, replica_table, read_at, partition_filter, held,
        selected.partition_limit,
    )  # fmt: skip
    return changes, version, read_at, None


def _freshness(
    base: dict[str, Any],
    state: FreshnessState,
    behind: timedelta | None,
    failing: bool,
    detail: str | None = None,
) -> TableFreshness:
    rpo: timedelta | None = base["rpo"]
    if failing:
        state = FreshnessState.FAILING
    if rpo is None:
        over = False
    elif behind is None:  # never replicated, or unknown: the promise is not kept
        over = state is not FreshnessState.SOURCE_MISSING
    else:
        over = behind > rpo
    return TableFreshness(state=state, behind=behind, over_rpo=over, detail=detail, **base)
