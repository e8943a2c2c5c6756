"""The plan of a Hive table or view: which partitions are added, altered or dropped, what is
copied into this event's snapshot folder, and what the replica table becomes.

It reads both sides once (``ferry.planning.partition_listing``) and applies the diff's rules
(``ferry.planning.diff``) to what it read: each selected partition's decision, then the
table's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ferry.config import ReplicationMode, ReplicationStrategy, TableReplication
from ferry.copying.manifest import CopyRoot
from ferry.core.errors import ReplicationModeError
from ferry.core.model import CatalogKind, Partition, Table
from ferry.planning import source_versions
from ferry.planning.diff import (
    Change,
    PartitionChange,
    TableDecision,
    decide_partition,
    decide_table,
    deleted_at_source,
    point_at_replica_schemas,
)
from ferry.planning.partition_listing import PartitionListing, list_partitions
from ferry.planning.replication_plan import (
    PlanInputs,
    ReplicationPlan,
    build_plan,
    replica_parameters_for,
)
from ferry.planning.statistics_plan import Selection, plan_statistics, with_statistics
from ferry.planning.views import rewrite_view_sql
from ferry.replicas.ownership import snapshot_root_of
from ferry.replicas.replica import TABLE_FINGERPRINT, shape_replica_table
from ferry.storage import fs
from ferry.storage.avro import SchemaCopy

#: The parameters of a replica table or partition, from its source's and its location.
ParametersFor = Callable[[Mapping[str, str], str | None], dict[str, str]]


@dataclass
class _Partitions:
    """What the plan does with the replica's partitions, gathered partition by partition."""

    to_add: list[Partition] = field(default_factory=list)
    to_alter: list[Partition] = field(default_factory=list)
    to_drop: list[Partition] = field(default_factory=list)
    changes: list[PartitionChange] = field(default_factory=list)
    #: Where each changed location's data is copied to.
    roots: list[CopyRoot] = field(default_factory=list)
    unchanged: int = 0


def plan_hive_table(inputs: PlanInputs, source_table: Table, list_threads: int) -> ReplicationPlan:
    """The plan of a Hive table or view: the diff of its selected partitions and the
    replica's, the files to copy streamed to the manifest from one listing."""
    replication = inputs.replication
    _check_mode(replication, source_table, inputs.replica_before)
    listing = list_partitions(inputs, source_table, list_threads)
    now = inputs.clock()

    def parameters_for(source_parameters: Mapping[str, str], location: str | None):
        return replica_parameters_for(inputs, source_table, source_parameters, location, now)

    partitions = _decide_partitions(inputs, listing, parameters_for)
    table = _decide_table(inputs, listing, partitions)
    replica_table = _replica_table(inputs, source_table, table, parameters_for)
    partial = source_table.is_partitioned and (
        listing.partition_filter is not None or replication.source_table.partition_limit is not None
    )
    written = frozenset(p.values for p in partitions.to_add + partitions.to_alter)
    selection = Selection(listing.partitions, written, listing.existing, partial, listing.overwrite)
    statistics = plan_statistics(inputs, source_table, replica_table, selection)
    replica_table = with_statistics(replica_table, statistics, partial)
    schema_copies: tuple[SchemaCopy, ...] = ()
    if listing.snapshot is not None and partitions.roots:
        replica_table, partitions.to_add, partitions.to_alter, schema_copies = (
            point_at_replica_schemas(
                replica_table,
                partitions.to_add,
                partitions.to_alter,
                base_url=replication.transform_options.avro_base_url,
                event_id=inputs.event_id,
                root=listing.root,
            )
        )
    return build_plan(
        inputs,
        source_table,
        replica_table,
        partitions_to_add=tuple(partitions.to_add),
        partitions_to_alter=tuple(partitions.to_alter),
        snapshot_location=listing.snapshot if partitions.roots else None,
        partition_filter=listing.partition_filter,
        partitions_to_drop=tuple(partitions.to_drop),
        changes=tuple(partitions.changes),
        partitions_unchanged=partitions.unchanged,
        overwrite=listing.overwrite,
        table_data_changed=table.data_changed,
        schema_copies=schema_copies,
        notices=_notices(replication, inputs.replica_before, listing.existing) + statistics.notices,
        statistics=statistics.plan,
        source_version=str(
            source_versions.of_table(
                source_table, listing.partitions, glue=inputs.source.kind is CatalogKind.GLUE
            )
        ),
    )


