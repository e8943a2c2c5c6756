"""The diff: what one replication does to each partition and to the table, and why.

Pure rules on plain values — a source partition, its replica partition, a data
fingerprint, the mode — with no catalog and no file system: ``ferry.planning.hive_plan`` reads
both sides (``ferry.planning.partition_listing``) and applies them. The rules
(docs/ARCHITECTURE.md, "Incremental replication: the diff"):

- a copying mode copies a selected partition into this event's snapshot when it is **new**,
  when its data fingerprint differs from the one its replica partition records (**data
  changed**), or when its replica partition lies outside the configured table-location
  (**moved**);
- any other replica partition keeps its location and is altered in place only when its
  metadata differs (**metadata changed**), ignoring what the metastore maintains itself
  and Ferry's bookkeeping;
- METADATA_UPDATE refreshes the replica's partitions in place and adds none;
  METADATA_MIRROR points each replica partition at the source's own location;
- the table points at the source's location (mirror), keeps the replica's (update, or a
  partitioned table with nothing copied below it: a location must always exist), or moves
  to this event's snapshot;
- what this event writes points at this event's own copy of its Avro schema.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from enum import StrEnum

from ferry.config import ReplicationMode
from ferry.core.model import Partition, StorageDescriptor, Table, partition_name
from ferry.iceberg.recognise import REGISTRATION, SOURCE_METADATA_LOCATION
from ferry.replicas.replica import (
    COMMIT_CLAIM,
    LAST_REPLICATED,
    PARTITION_FINGERPRINT,
    REPLICATION_EVENT,
    SERVER_MANAGED_PARAMETERS,
    SOURCE_READ_AT,
    SOURCE_VERSION,
    TABLE_FINGERPRINT,
    shape_replica_partition,
)
from ferry.storage import fs
from ferry.storage.avro import AVRO_SCHEMA_URL, SchemaCopy, point_at_replica_schema
from ferry.storage.fingerprint import Fingerprint

#: The modes that copy data into snapshots of their own.
COPYING_MODES = (ReplicationMode.FULL, ReplicationMode.FULL_OVERWRITE)


class Change(StrEnum):
    """Why a partition (or the table) is in a plan."""

    NEW = "new"  # not on the replica
    DATA_CHANGED = "data changed"  # its data fingerprint differs: copied again
    METADATA_CHANGED = "metadata changed"  # same data, other metadata: altered in place
    MOVED = "table-location changed"  # the replica lives elsewhere now: copied there
    DELETED = "deleted at the source"  # PROPAGATE_DELETES: dropped from the replica


@dataclass(frozen=True)
class PartitionChange:
    """One partition of the plan, and why; files and bytes are what will be copied."""

    values: tuple[str, ...]
    change: Change
    files: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class PartitionDecision:
    """What the plan does with one selected source partition."""

    #: The replica partition the plan writes (added where the replica has none, else
    #: altered); None when it writes none.
    replica: Partition | None = None
    #: Why it writes it; None when it writes none.
    change: PartitionChange | None = None
    #: Where its data is copied to, below this event's snapshot; None when nothing is copied.
    copy_to: str | None = None
    #: The replica already holds it as the plan would write it.
    unchanged: bool = False


@dataclass(frozen=True)
class TableDecision:
    """Where the replica table points, and whether its own data is copied."""

    location: str | None
    #: Unpartitioned: whether the table's data changed (else it keeps its location).
    data_changed: bool
    #: The data fingerprint the replica table records; None: as its parameters have it.
    fingerprint: str | None = None
    #: An unpartitioned table's folder is copied into this event's snapshot.
    copied: bool = False


def below_table_location(location: str | None, root: str | None) -> bool:
    """Whether ``location`` lies at or below the replica's configured table-location."""
    return bool(location and root and fs.relative_path(location, root) is not None)


def data_change(old: Partition | None, printed: str | None, root: str | None) -> Change | None:
    """Why a partition's data must be copied (None: the replica already holds it).

    ``old``: the replica partition; ``printed``: the source's data fingerprint; ``root``:
    the replica's table-location.
    """
    if old is None:
        return Change.NEW
    if old.parameters.get(PARTITION_FINGERPRINT) != printed:
        return Change.DATA_CHANGED
    if not below_table_location(old.location, root):
        return Change.MOVED
    return None


