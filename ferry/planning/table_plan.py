"""Plan one table replication: what to copy where, and what the replica will become.

Planning only reads (the source and replica catalogs and the source files); it writes
nothing, so a plan that fails, or a dry run, changes neither side. This module does the
reading and the listing; what each partition and the table become, and why, are the rules
of ``ferry.planning.diff``, which it applies to what it read.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from pyiceberg.table.metadata import TableMetadata

from ferry.catalog import Catalog
from ferry.config import ReplicationMode, ReplicationStrategy, TableReplication
from ferry.config.filters import render_partition_filter
from ferry.copying.manifest import CopyRoot, ManifestSummary, ManifestWriter
from ferry.core import faults
from ferry.core.clock import Clock
from ferry.core.errors import (
    IcebergMetadataError,
    ReplicaGuardError,
    ReplicationModeError,
    SourceTableNotFoundError,
)
from ferry.core.model import CatalogKind, Partition, Table
from ferry.iceberg.pipeline import IcebergIntent, IcebergRun, plan_iceberg
from ferry.iceberg.recognise import (
    COMMITTED_METADATA_LOCATION,
    METADATA_LOCATION,
    PREVIOUS_METADATA_LOCATION,
    is_iceberg,
    metadata_location,
    moved_since_commit,
)
from ferry.iceberg.registration import register_iceberg_replica
from ferry.planning import source_versions
from ferry.planning.diff import (
    COPYING_MODES,
    Change,
    PartitionChange,
    data_change,
    decide_partition,
    decide_table,
    definition,
    deleted_at_source,
    point_at_replica_schemas,
    snapshot_target,
    table_data_changed,
)
from ferry.planning.views import rewrite_view_sql
from ferry.replicas.ownership import snapshot_root_of
from ferry.replicas.replica import (
    CIRCUS_TRAIN_SOURCE_METASTORE_URIS,
    CIRCUS_TRAIN_SOURCE_TABLE,
    SOURCE_METASTORE_URIS,
    SOURCE_TABLE,
    TABLE_FINGERPRINT,
    check_not_promoted,
    check_replica_guard,
    check_replica_location,
    replica_parameters,
    shape_replica_table,
)
from ferry.storage import fingerprint, fs
from ferry.storage.avro import SchemaCopy


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
    #: The new snapshot folder that a failed run removes again, unless referenced; None
    #: when this event copies no data.
    snapshot_location: str | None
    partition_filter: str | None
    #: PROPAGATE_DELETES: replica partitions whose source partition is gone.
    partitions_to_drop: tuple[Partition, ...] = ()
    #: Every partition in the plan, and why (``ferry plan`` shows them).
    changes: tuple[PartitionChange, ...] = ()
    #: Selected partitions that are already replicated as they are.
    partitions_unchanged: int = 0
    #: PROPAGATE_DELETES of a dropped source table: the replica table is dropped.
    drop_table: bool = False
    #: FULL_OVERWRITE of an existing replica: it is dropped and created anew.
    overwrite: bool = False
    #: Unpartitioned: whether the table's data changed (else it keeps its location).
    table_data_changed: bool = True
    #: Avro schema files to copy before the commit; the replica points at the copies.
    schema_copies: tuple[SchemaCopy, ...] = ()
    #: What a person should know about this run, one line each (e.g. a table-location that
    #: changed since the last run).
    notices: tuple[str, ...] = ()
    #: An Iceberg table: its replica's next metadata and what the run writes for it
    #: (``ferry.iceberg.pipeline``); None for every other table.
    iceberg: IcebergRun | None = None
    #: The source version this plan read (``ferry.planning.source_versions``): Commit records it.
    source_version: str | None = None

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
        if self.iceberg is not None:
            return "Iceberg table"
        return "partitioned table" if self.source_table.is_partitioned else "table"

    @property
    def unchanged(self) -> bool:
        """True when writing would change nothing a reader sees.

        That is: no partition to add, alter or drop, the table's data (unpartitioned) is the
        same, and the replica table already has the definition this plan would give it
        (schema, storage, parameters), ignoring when and by which event it was written.
        """
        if self.replica_partitions or self.partitions_to_drop or self.drop_table:
            return False
        if self.replica_before is None or self.overwrite:
            return False
        if not self.source_table.is_partitioned and self.table_data_changed:
            return False
        return definition(self.replica_before) == definition(self.replica_table)


def plan_replication(
    replication: TableReplication,
    source: Catalog,
    replica: Catalog,
    event_id: str,
    clock: Clock,
    list_threads: int = 8,
    manifest: ManifestWriter | None = None,
    intend: Callable[[IcebergIntent], None] | None = None,
    *,
    adopt: bool = False,
) -> ReplicationPlan:
    """Decide what one replication does: the diff of source and replica.

    A replica ``ferry failover`` promoted is refused (``PromotedReplicaError``). ``adopt``:
    an existing table that is no replica is taken as this one's (``ferry failback``, and
    only it, says so of the original source table; ``check_replica_guard``).

    ``intend``: told, for an Iceberg table, what the run will write at the replica before
    Plan writes any of it (its metadata files; ``ferry.lifecycle.replica_state`` ledgers it).

    A selected source partition is replicated when it is missing on the replica, when its
    data fingerprint (``ferry/storage/fingerprint.py``) differs from the one stored on the replica
    partition, or — altered in place, with no copy — when only its metadata differs. The
    files to copy are streamed into ``manifest`` from the same listing that gives the
    fingerprints; without one they are only counted.
    """
    writer = manifest or ManifestWriter(None, event_id, 1000)
    try:
        return _plan(
            replication, source, replica, event_id, clock, list_threads, writer, intend, adopt
        )
    except BaseException:
        writer.abandon()
        raise


def _plan(
    replication: TableReplication,
    source: Catalog,
    replica: Catalog,
    event_id: str,
    clock: Clock,
    list_threads: int,
    writer: ManifestWriter,
    intend: Callable[[IcebergIntent], None] | None = None,
    adopt: bool = False,
) -> ReplicationPlan:
    source_config = replication.source_table
    mode, strategy = replication.replication_mode, replication.replication_strategy
    replica_before = replica.get_table(replication.replica_database, replication.replica_table_name)
    check_not_promoted(replica_before)
    source_table = source.get_table(source_config.database_name, source_config.table_name)
    if source_table is None:
        missing = (
            f"source table {source_config.qualified_name} not found in catalog "
            f"'{source.name}' ({source.description})"
        )
        if strategy is ReplicationStrategy.PROPAGATE_DELETES and replica_before is not None:
            check_replica_guard(replica_before, replication)
            check_source_dropped(replica_before, replication, source, missing)
            return _drop_replica_table(replication, replica_before, event_id, writer)
        raise SourceTableNotFoundError(missing)
    check_replica_guard(replica_before, replication, adopt=adopt)
    if replica_before is not None and is_iceberg(replica_before) and not is_iceberg(source_table):
        raise ReplicaGuardError(
            f"replica {replica_before.qualified_name} is an Iceberg table, and its source "
            f"{source_table.qualified_name} is not (any more): not replacing it (drop it, or "
            "replicate to another table)"
        )
    if is_iceberg(source_table):
        return _plan_iceberg(
            replication,
            source,
            replica,
            source_table,
            replica_before,
            event_id,
            clock,
            writer,
            intend,
        )
    _check_mode(replication, source_table, replica_before)
    overwrite = mode is ReplicationMode.FULL_OVERWRITE and replica_before is not None
    root = replication.replica_table.table_location
    snapshot = fs.join(root or "", event_id) if mode in COPYING_MODES else None
    partition_filter = render_partition_filter(source_config.partition_filter, clock)
    source_partitions, existing = _read_partitions(
        replication, source, replica, source_table, replica_before, partition_filter, overwrite
    )

    by_location: dict[str, list[Partition]] = {}
    for partition in source_partitions:
        if partition.location:
            by_location.setdefault(partition.location, []).append(partition)

    # The listing streams a partition's files to the manifest as soon as they are listed,
    # when the diff's rule says its data must be copied; the same rule decides it below.
    def copy_if_changed(
        location: str, printed: fingerprint.Fingerprint, entries: list[fs.FileEntry]
    ) -> None:
        """Stream a listed location's files to the manifest when its data must be copied."""
        faults.point("plan.listed")
        if not source_table.is_partitioned:
            if table_data_changed(replica_before, overwrite, str(printed), root):
                writer.add(CopyRoot(location, snapshot or ""), entries)
            return
        for partition in by_location[location]:
            if data_change(existing.get(partition.values), str(printed), root) is not None:
                target = snapshot_target(snapshot, source_table, partition)
                writer.add(CopyRoot(location, target), entries)

    # One listing of the selected files gives both the fingerprints and the manifest.
    fingerprints = _fingerprints(
        replication,
        source_table,
        source_partitions,
        partition_filter,
        list_threads,
        copy_if_changed,
    )
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
    to_add: list[Partition] = []
    to_alter: list[Partition] = []
    changes: list[PartitionChange] = []
    unchanged = 0
    for partition in source_partitions:
        old = existing.get(partition.values)
        decision = decide_partition(
            partition,
            old,
            parameters_for(partition.parameters, partition.location),
            fingerprints.get(partition.location or ""),
            mode=mode,
            table=source_table,
            snapshot=snapshot,
            root=root,
        )
        unchanged += decision.unchanged
        if decision.replica is None or decision.change is None:
            continue
        (to_add if old is None else to_alter).append(decision.replica)
        changes.append(decision.change)
        if decision.copy_to is not None and partition.location:
            roots.append(CopyRoot(partition.location, decision.copy_to))

    to_drop: list[Partition] = []
    if strategy is ReplicationStrategy.PROPAGATE_DELETES and existing:
        to_drop = deleted_at_source(existing, source.list_partition_values(source_table))
        changes.extend(PartitionChange(p.values, Change.DELETED) for p in to_drop)

    table = decide_table(
        source_table,
        replica_before,
        fingerprints.get(source_table.location or ""),
        mode=mode,
        overwrite=overwrite,
        snapshot=snapshot,
        partitions_copied=bool(roots),
        root=root,
    )
    if table.copied and source_table.location:
        roots.append(CopyRoot(source_table.location, snapshot or ""))
    table_parameters = parameters_for(source_table.parameters, source_table.location)
    if table.fingerprint is not None:
        table_parameters[TABLE_FINGERPRINT] = table.fingerprint
    replica_table = shape_replica_table(
        source_table,
        replication,
        table.location,
        table_parameters,
        _view_texts(replication, source_table),
    )
    schema_copies: tuple[SchemaCopy, ...] = ()
    if snapshot is not None and roots:
        replica_table, to_add, to_alter, schema_copies = point_at_replica_schemas(
            replica_table,
            to_add,
            to_alter,
            base_url=replication.transform_options.avro_base_url,
            event_id=event_id,
            root=root,
        )
    return ReplicationPlan(
        event_id=event_id,
        replication=replication,
        source_table=source_table,
        replica_before=replica_before,
        replica_table=replica_table,
        partitions_to_add=tuple(to_add),
        partitions_to_alter=tuple(to_alter),
        manifest=writer.close(),
        snapshot_location=snapshot if roots else None,
        partition_filter=partition_filter,
        partitions_to_drop=tuple(to_drop),
        changes=tuple(changes),
        partitions_unchanged=unchanged,
        overwrite=overwrite,
        table_data_changed=table.data_changed,
        schema_copies=schema_copies,
        notices=_notices(replication, replica_before, existing),
        source_version=str(
            source_versions.of_table(
                source_table, source_partitions, glue=source.kind is CatalogKind.GLUE
            )
        ),
    )


