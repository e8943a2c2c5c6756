"""What a Hive table's plan reads of both sides before it decides anything.

The selected source partitions (``partition-filter``, rendered at the run's time, and
``partition-limit``), the replica's partitions by their values, and one listing of the
selected source files. That one listing gives both the data fingerprint of every selected
location and the manifest: a location's files stream to the manifest as soon as they are
listed when the diff's rule (``ferry.planning.diff``) says its data must be copied — the
same rule ``ferry.planning.hive_plan`` applies afterwards.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from ferry.config import ReplicationMode, TableReplication
from ferry.config.filters import render_partition_filter
from ferry.copying.manifest import CopyRoot
from ferry.core import faults
from ferry.core.model import Partition, Table
from ferry.planning.diff import COPYING_MODES, data_change, snapshot_target, table_data_changed
from ferry.planning.replication_plan import PlanInputs
from ferry.replicas.replica import check_replica_location
from ferry.storage import fingerprint, fs


@dataclass(frozen=True)
class PartitionListing:
    """The selected source partitions, the replica's, and the selected files' fingerprints."""

    source_table: Table
    #: FULL_OVERWRITE of an existing replica: its partitions are not read (all are new).
    overwrite: bool
    #: ``replica-table.table-location``.
    root: str | None
    #: This event's snapshot folder below ``root``; None for modes that copy no data.
    snapshot: str | None
    #: The partition filter as rendered for this run.
    partition_filter: str | None
    partitions: list[Partition]
    #: The replica's partitions by their values (none when it is to be overwritten).
    existing: dict[tuple[str, ...], Partition]
    #: The data fingerprint of every selected source location (modes that copy data);
    #: empty until the listing gave them.
    fingerprints: dict[str, fingerprint.Fingerprint]


def list_partitions(inputs: PlanInputs, source_table: Table, threads: int) -> PartitionListing:
    """Read the selected partitions of both sides and list the selected source files once,
    streaming to the manifest the files whose data must be copied."""
    replication = inputs.replication
    mode = replication.replication_mode
    overwrite = mode is ReplicationMode.FULL_OVERWRITE and inputs.replica_before is not None
    root = replication.replica_table.table_location
    snapshot = fs.join(root or "", inputs.event_id) if mode in COPYING_MODES else None
    partition_filter = render_partition_filter(
        replication.source_table.partition_filter, inputs.clock
    )
    partitions, existing = _read_partitions(inputs, source_table, partition_filter, overwrite)
    listing = PartitionListing(
        source_table, overwrite, root, snapshot, partition_filter, partitions, existing, {}
    )
    printed = _fingerprints(
        replication, source_table, partitions, partition_filter, threads, _copier(inputs, listing)
    )
    return replace(listing, fingerprints=printed)


def _read_partitions(
    inputs: PlanInputs,
    source_table: Table,
    partition_filter: str | None,
    overwrite: bool,
) -> tuple[list[Partition], dict[tuple[str, ...], Partition]]:
    """The selected source partitions, and the replica's partitions by their values (none
    when the replica is to be overwritten)."""
    replica_before = inputs.replica_before
    with ThreadPoolExecutor(1, thread_name_prefix="ferry-replica") as replica_reader:
        # The replica's partitions are fetched while the source's are: two catalogs (each
        # with its own connection), two servers, at once.
        replica_listing = (
            replica_reader.submit(inputs.replica.list_partitions, replica_before)
            if replica_before is not None and replica_before.is_partitioned and not overwrite
            else None
        )
        source_partitions = inputs.source.list_partitions(
            source_table, partition_filter, inputs.replication.source_table.partition_limit
        )
        check_replica_location(source_table, inputs.replication, source_partitions)
        existing = {p.values: p for p in replica_listing.result()} if replica_listing else {}
    if replica_listing is not None and inputs.replica_read is not None:
        inputs.replica_read(existing)
    return source_partitions, existing


def _copier(inputs: PlanInputs, listing: PartitionListing) -> fingerprint.Listed:
    """What the listing does with a listed location: stream its files to the manifest when
    the diff's rule says its data must be copied (the same rule decides it again later)."""
    source_table, snapshot, root = listing.source_table, listing.snapshot, listing.root
    by_location: dict[str, list[Partition]] = {}
    for partition in listing.partitions:
        if partition.location:
            by_location.setdefault(partition.location, []).append(partition)

    def copy_if_changed(
        location: str, printed: fingerprint.Fingerprint, entries: list[fs.FileEntry]
    ) -> None:
        """Stream a listed location's files to the manifest when its data must be copied."""
        faults.point("plan.listed")
        if not source_table.is_partitioned:
            if table_data_changed(inputs.replica_before, listing.overwrite, str(printed), root):
                inputs.writer.add(CopyRoot(location, snapshot or ""), entries)
            return
        for partition in by_location[location]:
            if data_change(listing.existing.get(partition.values), str(printed), root) is not None:
                target = snapshot_target(snapshot, source_table, partition)
                inputs.writer.add(CopyRoot(location, target), entries)

    return copy_if_changed


def _fingerprints(
    replication: TableReplication,
    source_table: Table,
    partitions: list[Partition],
    partition_filter: str | None,
    threads: int,
    listed: fingerprint.Listed,
) -> dict[str, fingerprint.Fingerprint]:
    """The data fingerprint of every selected source location (modes that copy data)."""
    if replication.replication_mode not in COPYING_MODES:
        return {}
    locations = (
        [p.location for p in partitions if p.location]
        if source_table.is_partitioned
        else [source_table.location]
        if source_table.location
        else []
    )
    whole_table = partition_filter is None and replication.source_table.partition_limit is None
    return fingerprint.of_locations(
        locations, threads, root=source_table.location if whole_table else None, listed=listed
    )
