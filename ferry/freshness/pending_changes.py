"""What the source has that the replica lacks: the times of those changes, read cheaply.

Each function reads one catalog table's own bookkeeping: no data file is listed or read.
An Iceberg table's current ``metadata.json`` is read (one file) for its snapshot log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ferry.catalog import Catalog, partition_sort_key
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.catalog.hive_thrift import partition_from_thrift
from ferry.core.model import CatalogKind, Partition, Table, partition_name
from ferry.iceberg.recognise import metadata_location
from ferry.planning.source_versions import ICEBERG, SourceVersion, names_digest, of_iceberg

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
    partition_limit: int | None = None,
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
    count = digest = None
    if source_table.is_partitioned:
        partitions: list[Partition] | None = None
        if partition_filter is not None or glue:
            # Glue answers partitions whole (with their CreationTime) however they are asked
            # for; a filter selects few. Either way one listing holds the times.
            partitions = source.list_partitions(source_table, partition_filter, partition_limit)
            values = {p.values for p in partitions}
        else:
            values = source.list_partition_values(source_table)  # names only: cheap
            if partition_limit is not None:  # the first ones, as Plan selects them
                keys = source_table.partition_keys
                ordered = sorted(values, key=lambda v: partition_sort_key(keys, v))
                values = set(ordered[:partition_limit])
        count, digest = len(values), names_digest(values)
        if replica_table is None:
            present: set[tuple[str, ...]] = set()
        elif held is not None and held.names == digest:
            # The very names the replica's version recorded: none added since, and the
            # replica's need not be listed (one call a table saved).
            present = values
        else:
            present = replica.list_partition_values(replica_table)
        if partitions is not None:
            missing = [p for p in partitions if p.values not in present]
        else:
            missing = _hive_partitions(source, source_table, sorted(values - present))
        for partition in missing:
            created = _utc(partition.changed_at)
            if created and (since is None or created >= since):
                lacking.append(created)
    version = SourceVersion(
        kind="glue" if glue else "hive",
        changed_at=max([t for t in (table_time, *lacking) if t], default=None),
        partitions=count,
        version_id=source_table.version_id if glue else None,
        names=digest,
    )
    return SourceChanges(version, tuple(sorted(lacking)))


def iceberg_changes(source_table: Table, held: SourceVersion | None) -> SourceChanges:
    """An Iceberg table's snapshots committed after the one the replica holds."""
    # Here: reading Iceberg metadata takes pyiceberg and pyarrow, which every function that
    # builds a state context would import at its cold start otherwise.
    from ferry.iceberg.fileio import FerryFileIO
    from ferry.iceberg.reading import read_table_metadata

    location = metadata_location(source_table)
    if location is None:
        return SourceChanges(of_iceberg(None, None), ())
    metadata = read_table_metadata(FerryFileIO(), location)
    current = metadata.current_snapshot()
    version = of_iceberg(metadata.current_snapshot_id, current.timestamp_ms if current else None)
    held_id = held.snapshot_id if held is not None and held.kind == ICEBERG else None
    if held_id is not None and held_id == version.snapshot_id:
        return SourceChanges(version, ())
    by_id = {s.snapshot_id: s for s in metadata.snapshots}
    # The snapshots after the held one: the current snapshot's ancestors down to it.
    lineage, snapshot_id = [], metadata.current_snapshot_id
    while snapshot_id is not None and snapshot_id != held_id and snapshot_id in by_id:
        lineage.append(by_id[snapshot_id])
        snapshot_id = by_id[snapshot_id].parent_snapshot_id
    if held_id is not None and snapshot_id != held_id and held is not None and held.changed_at:
        # The held snapshot is not an ancestor (expired, or a rollback): by time instead.
        held_ms = round(held.changed_at.timestamp() * 1000)
        lineage = [s for s in metadata.snapshots if s.timestamp_ms > held_ms]
    later = sorted(datetime.fromtimestamp(s.timestamp_ms / 1000, UTC) for s in lineage)
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