def _plan_iceberg(
    replication: TableReplication,
    source: Catalog,
    replica: Catalog,
    source_table: Table,
    replica_before: Table | None,
    event_id: str,
    clock: Clock,
    writer: ManifestWriter,
    intend: Callable[[IcebergIntent], None] | None = None,
) -> ReplicationPlan:
    """An Iceberg source table: the replica at ``table-location`` itself (no event-id
    folder: Iceberg's own new file names isolate its versions), planned from the source's
    metadata and the replica's (``ferry.iceberg.pipeline``), registered as the replica's
    kind of catalog registers Iceberg tables (``ferry.iceberg.registration``)."""
    _check_iceberg(replication, source_table, replica_before)
    root = replication.replica_table.table_location
    assert root is not None  # required for FULL (ferry.config)
    check_replica_location(source_table, replication)
    source_metadata = metadata_location(source_table)
    if source_metadata is None:
        raise IcebergMetadataError(
            f"Iceberg table {source_table.qualified_name} names no {METADATA_LOCATION}: "
            "nothing to replicate yet"
        )
    replica_metadata = metadata_location(replica_before) if replica_before else None
    for table, location in ((source_table, source_metadata), (replica_before, replica_metadata)):
        if table is not None and location is not None and not _absolute(location):
            raise IcebergMetadataError(
                f"Iceberg table {table.qualified_name}: its {METADATA_LOCATION} {location!r} "
                "is a relative path; Iceberg names a metadata file by its absolute URI"
            )
    try:
        planned = plan_iceberg(
            source_metadata,
            root,
            replica_metadata,
            event_id,
            writer,
            write=writer.uri is not None,
            intend=intend,
        )
    except IcebergMetadataError as error:
        raise _whose(error, source_table, replication) from None
    except ReplicaGuardError as error:  # what the replica's own metadata says
        raise ReplicaGuardError(f"replica {replication.replica_qualified_name} {error}") from None
    run = planned.run
    parameters = replica_parameters(
        source_table.parameters,
        source_table=source_table,
        source_location=source_table.location,
        source_catalog_name=source.name,
        source_catalog_description=source.description,
        event_id=event_id,
        mode=replication.replication_mode,
        replicated_at=clock(),
        extra=replication.transform_options.table_properties,
    )
    previous = (
        run.previous_metadata_location
        if run.changed
        else (replica_before.parameters.get(PREVIOUS_METADATA_LOCATION) if replica_before else None)
    )
    replica_table = register_iceberg_replica(
        replica.kind,
        replication.replica_database,
        replication.replica_table_name,
        planned.replica,
        run.metadata_location,
        previous,
        parameters,
        source_table=source_table,
        source_kind=source.kind,
        source_properties=planned.source.properties,
        replica_before=replica_before,
        previous_properties=planned.previous.properties if planned.previous else None,
    )
    # What this run commits, so that the next one sees another writer's commit.
    replica_table = replace(
        replica_table,
        parameters={**replica_table.parameters, COMMITTED_METADATA_LOCATION: run.metadata_location},
    )
    return ReplicationPlan(
        event_id=event_id,
        replication=replication,
        source_table=source_table,
        replica_before=replica_before,
        replica_table=replica_table,
        partitions_to_add=(),
        partitions_to_alter=(),
        manifest=writer.close(),
        snapshot_location=None,
        partition_filter=None,
        table_data_changed=run.changed,
        iceberg=run,
        source_version=str(_iceberg_version(planned.source)),
    )