def table_data_changed(
    replica_before: Table | None, overwrite: bool, printed: str | None, root: str | None
) -> bool:
    """Whether an unpartitioned table's data must be copied.

    A table with no fingerprint (it has no location to list) counts as changed.
    """
    return (
        replica_before is None
        or overwrite
        or printed is None
        or replica_before.parameters.get(TABLE_FINGERPRINT) != printed
        or not below_table_location(replica_before.location, root)
    )


def partition_subpath(table: Table, partition: Partition) -> str:
    """Where a partition goes below the snapshot: its path relative to the table location.

    A partition stored outside its table's location (Hive allows any location) goes to the
    Hive partition name instead, e.g. ``dt=2026-11-20``.
    """
    if partition.location and table.location:
        relative = fs.relative_path(partition.location, table.location)
        if relative:
            return relative
    return partition_name(table.partition_keys, partition.values)


def snapshot_target(snapshot: str | None, table: Table, partition: Partition) -> str:
    """Where a copied partition's data goes in this event's snapshot folder."""
    return fs.join(snapshot or "", partition_subpath(table, partition))


def decide_partition(
    partition: Partition,
    old: Partition | None,
    parameters: Mapping[str, str],
    printed: Fingerprint | None,
    *,
    mode: ReplicationMode,
    table: Table,
    snapshot: str | None,
    root: str | None,
) -> PartitionDecision:
    """What the replica gets for one selected source partition, and why.

    ``old``: its replica partition (None: the replica has none); ``parameters``: the replica
    parameters made from the source partition's; ``printed``: the source's data
    fingerprint (copying modes); ``table``: the source table; ``snapshot``: this event's
    snapshot folder; ``root``: the replica's table-location.
    """
    parameters = dict(parameters)
    if mode in COPYING_MODES:
        if printed is not None:
            parameters[PARTITION_FINGERPRINT] = str(printed)
        change = data_change(old, parameters.get(PARTITION_FINGERPRINT), root)
        if change is not None:
            target = snapshot_target(snapshot, table, partition)
            copied = PartitionChange(
                partition.values,
                change,
                printed.files if printed else 0,
                printed.bytes if printed else 0,
            )
            return PartitionDecision(
                shape_replica_partition(partition, target, parameters), copied, target
            )
        # No data change: the replica partition exists and keeps its snapshot.
        shaped = shape_replica_partition(partition, old.location, parameters)  # type: ignore[union-attr]
    elif mode is ReplicationMode.METADATA_UPDATE:
        if old is None:
            return PartitionDecision()  # never replicated: METADATA_UPDATE adds no data
        if PARTITION_FINGERPRINT in old.parameters:
            parameters[PARTITION_FINGERPRINT] = old.parameters[PARTITION_FINGERPRINT]
        shaped = shape_replica_partition(partition, old.location, parameters)
    else:  # METADATA_MIRROR: the replica points at the source's own data
        shaped = shape_replica_partition(partition, partition.location, parameters)
        if old is None:
            return PartitionDecision(shaped, PartitionChange(partition.values, Change.NEW))
    if same_partition(shaped, old):
        return PartitionDecision(unchanged=True)
    return PartitionDecision(shaped, PartitionChange(partition.values, Change.METADATA_CHANGED))


def decide_table(
    source_table: Table,
    replica_before: Table | None,
    printed: Fingerprint | None,
    *,
    mode: ReplicationMode,
    overwrite: bool,
    snapshot: str | None,
    partitions_copied: bool,
    root: str | None,
) -> TableDecision:
    """Where the replica table points after this event.

    ``printed``: an unpartitioned source table's data fingerprint (copying modes);
    ``partitions_copied``: whether this event copies any partition's data.
    """
    if mode is ReplicationMode.METADATA_MIRROR:
        return TableDecision(source_table.location, data_changed=True)
    if mode is ReplicationMode.METADATA_UPDATE:
        before = replica_before.parameters if replica_before else {}
        return TableDecision(
            replica_before.location,  # type: ignore[union-attr]
            data_changed=False,
            fingerprint=before.get(TABLE_FINGERPRINT),
        )
    if source_table.is_partitioned:
        # The table's location moves to this event's folder only when data was copied below
        # it: a location must always exist.
        keep = replica_before is not None and not overwrite and not partitions_copied
        location = replica_before.location if keep else snapshot  # type: ignore[union-attr]
        return TableDecision(location, data_changed=True)
    fingerprint = str(printed) if printed is not None else None
    if table_data_changed(replica_before, overwrite, fingerprint, root):
        return TableDecision(snapshot, data_changed=True, fingerprint=fingerprint, copied=True)
    return TableDecision(
        replica_before.location,  # type: ignore[union-attr]
        data_changed=False,
        fingerprint=fingerprint,
    )


