"""What an Iceberg replication refuses before it reads any metadata, from the catalog
entries alone (no pyiceberg: ``ferry.planning.iceberg_noop`` decides a run with nothing to
do after the same checks, and only a run with work imports pyiceberg).

Refused: modes other than FULL, partition selections, a replica that is no Iceberg table, a
replica another writer committed to since Ferry's last commit, and metadata locations that
are missing or relative.
"""

from __future__ import annotations

from ferry.config import ReplicationMode, TableReplication
from ferry.core.errors import IcebergMetadataError, ReplicaGuardError, ReplicationModeError
from ferry.core.model import Table
from ferry.iceberg.recognise import (
    COMMITTED_METADATA_LOCATION,
    METADATA_LOCATION,
    is_iceberg,
    metadata_location,
    moved_since_commit,
)


def check_iceberg(
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


def metadata_locations(source_table: Table, replica_before: Table | None) -> tuple[str, str | None]:
    """The source's current metadata.json and the replica's (None for a first replication);
    each must be named, and absolute."""
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
    return source_metadata, replica_metadata


def _absolute(location: str) -> bool:
    """Whether a metadata location is absolute: a URI with a scheme, or a local path from
    the root (a relative one would be read from wherever the step happens to run)."""
    return "://" in location or location.startswith(("/", "file:/"))
