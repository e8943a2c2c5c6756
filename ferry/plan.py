"""Plan one table replication: what to copy where, and what the replica will become.

Planning only reads (the source and replica catalogs and the source files); it writes
nothing, so a plan that fails, or a dry run, changes neither side.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from ferry import fs
from ferry.catalog import Catalog
from ferry.config import ReplicationMode, TableReplication
from ferry.errors import CopyError, ReplicationModeError, SourceTableNotFoundError
from ferry.filters import Clock, render_partition_filter
from ferry.manifest import CopyRoot, ManifestSummary, ManifestWriter
from ferry.model import Partition, Table, partition_name
from ferry.replica import (
    LAST_REPLICATED,
    REPLICATION_EVENT,
    SERVER_MANAGED_PARAMETERS,
    check_replica_guard,
    check_replica_location,
    replica_parameters,
    shape_replica_partition,
    shape_replica_table,
)
from ferry.views import rewrite_view_sql


@dataclass(frozen=True)
class ReplicationPlan:
    """Everything one replication will do, decided before anything is written."""

    event_id: str
    replication: TableReplication
    source_table: Table
    replica_before: Table | None
    replica_table: Table
    partitions_to_add: tuple[Partition, ...]
    partitions_to_alter: tuple[Partition, ...]
    #: What the manifest holds (its files were streamed to the manifest while listing).
    manifest: ManifestSummary
    #: The new snapshot folder (FULL) that a failed run removes again, unless referenced.
    snapshot_location: str | None
    partition_filter: str | None

    @property
    def mode(self) -> ReplicationMode:
        return self.replication.replication_mode

    @property
    def replica_partitions(self) -> tuple[Partition, ...]:
        return self.partitions_to_add + self.partitions_to_alter

    @property
    def kind(self) -> str:
        """ "partitioned table", "table" or "view", for people."""
        if self.source_table.is_view:
            return "view"
        return "partitioned table" if self.source_table.is_partitioned else "table"

    @property
    def unchanged(self) -> bool:
        """True when writing would change nothing a reader sees.

        That is: no partition is selected, and the replica table already has the
        definition this plan would give it (schema, storage, parameters), ignoring the
        bookkeeping of when and by which event it was written.
        """
        if self.replica_partitions or self.replica_before is None:
            return False
        if not self.source_table.is_partitioned:
            return False  # an unpartitioned table's data is the table: always copied
        return _definition(self.replica_before) == _definition(self.replica_table)


def plan_replication(
    replication: TableReplication,
    source: Catalog,
    replica: Catalog,
    event_id: str,
    clock: Clock,
    list_threads: int = 8,
    manifest: ManifestWriter | None = None,
) -> ReplicationPlan:
    """Decide what one replication does; its files are listed into ``manifest``.

    Without a manifest writer the files are only counted (a dry run).
    """
    source_config = replication.source_table
    source_table = source.get_table(source_config.database_name, source_config.table_name)
    if source_table is None:
        raise SourceTableNotFoundError(
            f"source table {source_config.qualified_name} not found in catalog "
            f"'{source.name}' ({source.description})"
        )
    replica_before = replica.get_table(replication.replica_database, replication.replica_table_name)
    check_replica_guard(replica_before, replication)
    mode = replication.replication_mode
    if source_table.is_view and mode is not ReplicationMode.METADATA_MIRROR:
        raise ReplicationModeError(
            f"{source_table.qualified_name} is a view; views replicate with "
            f"replication-mode METADATA_MIRROR only"
        )

    partition_filter = render_partition_filter(source_config.partition_filter, clock)
    source_partitions = source.list_partitions(
        source_table, partition_filter, source_config.partition_limit
    )
    check_replica_location(source_table, replication, source_partitions)
    now = clock()

    def parameters_for(source_parameters, source_location: str | None) -> dict[str, str]:
        return replica_parameters(
            source_parameters,
            source_table=source_table,
            source_location=source_location,
            source_catalog_name=source.name,
            source_catalog_description=source.description,
            event_id=event_id,
            mode=mode,
            replicated_at=now,
            extra=replication.transform_options.table_properties,
        )

    roots: list[CopyRoot] = []
    snapshot: str | None = None
    if mode is ReplicationMode.FULL:
        snapshot = fs.join(replication.replica_table.table_location or "", event_id)
        table_location = snapshot
        partition_locations = [
            fs.join(snapshot, _partition_subpath(source_table, p)) for p in source_partitions
        ]
        roots = (
            [
                CopyRoot(p.location, target)
                for p, target in zip(source_partitions, partition_locations, strict=True)
                if p.location
            ]
            if source_table.is_partitioned
            else [CopyRoot(source_table.location, snapshot)]
            if source_table.location
            else []
        )
    else:
        table_location = source_table.location
        partition_locations = [p.location for p in source_partitions]

    view_texts = None
    if source_table.is_view:
        view_texts = tuple(
            rewrite_view_sql(text, replication.table_mappings, source_table.database)
            for text in (source_table.view_original_text, source_table.view_expanded_text)
        )
    replica_table = shape_replica_table(
        source_table,
        replication,
        table_location,
        parameters_for(source_table.parameters, source_table.location),
        view_texts,
    )
    replica_partitions = [
        shape_replica_partition(p, location, parameters_for(p.parameters, p.location))
        for p, location in zip(source_partitions, partition_locations, strict=True)
    ]
    existing = (
        replica.list_partition_values(replica_before)
        if replica_before and replica_before.is_partitioned
        else set()
    )
    return ReplicationPlan(
        event_id=event_id,
        replication=replication,
        source_table=source_table,
        replica_before=replica_before,
        replica_table=replica_table,
        partitions_to_add=tuple(p for p in replica_partitions if p.values not in existing),
        partitions_to_alter=tuple(p for p in replica_partitions if p.values in existing),
        manifest=list_files_into(
            roots, manifest or ManifestWriter(None, event_id, 1000), list_threads
        ),
        snapshot_location=snapshot,
        partition_filter=partition_filter,
    )


def _definition(table: Table) -> Table:
    """The table as readers see it, without location and per-run bookkeeping."""
    bookkeeping = {REPLICATION_EVENT, LAST_REPLICATED, *SERVER_MANAGED_PARAMETERS}
    parameters = {k: v for k, v in table.parameters.items() if k not in bookkeeping}
    return replace(table, storage=table.storage.with_location(None), parameters=parameters)


def _partition_subpath(table: Table, partition: Partition) -> str:
    """Where a partition goes below the snapshot: its path relative to the table location.

    A partition stored outside its table's location (Hive allows any location) goes to the
    Hive partition name instead, e.g. ``dt=2026-11-20``.
    """
    if partition.location and table.location:
        relative = fs.relative_path(partition.location, table.location)
        if relative:
            return relative
    return partition_name(table.partition_keys, partition.values)


def list_files_into(
    roots: Sequence[CopyRoot], writer: ManifestWriter, threads: int
) -> ManifestSummary:
    """List every file below each root on a thread pool, streaming them to the manifest.

    Listings run ahead of the writer by at most a few per thread, so memory holds a few
    partitions' listings, never the whole table's.
    """

    def listing(root: CopyRoot) -> list[fs.FileEntry]:
        try:
            return fs.list_files(root.source)
        except OSError as error:
            raise CopyError(f"cannot list source files at {root.source}: {error}") from None

    window = max(1, threads) * 4
    try:
        with ThreadPoolExecutor(max(1, threads), thread_name_prefix="ferry-list") as pool:
            pending: deque = deque()
            for root in roots:
                pending.append((root, pool.submit(listing, root)))
                if len(pending) >= window:
                    done_root, future = pending.popleft()
                    writer.add(done_root, future.result())
            while pending:
                done_root, future = pending.popleft()
                writer.add(done_root, future.result())
    except BaseException:
        writer.abandon()
        raise
    return writer.close()
