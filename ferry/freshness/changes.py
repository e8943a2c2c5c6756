"""What the source has that the replica lacks: the times of those changes, read cheaply.

Each function reads one catalog table's own bookkeeping: no data file is listed or read.
An Iceberg table's current ``metadata.json`` is read (one file) for its snapshot log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ferry.catalog import Catalog
from ferry.catalog.hive import HiveMetastoreCatalog, partition_from_thrift
from ferry.iceberg.fileio import FerryFileIO
from ferry.iceberg.reading import read_table_metadata
from ferry.iceberg.recognise import metadata_location
from ferry.model import CatalogKind, Partition, Table, partition_name
from ferry.source_versions import ICEBERG, SourceVersion, of_iceberg

#: Partitions fetched by name per metastore call.
_NAMES_PER_CALL = 500


@dataclass(frozen=True)
class SourceChanges:
    """The source's current version, and when each change the replica lacks was made."""

    version: SourceVersion
    #: The times of the changes the replica lacks, oldest first (empty: in sync).
    lacking: tuple[datetime, ...]


def table_changes(
    source: Catalog,
    source_table: Table,
    replica: Catalog,
    replica_table: Table | None,
    read_at: datetime | None,
    partition_filter: str | None,
    held: SourceVersion | None = None,
) -> SourceChanges:
    """A Hive or Glue table's changes after ``read_at`` (when the replica's source was read).

    The table's own change time counts when it is later than the one the replica's version
    recorded (else than ``read_at``); so does each partition the replica does not have that
    was created since ``read_at`` (a partition the filter leaves out is never compared; one
    created before ``read_at`` was left out on purpose). ``read_at`` None: every change is
    lacking. A Hive metastore keeps whole seconds: a partition of the second the source was
    read in counts as lacking (never the other way round).
    """
    glue = source.kind is CatalogKind.GLUE
    lacking: list[datetime] = []
    table_time = _utc(source_table.changed_at)
    seen = held.changed_at if held is not None and held.kind in ("hive", "glue") else None
    if table_time and (seen or read_at) is not None:
        if table_time > (seen or read_at):  # type: ignore[operator]
            lacking.append(table_time)
    elif table_time:
        lacking.append(table_time)
    since = read_at.replace(microsecond=0) if read_at is not None else None
    count = None
    if source_table.is_partitioned:
        held = replica.list_partition_values(replica_table) if replica_table else set()
        if partition_filter is not None or glue:
            # Glue answers partitions whole (with their CreationTime) however they are asked
            # for; a filter selects few. Either way one listing holds the times.
            partitions = source.list_partitions(source_table, partition_filter)
            count = len(partitions)
            missing = [p for p in partitions if p.values not in held]
        else:
            values = source.list_partition_values(source_table)  # names only: cheap
            count = len(values)
            missing = _hive_partitions(source, source_table, sorted(values - held))
        for partition in missing:
            created = _utc(partition.changed_at)
            if created and (since is None or created >= since):
                lacking.append(created)
    version = SourceVersion(
        kind="glue" if glue else "hive",
        changed_at=max([t for t in (table_time, *lacking) if t], default=None),
        partitions=count,
        version_id=source_table.version_id if glue else None,
    )
    return SourceChanges(version, tuple(sorted(lacking)))


def iceberg_changes(source_table: Table, held: SourceVersion | None) -> SourceChanges:
    """An Iceberg table's snapshots committed after the one the replica holds."""
    location = metadata_location(source_table)
    if location is None:
        return SourceChanges(of_iceberg(None, None), ())
    metadata = read_table_metadata(FerryFileIO(), location)
    current = metadata.current_snapshot()
    version = of_iceberg(metadata.current_snapshot_id, current.timestamp_ms if current else None)
    if held is not None and held.kind == ICEBERG and held.snapshot_id == version.snapshot_id:
        return SourceChanges(version, ())
    held_ms = (
        int(held.changed_at.timestamp() * 1000)
        if held is not None and held.kind == ICEBERG and held.changed_at
        else None
    )
    later = sorted(
        datetime.fromtimestamp(s.timestamp_ms / 1000, UTC)
        for s in metadata.snapshots
        if held_ms is None or s.timestamp_ms > held_ms
    )
    if not later:  # another current snapshot, none newer (a rollback): changed at the update
        later = [datetime.fromtimestamp(metadata.last_updated_ms / 1000, UTC)]
    return SourceChanges(version, tuple(later))


def _hive_partitions(
    source: Catalog, table: Table, values: list[tuple[str, ...]]
) -> list[Partition]:
    """The partitions of these values, fetched by name (only the ones the replica lacks)."""
    if not values:
        return []
    if not isinstance(source, HiveMetastoreCatalog):  # another catalog: its own listing
        wanted = set(values)
        return [p for p in source.list_partitions(table) if p.values in wanted]
    names = [partition_name(table.partition_keys, v) for v in values]
    found: list[Partition] = []
    for start in range(0, len(names), _NAMES_PER_CALL):
        page = names[start : start + _NAMES_PER_CALL]
        found.extend(
            partition_from_thrift(p)
            for p in source.call(
                lambda c, n=page: c.get_partitions_by_names(table.database, table.name, n)
            )
        )
    return found


def _utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
