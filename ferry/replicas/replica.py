"""What makes a table a Ferry replica: its parameters, the guard, and how it is shaped.

The parameter keys are named constants: consumers, housekeeping and the guard read them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from ferry.config import ReplicationMode, TableReplication
from ferry.core.errors import (
    PromotedReplicaError,
    ReplicaGuardError,
    ReplicaLocationError,
    ReplicationModeError,
)
from ferry.core.model import Partition, Table, TableType, partition_name
from ferry.storage import fs

if TYPE_CHECKING:
    from ferry.catalog import Catalog

SOURCE_TABLE = "ferry.source.table"
SOURCE_CATALOG = "ferry.source.catalog"
SOURCE_METASTORE_URIS = "ferry.source.metastore.uris"
SOURCE_LOCATION = "ferry.source.location"
REPLICATION_EVENT = "ferry.replication.event"
REPLICATION_MODE = "ferry.replication.mode"
#: ``<event id>@<time>``: the event that claimed the replica to commit
#: (``ferry.lifecycle.committing``).
COMMIT_CLAIM = "ferry.commit.claim"
LAST_REPLICATED = "ferry.last.replicated"
#: The data fingerprint (``ferry/storage/fingerprint.py``) of what a partition, or an unpartitioned
#: table, was copied from: the next run compares the source's with it.
PARTITION_FINGERPRINT = "ferry.partition.fingerprint"
TABLE_FINGERPRINT = "ferry.table.fingerprint"
#: On a replica database Ferry created: the event whose commit created it (a failed run
#: drops such a database again while it holds no table).
CREATED_BY_EVENT = "ferry.created.by.event"
#: What Commit records of the source it replicated (``ferry.planning.source_versions``): the
#: source's version as Plan read it (opaque, per catalog kind), and when Plan read it.
SOURCE_VERSION = "ferry.source.version"
#: On a promoted replica table: ``<failover id>@<ISO-8601 time>``. Set by ``ferry failover``,
#: removed by ``ferry failback`` once both sides are equal (``ferry.failover``).
PROMOTED = "ferry.promoted"
SOURCE_READ_AT = "ferry.source.read-at"

# A table replicated by Circus Train carries this; Ferry adopts such a replica.
CIRCUS_TRAIN_REPLICATION_EVENT = "com.hotels.bdp.circustrain.replication.event"
CIRCUS_TRAIN_REPLICATION_MODE = "com.hotels.bdp.circustrain.replication.mode"
CIRCUS_TRAIN_SOURCE_TABLE = "com.hotels.bdp.circustrain.source.table"
CIRCUS_TRAIN_SOURCE_METASTORE_URIS = "com.hotels.bdp.circustrain.source.metastore.uris"

# Parameters the metastore maintains itself; copying them would only be overwritten.
SERVER_MANAGED_PARAMETERS = frozenset({"transient_lastDdlTime"})


def check_replica_guard(
    replica: Table | None, replication: TableReplication, *, adopt: bool = False
) -> None:
    """Refuse to touch an existing table that is not this source's replica, or switch its kind.

    A table with Ferry's event parameter is Ferry's; one with Circus Train's is adopted.
    A replica of another source table (its ``ferry.source.table``, or Circus Train's
    equivalent, names that table) belongs to another replication: overwriting it would
    silently swap its data under its readers. Hive names are case-insensitive, so is the
    comparison. ``adopt``: a table with neither is taken as this replication's replica —
    only ``ferry failback`` says so, of the original source table it brings DR's changes
    home to (never a config key).
    Switching an existing replica between METADATA_MIRROR and FULL is refused: the first
    points at the source's data, the second owns copies, and mixing them leaves partitions
    of both kinds in one table.
    """
    if replica is None:
        return
    parameters = replica.parameters
    if REPLICATION_EVENT in parameters:
        previous_mode = parameters.get(REPLICATION_MODE)
        replicated_from = parameters.get(SOURCE_TABLE)
    elif CIRCUS_TRAIN_REPLICATION_EVENT in parameters:
        previous_mode = parameters.get(CIRCUS_TRAIN_REPLICATION_MODE)
        replicated_from = parameters.get(CIRCUS_TRAIN_SOURCE_TABLE)
    elif adopt:
        return
    else:
        raise ReplicaGuardError(
            f"replica table {replica.qualified_name} exists but is not a replica "
            f"(no {REPLICATION_EVENT} parameter); Ferry will not touch it"
        )
    source = replication.source_table.qualified_name
    if replicated_from and replicated_from.lower() != source.lower():
        raise ReplicaGuardError(
            f"replica table {replica.qualified_name} is the replica of {replicated_from}, "
            f"not of {source}; Ferry will not overwrite it"
        )
    mode = replication.replication_mode
    if previous_mode and _is_mirror(previous_mode) != (mode is ReplicationMode.METADATA_MIRROR):
        raise ReplicationModeError(
            f"replica table {replica.qualified_name} was replicated with {previous_mode}; "
            f"switching it to {mode.value} is not allowed"
        )


def check_not_promoted(replica: Table | None) -> None:
    """Refuse to write a replica ``ferry failover`` promoted: writers own it until
    ``ferry failback`` brings what they wrote home and hands it back."""
    if replica is not None and PROMOTED in replica.parameters:
        raise PromotedReplicaError(
            f"replica table {replica.qualified_name} was promoted by ferry failover "
            f"({PROMOTED}={replica.parameters[PROMOTED]}); Ferry will not overwrite it until "
            "ferry failback"
        )


def check_replica_location(
    source_table: Table,
    replication: TableReplication,
    partitions: Sequence[Partition] = (),
) -> None:
    """Refuse a FULL replica whose ``table-location`` overlaps the source's data.

    Snapshots go below ``table-location``. At or inside the source table's location they
    would be written into the source, and the next run would copy them back as source data;
    a source location inside ``table-location`` makes every run copy the replica's own
    earlier snapshots. A partition stored outside its table's location is checked the same
    way. Locations are compared normalised (``file:/x`` is ``file:///x``, ``s3a://`` is
    ``s3://``). METADATA_MIRROR copies nothing, so it has nothing to refuse.
    """
    target = replication.replica_table.table_location
    copying = (ReplicationMode.FULL, ReplicationMode.FULL_OVERWRITE)
    if replication.replication_mode not in copying or not target:
        return
    name = source_table.qualified_name

    def described(values: tuple[str, ...] | None) -> str:  # spelled only for an error
        if values is None:
            return f"source table {name}"
        return f"partition {partition_name(source_table.partition_keys, values)} of {name}"

    locations = [(None, source_table.location)] + [(p.values, p.location) for p in partitions]
    for values, location in locations:
        if not location:
            continue
        below = fs.relative_path(target, location)
        if below is not None:
            where = "is" if below == "" else "is inside"
            raise ReplicaLocationError(
                f"replica-table.table-location {target} {where} the location of "
                f"{described(values)} ({location}); Ferry would write its snapshots into the source"
            )
        if fs.relative_path(location, target) is not None:
            raise ReplicaLocationError(
                f"the location of {described(values)} ({location}) is inside "
                f"replica-table.table-location {target}; each run would copy the replica's earlier "
                "snapshots"
            )


def _is_mirror(mode: str) -> bool:
    return mode == ReplicationMode.METADATA_MIRROR.value


def replica_parameters(
    source: Mapping[str, str],
    *,
    source_table: Table,
    source_location: str | None,
    source_catalog_name: str,
    source_catalog_description: str,
    event_id: str,
    mode: ReplicationMode,
    replicated_at: datetime,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The source's parameters, without server-managed ones, plus Ferry's own.

    A promoted source (``ferry failback`` replicating a promoted replica home) does not pass
    its promotion on: only ``ferry failover`` promotes a table."""
    parameters = {
        k: v for k, v in source.items() if k not in SERVER_MANAGED_PARAMETERS and k != PROMOTED
    }
    parameters.update(extra or {})
    parameters.update(
        {
            SOURCE_TABLE: source_table.qualified_name,
            SOURCE_CATALOG: source_catalog_name,
            SOURCE_METASTORE_URIS: source_catalog_description,
            REPLICATION_EVENT: event_id,
            REPLICATION_MODE: mode.value,
            LAST_REPLICATED: replicated_at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        }
    )
    if source_location:
        parameters[SOURCE_LOCATION] = source_location
    else:
        parameters.pop(SOURCE_LOCATION, None)
    return parameters


def shape_replica_table(
    source: Table,
    replication: TableReplication,
    location: str | None,
    parameters: dict[str, str],
    view_texts: tuple[str | None, str | None] | None = None,
) -> Table:
    """The replica table: the source's schema and storage under the replica's name.

    A replica of a table is always EXTERNAL, so dropping it never deletes data it does not
    own (in METADATA_MIRROR that data is the source's).
    """
    table_type = TableType.VIEW if source.is_view else TableType.EXTERNAL
    if table_type is TableType.EXTERNAL:
        parameters = {**parameters, "EXTERNAL": "TRUE"}
    original, expanded = view_texts or (source.view_original_text, source.view_expanded_text)
    return replace(
        source,
        database=replication.replica_database,
        name=replication.replica_table_name,
        table_type=table_type,
        storage=source.storage.with_location(location),
        parameters=parameters,
        view_original_text=original,
        view_expanded_text=expanded,
    )


def shape_replica_partition(
    source: Partition, location: str | None, parameters: dict[str, str]
) -> Partition:
    return replace(source, storage=source.storage.with_location(location), parameters=parameters)


def promoted_replicas(catalog: Catalog, replications: Iterable[TableReplication]) -> dict[str, str]:
    """The promoted replicas among ``replications``' (``database.table`` in lower case →
    their ``ferry.promoted``), read in batches per replica database (none for a database
    that does not exist yet)."""
    by_database: dict[str, list[str]] = {}
    for replication in replications:
        by_database.setdefault(replication.replica_database, []).append(
            replication.replica_table_name
        )
    promoted = {}
    for database, names in by_database.items():
        for table in catalog.get_tables(database, names).values():
            if PROMOTED in table.parameters:
                promoted[table.qualified_name.lower()] = table.parameters[PROMOTED]
    return promoted
