"""The plan of an Iceberg table: the replica at ``table-location`` itself (no event-id
folder: Iceberg's own new file names isolate its versions), planned from the source's
metadata and the replica's (``ferry.iceberg.pipeline``), registered as the replica's kind of
catalog registers Iceberg tables (``ferry.iceberg.registration``).

Refused before anything is read (``ferry.planning.iceberg_checks``): modes other than FULL,
partition selections, a replica that is no Iceberg table, a replica another writer committed
to since Ferry's last commit, and metadata locations that are missing or relative. The entry
registered records what the next run compares to tell, without reading any metadata, that
there is nothing to do (``ferry.planning.iceberg_noop``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pyiceberg.table.metadata import TableMetadata

from ferry.config import TableReplication
from ferry.core.errors import IcebergMetadataError, ReplicaGuardError
from ferry.core.model import Table
from ferry.iceberg.pipeline import IcebergIntent, PlannedIceberg, plan_iceberg
from ferry.iceberg.recognise import COMMITTED_METADATA_LOCATION, PREVIOUS_METADATA_LOCATION
from ferry.iceberg.registration import register_iceberg_replica
from ferry.planning import source_versions
from ferry.planning.iceberg_checks import check_iceberg, metadata_locations
from ferry.planning.iceberg_noop import recorded
from ferry.planning.replication_plan import (
    PlanInputs,
    ReplicationPlan,
    build_plan,
    replica_parameters_for,
)
from ferry.replicas.replica import check_replica_location
from ferry.storage import fs


def plan_iceberg_table(
    inputs: PlanInputs,
    source_table: Table,
    intend: Callable[[IcebergIntent], None] | None = None,
) -> ReplicationPlan:
    """The plan of an Iceberg source table (see the module). ``intend`` is told what the
    run will write at the replica before Plan writes any of it."""
    replication = inputs.replication
    check_iceberg(replication, source_table, inputs.replica_before)
    check_replica_location(source_table, replication)
    source_metadata, replica_metadata = metadata_locations(source_table, inputs.replica_before)
    planned = _plan_metadata(inputs, source_table, source_metadata, replica_metadata, intend)
    return build_plan(
        inputs,
        source_table,
        _registered(inputs, source_table, planned),
        table_data_changed=planned.run.changed,
        iceberg=planned.run,
        source_version=str(_iceberg_version(planned.source)),
    )


def _plan_metadata(
    inputs: PlanInputs,
    source_table: Table,
    source_metadata: str,
    replica_metadata: str | None,
    intend: Callable[[IcebergIntent], None] | None,
) -> PlannedIceberg:
    """The replica's next metadata and what the run writes for it; an error names the
    table whose metadata it is about."""
    replication = inputs.replication
    root = replication.replica_table.table_location
    assert root is not None  # required for FULL (ferry.config)
    try:
        return plan_iceberg(
            source_metadata,
            root,
            replica_metadata,
            inputs.event_id,
            inputs.writer,
            write=inputs.writer.uri is not None,
            intend=intend,
        )
    except IcebergMetadataError as error:
        raise _whose(error, source_table, replication) from None
    except ReplicaGuardError as error:  # what the replica's own metadata says
        raise ReplicaGuardError(f"replica {replication.replica_qualified_name} {error}") from None


def _registered(inputs: PlanInputs, source_table: Table, planned: PlannedIceberg) -> Table:
    """The replica table as the replica's catalog registers it at the run's metadata, and
    carrying what this run commits, so that the next run sees another writer's commit."""
    replication, replica_before, run = inputs.replication, inputs.replica_before, planned.run
    parameters = replica_parameters_for(
        inputs, source_table, source_table.parameters, source_table.location, inputs.clock()
    )
    previous = (
        run.previous_metadata_location
        if run.changed
        else (replica_before.parameters.get(PREVIOUS_METADATA_LOCATION) if replica_before else None)
    )
    replica_table = register_iceberg_replica(
        inputs.replica.kind,
        replication.replica_database,
        replication.replica_table_name,
        planned.replica,
        run.metadata_location,
        previous,
        parameters,
        source_table=source_table,
        source_kind=inputs.source.kind,
        source_properties=planned.source.properties,
        replica_before=replica_before,
        previous_properties=planned.previous.properties if planned.previous else None,
    )
    committed = replace(
        replica_table,
        parameters={**replica_table.parameters, COMMITTED_METADATA_LOCATION: run.metadata_location},
    )
    # What the next run compares to tell "nothing to do" from the entries alone.
    return recorded(inputs, source_table, committed)


def _iceberg_version(metadata: TableMetadata) -> source_versions.SourceVersion:
    """The source's current snapshot and its time, from the metadata Plan read."""
    snapshot = metadata.current_snapshot()
    return source_versions.of_iceberg(
        metadata.current_snapshot_id, snapshot.timestamp_ms if snapshot else None
    )


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