def _check_mode(
    replication: TableReplication, source_table: Table, replica_before: Table | None
) -> None:
    """Refuse a mode that cannot replicate this table as it is."""
    mode = replication.replication_mode
    if source_table.is_view and mode is not ReplicationMode.METADATA_MIRROR:
        raise ReplicationModeError(
            f"{source_table.qualified_name} is a view; views replicate with "
            f"replication-mode METADATA_MIRROR only"
        )
    if mode is ReplicationMode.METADATA_UPDATE and replica_before is None:
        raise ReplicationModeError(
            f"replication-mode METADATA_UPDATE refreshes an existing replica, and "
            f"{replication.replica_qualified_name} does not exist; replicate it with FULL first"
        )


def _decide_partitions(
    inputs: PlanInputs, listing: PartitionListing, parameters_for: ParametersFor
) -> _Partitions:
    """Each selected source partition's decision (``decide_partition``), and with
    PROPAGATE_DELETES the replica's partitions whose source partition is gone."""
    decided = _Partitions()
    for partition in listing.partitions:
        old = listing.existing.get(partition.values)
        decision = decide_partition(
            partition,
            old,
            parameters_for(partition.parameters, partition.location),
            listing.fingerprints.get(partition.location or ""),
            mode=inputs.replication.replication_mode,
            table=listing.source_table,
            snapshot=listing.snapshot,
            root=listing.root,
        )
        decided.unchanged += decision.unchanged
        if decision.replica is None or decision.change is None:
            continue
        (decided.to_add if old is None else decided.to_alter).append(decision.replica)
        decided.changes.append(decision.change)
        if decision.copy_to is not None and partition.location:
            decided.roots.append(CopyRoot(partition.location, decision.copy_to))
    strategy = inputs.replication.replication_strategy
    if strategy is ReplicationStrategy.PROPAGATE_DELETES and listing.existing:
        values = inputs.source.list_partition_values(listing.source_table)
        decided.to_drop = deleted_at_source(listing.existing, values)
        decided.changes.extend(PartitionChange(p.values, Change.DELETED) for p in decided.to_drop)
    return decided


def _decide_table(
    inputs: PlanInputs, listing: PartitionListing, partitions: _Partitions
) -> TableDecision:
    """Where the replica table points after this event (``decide_table``); an
    unpartitioned table whose data is copied adds its folder to what is copied."""
    source_table = listing.source_table
    table = decide_table(
        source_table,
        inputs.replica_before,
        listing.fingerprints.get(source_table.location or ""),
        mode=inputs.replication.replication_mode,
        overwrite=listing.overwrite,
        snapshot=listing.snapshot,
        partitions_copied=bool(partitions.roots),
        root=listing.root,
    )
    if table.copied and source_table.location:
        partitions.roots.append(CopyRoot(source_table.location, listing.snapshot or ""))
    return table


def _replica_table(
    inputs: PlanInputs, source_table: Table, table: TableDecision, parameters_for: ParametersFor
) -> Table:
    """The replica table as this event writes it: the source's, shaped for the replica,
    at the decided location, a view's SQL naming the replicated tables."""
    parameters = parameters_for(source_table.parameters, source_table.location)
    if table.fingerprint is not None:
        parameters[TABLE_FINGERPRINT] = table.fingerprint
    return shape_replica_table(
        source_table,
        inputs.replication,
        table.location,
        parameters,
        _view_texts(inputs.replication, source_table),
    )


def _view_texts(
    replication: TableReplication, source_table: Table
) -> tuple[str | None, str | None] | None:
    """A view's texts with the replicated tables' names in place of the source's."""
    if not source_table.is_view:
        return None
    original, expanded = (
        rewrite_view_sql(text, replication.table_mappings, source_table.database)
        for text in (source_table.view_original_text, source_table.view_expanded_text)
    )
    return original, expanded


def _notices(
    replication: TableReplication,
    replica_before: Table | None,
    existing: dict[tuple[str, ...], Partition],
) -> tuple[str, ...]:
    """One line each for what a person should know before this run writes."""
    root = replication.replica_table.table_location
    if replication.replication_mode is ReplicationMode.METADATA_MIRROR:
        if root:
            return (
                f"{replication.replica_qualified_name}: replica-table.table-location {root} is "
                "ignored: a METADATA_MIRROR points at the source's data and owns none",
            )
        return ()
    if replica_before is None or not root:
        return ()
    locations = [replica_before.location] + [p.location for p in existing.values()]
    previous = sorted(
        {
            snapshot_root
            for location in locations
            if location and (snapshot_root := snapshot_root_of(location))
            and fs.normalise(snapshot_root) != fs.normalise(root)
        }
    )  # fmt: skip
    if not previous:
        return ()
    return (
        f"{replication.replica_qualified_name}: replica-table.table-location changed from "
        f"{', '.join(previous)} to {root} since the last run; below the old location, "
        "housekeeping deletes only the snapshots Ferry recorded creating there",
    )