def deleted_at_source(
    existing: Mapping[tuple[str, ...], Partition], at_source: Collection[tuple[str, ...]]
) -> list[Partition]:
    """PROPAGATE_DELETES: the replica partitions whose source partition is gone, in order."""
    return [old for values, old in sorted(existing.items()) if values not in at_source]


def point_at_replica_schemas(
    table: Table,
    to_add: Sequence[Partition],
    to_alter: Sequence[Partition],
    *,
    base_url: str | None,
    event_id: str,
    root: str | None,
) -> tuple[Table, list[Partition], list[Partition], tuple[SchemaCopy, ...]]:
    """The table and partitions this event writes, each pointing at this event's own copy of
    its Avro schema file, and the schema files to copy (each once)."""
    table, copy = point_at_replica_schema(table, base_url, event_id, root)
    added = [point_at_replica_schema(p, base_url, event_id, root) for p in to_add]
    altered = [point_at_replica_schema(p, base_url, event_id, root) for p in to_alter]
    copies = [copy, *(c for _, c in added + altered)]
    return (
        table,
        [p for p, _ in added],
        [p for p, _ in altered],
        tuple(dict.fromkeys(c for c in copies if c is not None)),
    )


# -- what "the same" means ----------------------------------------------------------------------

#: Parameters that describe when, or by which event, something was written, or that the
#: metastore maintains itself: ignored when deciding whether metadata differs.
_NOT_METADATA = frozenset(
    {
        REPLICATION_EVENT,
        COMMIT_CLAIM,
        LAST_REPLICATED,
        SOURCE_VERSION,
        SOURCE_READ_AT,
        SOURCE_METADATA_LOCATION,
        REGISTRATION,
        *SERVER_MANAGED_PARAMETERS,
        "numFiles",
        "totalSize",
        "numRows",
        "rawDataSize",
        "COLUMN_STATS_ACCURATE",
        "numFilesErasureCoded",
        "last_modified_by",
        "last_modified_time",
    }
)
#: An Avro schema URL names the event whose copy it points at: never a difference.
_IGNORED = _NOT_METADATA | {AVRO_SCHEMA_URL}
#: What a partition's storage is compared on: all of it but its location and bookkeeping.
_STORAGE_FIELDS = tuple(
    f.name for f in dataclass_fields(StorageDescriptor) if f.name not in ("location", "parameters")
)


def _comparable(parameters: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in parameters.items() if k not in _IGNORED}


def same_partition(shaped: Partition, old: Partition) -> bool:
    """Whether the replica partition ``old`` already reads as ``shaped`` would."""
    same_location = shaped.location == old.location or (
        shaped.location is not None
        and old.location is not None
        and fs.relative_path(shaped.location, old.location) == ""
    )
    new_storage, old_storage = shaped.storage, old.storage
    return (
        same_location
        and _comparable(shaped.parameters) == _comparable(old.parameters)
        and all(getattr(new_storage, f) == getattr(old_storage, f) for f in _STORAGE_FIELDS)
        and _comparable(new_storage.parameters) == _comparable(old_storage.parameters)
    )


def definition(table: Table) -> Table:
    """The table as readers see it, without location and per-run bookkeeping."""
    storage = table.storage
    comparable_storage = replace(
        storage,
        location=None,
        parameters=_comparable(storage.parameters),
        serde_parameters=_comparable(storage.serde_parameters),
    )
    return replace(table, storage=comparable_storage, parameters=_comparable(table.parameters))