def _iceberg_version(metadata: TableMetadata) -> source_versions.SourceVersion:
    """The source's current snapshot and its time, from the metadata Plan read."""
    snapshot = metadata.current_snapshot()
    return source_versions.of_iceberg(
        metadata.current_snapshot_id, snapshot.timestamp_ms if snapshot else None
    )


def _absolute(location: str) -> bool:
    """Whether a metadata location is absolute: a URI with a scheme, or a local path from
    the root (a relative one would be read from wherever the step happens to run)."""
    return "://" in location or location.startswith(("/", "file:/"))


def _whose(
    error: IcebergMetadataError, source_table: Table, replication: TableReplication
) -> IcebergMetadataError:
    """The error, naming the table whose metadata it is about: the replica's when the file
    at fault is below its table-location (Ferry writes every replica file there), else the
    source's."""
    root = replication.replica_table.table_location or ""
    if error.location is not None and fs.relative_path(error.location, root) is not None:
        whose = f"replica Iceberg table {replication.replica_qualified_name}"
    else:
        whose = f"source Iceberg table {source_table.qualified_name}"
    return IcebergMetadataError(f"{whose}: {error}", location=error.location)


def _check_iceberg(
    replication: TableReplication, source_table: Table, replica_before: Table | None
) -> None:
    """Refuse what an Iceberg replication cannot do: modes other than FULL (the metadata
    always moves with the data; a mirror would name the source's files), partition
    selections (an Iceberg table's partitions are not the catalog's), a replica that is
    not an Iceberg table, and a replica another writer committed to since Ferry's last
    commit (replicating over it would discard that commit, and housekeeping would then
    take its files for superseded ones)."""
    name = source_table.qualified_name
    mode = replication.replication_mode
    if mode is not ReplicationMode.FULL:
        raise ReplicationModeError(
            f"{name} is an Iceberg table; Iceberg tables replicate with replication-mode "
            f"FULL only (snapshot by snapshot, data and metadata), not {mode.value}"
        )
    config = replication.source_table
    if (
        config.partition_filter
        or config.generate_partition_filter
        or config.partition_limit is not None
    ):
        raise ReplicationModeError(
            f"{name} is an Iceberg table; partition-filter and partition-limit select Hive "
            "partitions, and an Iceberg table replicates whole, snapshot by snapshot"
        )
    if replica_before is not None and not is_iceberg(replica_before):
        raise ReplicaGuardError(
            f"replica {replica_before.qualified_name} is not an Iceberg table, and its source "
            f"{name} is: not replacing it (drop it, or replicate to another table)"
        )
    moved = moved_since_commit(replica_before.parameters) if replica_before is not None else None
    if replica_before is not None and moved is not None:
        committed = replica_before.parameters[COMMITTED_METADATA_LOCATION]
        raise ReplicaGuardError(
            f"replica {replica_before.qualified_name} was committed to by another writer: its "
            f"{METADATA_LOCATION} is {moved}, not {committed} as Ferry committed it; Ferry will "
            "not replicate over that commit (drop the replica, or replicate to another table)"
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


def _read_partitions(
    replication: TableReplication,
    source: Catalog,
    replica: Catalog,
    source_table: Table,
    replica_before: Table | None,
    partition_filter: str | None,
    overwrite: bool,
) -> tuple[list[Partition], dict[tuple[str, ...], Partition]]:
    """The selected source partitions, and the replica's partitions by their values (none
    when the replica is to be overwritten)."""
    with ThreadPoolExecutor(1, thread_name_prefix="ferry-replica") as replica_reader:
        # The replica's partitions are fetched while the source's are: two catalogs (each
        # with its own connection), two servers, at once.
        replica_listing = (
            replica_reader.submit(replica.list_partitions, replica_before)
            if replica_before is not None and replica_before.is_partitioned and not overwrite
            else None
        )
        source_partitions = source.list_partitions(
            source_table, partition_filter, replication.source_table.partition_limit
        )
        check_replica_location(source_table, replication, source_partitions)
        existing = {p.values: p for p in replica_listing.result()} if replica_listing else {}
    return source_partitions, existing


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


def check_source_dropped(
    replica_before: Table, replication: TableReplication, source: Catalog, missing: str
) -> None:
    """Refuse PROPAGATE_DELETES' drop unless the source really dropped this replica's table.

    The source catalog must hold the table's database (a catalog that never held it, a
    wrong URI, answers "no such database" too), and the replica must be Ferry's (or Circus
    Train's) replica of that very table from that very catalog, as its parameters record.
    """
    database = replication.source_table.database_name
    replica = replica_before.qualified_name
    if source.get_database(database) is None:
        raise SourceTableNotFoundError(
            f"{missing}, nor its database {database}: not dropping replica {replica} "
            "(PROPAGATE_DELETES drops a replica only when its source catalog holds the "
            "database and answers that the table is gone)"
        )
    parameters = replica_before.parameters
    recorded_table = parameters.get(SOURCE_TABLE) or parameters.get(CIRCUS_TRAIN_SOURCE_TABLE)
    recorded_catalog = parameters.get(SOURCE_METASTORE_URIS) or parameters.get(
        CIRCUS_TRAIN_SOURCE_METASTORE_URIS
    )
    source_name = replication.source_table.qualified_name
    if not recorded_table or recorded_table.lower() != source_name.lower():
        raise SourceTableNotFoundError(
            f"{missing}; replica {replica} does not record {source_name} as its source "
            f"({SOURCE_TABLE}: {recorded_table or 'none'}): not dropping it"
        )
    if not recorded_catalog or _catalog_key(recorded_catalog) != _catalog_key(source.description):
        raise SourceTableNotFoundError(
            f"{missing}; replica {replica} was replicated from catalog "
            f"{recorded_catalog or 'unknown'}, not {source.description}: not dropping it"
        )


def _catalog_key(description: str) -> tuple[str, ...]:
    """A catalog's description compared as a set of lower-case URIs."""
    return tuple(sorted(part.strip().lower() for part in description.split(",") if part.strip()))


def _drop_replica_table(
    replication: TableReplication,
    replica_before: Table,
    event_id: str,
    writer: ManifestWriter,
) -> ReplicationPlan:
    """PROPAGATE_DELETES, and the source table is gone: drop the replica table (Ferry's)."""
    return ReplicationPlan(
        event_id=event_id,
        replication=replication,
        source_table=replace(replica_before, parameters={}),
        replica_before=replica_before,
        replica_table=replica_before,
        partitions_to_add=(),
        partitions_to_alter=(),
        manifest=writer.close(),
        snapshot_location=None,
        partition_filter=None,
        drop_table=True,
        table_data_changed=False,
    )
