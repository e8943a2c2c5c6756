"""The steps of ``ferry failback`` for one Hive table (``ferry.failover.config_failback`` runs them
in order, each recorded in the table's journal): what the journal records, the reverse table,
the restore of both sides, and the outcome reported."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any
from urllib.parse import urlparse

from ferry.catalog import Catalog
from ferry.config import ReplicationConfig, ReplicationStrategy, TableReplication
from ferry.copying.side_credentials import buckets_of
from ferry.core.errors import ConfigError, FailoverError
from ferry.core.model import Table, TableType
from ferry.failover import Prefer
from ferry.failover import baseline as baselines
from ferry.failover.journal import Journal
from ferry.failover.promotion import failover_id_of
from ferry.failover.reverse import ReverseTable
from ferry.failover.side_changes import TableChanges
from ferry.replicas.replica import PARTITION_FINGERPRINT, TABLE_FINGERPRINT
from ferry.storage import fs

#: Ferry's parameters all start so: the reverse's bookkeeping on the original table.
FERRY_PREFIX = "ferry."


@dataclass
class TableFailback:
    """What failback did (or would do) for one table."""

    source_table: str
    replica_table: str
    status: str  # FAILED_BACK | ALREADY_FAILED_BACK | PLANNED | ICEBERG
    changes: dict[str, Any] = field(default_factory=dict)
    partitions_home: int = 0
    partitions_dropped_at_source: int = 0
    reverse_config: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FailbackTable:
    """One Hive table of a failback: its sides, its baseline and journal, its changes."""

    replication: TableReplication
    replica_table: Table
    source_table: Table
    baseline_uri: str
    journal_uri: str
    journal: Journal | None = None
    changes: TableChanges | None = None
    done: bool = False


def journal_of(table: FailbackTable, prefer: Prefer | None) -> Journal:
    changes = table.changes
    assert changes is not None
    original = table.source_table
    return Journal(
        failover_id=failover_id_of(table.replica_table) or "",
        home=[list(changes.values[n]) for n in changes.to_bring_home(prefer)],
        drop=[list(changes.values[n]) for n in changes.to_drop_at_source(prefer)],
        changes={**changes.to_dict(), "prefer": prefer.value if prefer else None},
        original={
            "location": original.location,
            "tableType": original.table_type.value,
            "parameters": {
                k: v for k, v in original.parameters.items() if k.startswith(FERRY_PREFIX)
            },
            "external": original.parameters.get("EXTERNAL"),
        },
    )


def check_reverse(text: str, uri: str) -> None:
    """The reverse config passes the checks every config passes, before anything is written."""
    from ferry.config.loading import parse_config_text

    try:
        parse_config_text(text, uri)
    except ConfigError as error:
        raise FailoverError(f"the reverse config is not valid: {error}") from None


def replica_buckets(config: ReplicationConfig, tables: Sequence[FailbackTable]) -> list[str]:
    """The buckets of the replica side: those its role reaches forward, and those of the
    promoted replicas' locations (the reverse's source side reaches them through the role)."""
    buckets = set(buckets_of(config, config.replica_catalog))
    for table in tables:
        location = table.replica_table.location
        if location and fs.scheme_of(location) in fs.S3_SCHEMES:
            buckets.add(urlparse(location).netloc)
    return sorted(buckets)


def failover_id(tables: Sequence[FailbackTable]) -> str:
    ids = sorted({t.journal.failover_id for t in tables if t.journal is not None})
    return ids[0] if ids else "none"


def reverse_table(table: FailbackTable) -> ReverseTable:
    journal = table.journal
    assert journal is not None
    replication, original = table.replication, table.source_table
    return ReverseTable(
        replica_database=replication.replica_database,
        replica_table=replication.replica_table_name,
        source_database=original.database,
        source_table=original.name,
        source_location=journal.original["location"],
        partition_keys=table.replica_table.partition_keys,
        partitions=tuple(tuple(v) for v in journal.home) if original.is_partitioned else (),
    )


def restore(table: FailbackTable, source: Catalog, replica: Catalog, threads: int) -> None:
    """Step 3 (see the module): both sides equal, the original table Ferry's no more."""
    journal = table.journal
    assert journal is not None
    replication = table.replication
    original = source.get_table(table.source_table.database, table.source_table.name)
    forward = replica.get_table(table.replica_table.database, table.replica_table.name)
    if original is None or forward is None:
        raise FailoverError(f"{replication.source_table.qualified_name}: a side disappeared")
    home = {tuple(v) for v in journal.home}
    if original.is_partitioned and home:
        came = [p for p in source.list_partitions(original) if p.values in home]
        printed = baselines.fingerprints_of([p.location for p in came if p.location], threads)
        by_values = {p.values: printed.get(p.location or "") for p in came}
        updated = [
            replace(p, parameters={**p.parameters, PARTITION_FINGERPRINT: by_values[p.values]})
            for p in replica.list_partitions(forward)
            if p.values in by_values and by_values[p.values] is not None
        ]
        if updated:
            replica.alter_partitions(forward, updated)
        stripped = [replace(p, parameters=without_ferry(p.parameters, {})) for p in came]
        if stripped:
            source.alter_partitions(original, stripped)
    elif not original.is_partitioned and home:
        printed = baselines.fingerprints_of([original.location] if original.location else [])
        value = printed.get(original.location or "")
        if value is not None:
            forward = replace(forward, parameters={**forward.parameters, TABLE_FINGERPRINT: value})
            replica.alter_table(forward)
    drop = [tuple(v) for v in journal.drop]
    if drop and replication.replication_strategy is ReplicationStrategy.PROPAGATE_DELETES:
        source.drop_partitions(original, drop)
    kept = journal.original
    parameters = without_ferry(original.parameters, kept["parameters"])
    if kept.get("external") is None:
        parameters.pop("EXTERNAL", None)
    else:
        parameters["EXTERNAL"] = kept["external"]
    location = kept["location"] if original.is_partitioned else original.location
    source.alter_table(
        replace(
            original,
            table_type=TableType(kept["tableType"]),
            storage=original.storage.with_location(location),
            parameters=parameters,
        )
    )


def without_ferry(parameters, kept: dict[str, str]) -> dict[str, str]:
    """The parameters without Ferry's own (those ``kept`` had before excepted)."""
    return {
        **{k: v for k, v in parameters.items() if not k.startswith(FERRY_PREFIX)},
        **kept,
    }


def outcome(table: FailbackTable, status: str) -> TableFailback:
    journal = table.journal
    return TableFailback(
        source_table=table.replication.source_table.qualified_name,
        replica_table=table.replication.replica_qualified_name,
        status=status,
        changes=journal.changes if journal else {},
        partitions_home=len(journal.home) if journal else 0,
        partitions_dropped_at_source=(
            len(journal.drop)
            if journal
            and table.replication.replication_strategy is ReplicationStrategy.PROPAGATE_DELETES
            else 0
        ),
    )
