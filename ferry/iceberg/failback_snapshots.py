"""Failback of an Iceberg table: the snapshots written in DR go home, their ids kept.

After ``ferry failover`` writers commit to the promoted replica. ``fail_back_iceberg``
compares both sides' lineages from the snapshot the replica held at the failover
(``ferry.iceberg.lineage``) and writes home only the replica's new snapshots, with the
same machinery that replicates forward, turned around (``plan_replication`` from the
replica's metadata to the source's location): the data and delete files those snapshots
added are copied below the source's location with their paths moved, new manifests,
manifest lists and a metadata.json are written for the source with the same snapshot ids,
sequence numbers and timestamps, and the source catalog's entry moves to it with the
catalog's own optimistic check (its ``metadata_location`` must still be the one read).
The source keeps its own path properties (a ``write.data.path`` outside its location).

- Names are derived from the two metadata files the failback reads, not from its event id,
  so a failback killed after its copies writes the same names when run again (a complete
  copy is skipped, the metadata.json, once there, is not written twice) and nothing the
  source's current metadata references is overwritten.
- The source table gets what an Iceberg catalog registers and nothing of Ferry's: it stays
  a source. The replica's record of Ferry's last commit (``COMMITTED_METADATA_LOCATION``)
  moves to the metadata that went home, so the forward replication finds the two sides
  equal and has nothing to do.
- Both sides changed (the source's current snapshot is not in the replica's lineage):
  ``FailoverError`` naming both sides' new snapshots, unless the caller names the winner.
  ``prefer`` replica: the replica's snapshots are written home on top of the source's
  state at the failover; the source's own later snapshots leave its current metadata (its
  metadata log still names the metadata.json that has them). ``prefer`` source: nothing
  goes home; the replica's catalog entry returns to the metadata Ferry last committed
  there, so the forward replication brings the source's snapshots (the replica's dropped
  snapshots stay in its metadata log, their files in place).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyiceberg.table.metadata import TableMetadata

from ferry.catalog import Catalog
from ferry.config import TableReplication
from ferry.core import faults
from ferry.core.errors import ConcurrentChangeError, FailoverError, FerryError
from ferry.core.model import Table
from ferry.iceberg.fileio import FerryFileIO
from ferry.iceberg.lineage import Divergence, diverge, lineage
from ferry.iceberg.paths import PATH_PROPERTIES
from ferry.iceberg.reading import read_table_metadata
from ferry.iceberg.recognise import (
    COMMITTED_METADATA_LOCATION,
    METADATA_LOCATION,
    PREVIOUS_METADATA_LOCATION,
    metadata_location,
)
from ferry.iceberg.registration import register_iceberg_replica
from ferry.iceberg.snapshot_plan import plan_replication
from ferry.iceberg.table_replication import execute_plan


@dataclass(frozen=True)
class IcebergFailback:
    """What a failback of one Iceberg table found and did (or would do: ``dry_run``)."""

    #: The source table (``database.table``).
    table: str
    #: The replica's snapshots after the one held at the failover, oldest first.
    replica_snapshots: tuple[int, ...]
    #: The source's snapshots after the one held at the failover, oldest first.
    source_snapshots: tuple[int, ...]
    #: Both sides committed since the failover.
    conflict: bool
    #: The snapshots written home (would be, in a dry run), oldest first.
    written_home: tuple[int, ...] = ()
    #: The replica's snapshots dropped because the source was named the winner.
    dropped: tuple[int, ...] = ()
    #: Data, delete and statistics files copied home (to copy, in a dry run), and their bytes.
    files_copied: int = 0
    bytes_copied: int = 0
    #: The source's metadata.json once the failback is done (its current one if unchanged).
    metadata_location: str | None = None
    dry_run: bool = False
    summary: str = ""


#: ``ferry.failover.Prefer``'s values (a ``StrEnum``: its members compare equal to them).
#: Not imported: ``ferry.failover`` reads Iceberg tables (``ferry.iceberg.recognise``), and
#: the packages of ``ferry`` import each other in one direction only.
PREFER_REPLICA, PREFER_SOURCE = "replica", "source"

#: What a forward Commit records on the replica of a source at a snapshot (its id and its
#: time in milliseconds): ``ferry.planning.source_versions``' parameters, passed in by the caller
#: (``ferry.planning.source_versions`` reads ``ferry.replicas.replica``'s keys; see
#: ``PREFER_REPLICA``).
RecordSource = Callable[[int | None, int | None], Mapping[str, str]]


def fail_back_iceberg(
    replication: TableReplication,
    held_at_failover: int | None,
    *,
    prefer: str | None,
    dry_run: bool,
    source_catalog: Catalog,
    replica_catalog: Catalog,
    aws: Any = None,
    event_id: str,
    record_source: RecordSource | None = None,
) -> IcebergFailback:
    """Bring home what writers committed to the promoted replica of ``replication`` since
    the failover (the replica then held snapshot ``held_at_failover``); see the module.

    ``prefer``: a ``ferry.failover.Prefer`` (``"replica"``, ``"source"``) or None.
    ``record_source``: what the replica then records of the source it equals (see
    ``RecordSource``; None records only Ferry's last commit). ``aws`` is unused: every file
    goes through Ferry's file systems, configured once per process. ``event_id`` names the
    failback in the summary. ``FailoverError`` (one line, nothing changed) when it cannot:
    a table that is not Iceberg on either side, a history that no longer reaches the
    failover, changes on both sides with no winner named, a source or replica committed to
    while the failback ran."""
    del aws
    if prefer not in (None, PREFER_REPLICA, PREFER_SOURCE):
        raise FailoverError(f"prefer must be {PREFER_REPLICA} or {PREFER_SOURCE}, not {prefer!r}")
    name = replication.source_table.qualified_name
    home = _entry(
        source_catalog,
        replication.source_table.database_name,
        replication.source_table.table_name,
        f"source table {name}",
    )
    replica = _entry(
        replica_catalog,
        replication.replica_database,
        replication.replica_table_name,
        f"replica table {replication.replica_qualified_name}",
    )
    io = FerryFileIO()
    home_location, replica_location = metadata_location(home), metadata_location(replica)
    assert home_location is not None and replica_location is not None  # _entry
    try:
        home_metadata = read_table_metadata(io, home_location)
        replica_metadata = read_table_metadata(io, replica_location)
    except FerryError as error:
        raise FailoverError(f"Iceberg table {name}: {error}") from None
    found = diverge(lineage(home_metadata), lineage(replica_metadata), held_at_failover)
    if isinstance(found, str):
        raise FailoverError(f"Iceberg table {name}: cannot fail back: {found}")
    result = IcebergFailback(
        table=name,
        replica_snapshots=found.replica_new,
        source_snapshots=found.source_new,
        conflict=found.conflict,
        metadata_location=home_location,
        dry_run=dry_run,
    )
    if found.conflict and prefer is None:
        raise FailoverError(
            f"Iceberg table {name} changed on both sides since the failover: source snapshots "
            f"{_ids(found.source_new)}, replica snapshots {_ids(found.replica_new)}; nothing "
            "changed (name the winner with --prefer replica|source)"
        )
    if found.conflict and prefer == PREFER_SOURCE:
        return _drop_replica_changes(result, found, replica, replica_catalog, event_id)
    if not found.to_write:
        if (
            not dry_run
            and home_metadata.current_snapshot_id == replica_metadata.current_snapshot_id
        ):
            _record_home(replica_catalog, replica, replica_location, home_metadata, record_source)
        return replace(result, summary=_nothing_summary(name, found, event_id))
    sides = _Sides(home, home_metadata, source_catalog, replica, replica_location, replica_catalog)
    return _write_home(result, found, sides, event_id, record_source)


@dataclass(frozen=True)
class _Sides:
    """Both tables as the failback read them: catalog entries, metadata, catalogs."""

    home: Table
    home_metadata: TableMetadata
    source_catalog: Catalog
    replica: Table
    replica_location: str
    replica_catalog: Catalog


def _write_home(
    result: IcebergFailback,
    found: Divergence,
    sides: _Sides,
    event_id: str,
    record_source: RecordSource | None,
) -> IcebergFailback:
    """Copy the replica's new snapshots' files home, write the source's metadata, commit it."""
    home, home_metadata, source_catalog = sides.home, sides.home_metadata, sides.source_catalog
    replica, replica_location = sides.replica, sides.replica_location
    home_location = metadata_location(home)
    assert home_location is not None
    io = FerryFileIO()
    try:
        plan = plan_replication(
            io,
            replica_location,
            home_metadata.location,
            io,
            home_location,
            _run_id(replica_location, home_location),
        )
    except FerryError as error:
        raise FailoverError(f"Iceberg table {result.table}: {error}") from None
    assert plan.metadata is not None and plan.metadata_target is not None
    plan = replace(plan, metadata=_home_paths(plan.metadata, home_metadata))
    written = tuple(s.snapshot.snapshot_id for s in plan.snapshots)
    planned = replace(
        result,
        written_home=written,
        files_copied=len(plan.copies),
        bytes_copied=sum(c.size for c in plan.copies),
        metadata_location=plan.metadata_target,
    )
    if result.dry_run:
        return replace(planned, summary=_home_summary(planned, found, event_id))
    done = execute_plan(plan, io, io)
    # Files and metadata in place, the catalog not moved yet: a failback killed here leaves
    # files nothing references, and a re-run writes the same names.
    faults.point("failback.iceberg.commit")
    entry = register_iceberg_replica(
        source_catalog.kind,
        home.database,
        home.name,
        plan.metadata,
        plan.metadata_target,
        home_location,
        home.parameters,
        source_table=home,
        source_kind=source_catalog.kind,
        source_properties=home_metadata.properties,
        replica_before=home,
        previous_properties=home_metadata.properties,
    )
    try:
        source_catalog.alter_table_if(entry, METADATA_LOCATION, home_location)
    except ConcurrentChangeError:
        raise FailoverError(
            f"Iceberg table {result.table} was committed to while the failback ran (its "
            f"{METADATA_LOCATION} is no longer {home_location}); the source is unchanged: "
            "run the failback again"
        ) from None
    # The source moved, the replica's record not yet: a re-run finds the snapshots home and
    # only records it.
    faults.point("failback.iceberg.recorded")
    _record_home(sides.replica_catalog, replica, replica_location, plan.metadata, record_source)
    copied = replace(
        planned,
        files_copied=len(done.copied),
        bytes_copied=sum(c.size for c in done.copied),
    )
    return replace(copied, summary=_home_summary(copied, found, event_id))


def _home_paths(metadata: TableMetadata, home: TableMetadata) -> TableMetadata:
    """The source's own path properties kept: where its writers put data and metadata
    (``write.data.path`` outside its location, ...) stays as it was, not the replica's
    folders moved back below the source's location."""
    kept = {k: home.properties[k] for k in PATH_PROPERTIES if k in home.properties}
    if not kept:
        return metadata
    return metadata.model_copy(update={"properties": {**metadata.properties, **kept}})


def _drop_replica_changes(
    result: IcebergFailback,
    found: Divergence,
    replica: Table,
    replica_catalog: Catalog,
    event_id: str,
) -> IcebergFailback:
    """The source wins: the replica's entry returns to the metadata Ferry last committed
    there (the snapshot held at the failover), so the forward replication resumes."""
    current = metadata_location(replica)
    committed = replica.parameters.get(COMMITTED_METADATA_LOCATION)
    if committed is None:
        raise FailoverError(
            f"replica table {replica.qualified_name} records no {COMMITTED_METADATA_LOCATION}: "
            "Ferry cannot tell which metadata it last committed there; nothing changed"
        )
    dropped = replace(result, dropped=found.replica_new)
    summary = (
        f"{result.table}: source wins; the replica's snapshots {_ids(found.replica_new)} "
        f"{'would be' if result.dry_run else 'were'} dropped (the replica returns to "
        f"{committed}; the forward replication brings the source's snapshots "
        f"{_ids(found.source_new)}) [{event_id}]"
    )
    if not result.dry_run and current != committed:
        parameters = {
            **replica.parameters,
            METADATA_LOCATION: committed,
            PREVIOUS_METADATA_LOCATION: current or "",
        }
        _alter_if(replica_catalog, replace(replica, parameters=parameters), current)
    return replace(dropped, summary=summary)


def _record_home(
    catalog: Catalog,
    replica: Table,
    location: str,
    home_metadata: TableMetadata,
    record_source: RecordSource | None,
) -> None:
    """Record on the replica what a forward run would have: ``location`` (the replica's
    metadata the source now equals) as Ferry's last commit, so the forward replication
    takes the two sides as equal, and (``record_source``) the source's version it holds,
    which freshness and ``ferry status`` read."""
    if replica.parameters.get(COMMITTED_METADATA_LOCATION) == location:
        return  # recorded with it by an earlier failback, or by the forward Commit
    recorded = {COMMITTED_METADATA_LOCATION: location}
    if record_source is not None:
        current = home_metadata.current_snapshot()
        recorded.update(
            record_source(
                home_metadata.current_snapshot_id, current.timestamp_ms if current else None
            )
        )
    parameters = {**replica.parameters, **recorded}
    _alter_if(catalog, replace(replica, parameters=parameters), location)


def _alter_if(catalog: Catalog, table: Table, expected: str | None) -> None:
    try:
        catalog.alter_table_if(table, METADATA_LOCATION, expected or "")
    except ConcurrentChangeError:
        raise FailoverError(
            f"replica table {table.qualified_name} was committed to while the failback ran "
            f"(its {METADATA_LOCATION} is no longer {expected}): run the failback again"
        ) from None


def _entry(catalog: Catalog, database: str, table: str, what: str) -> Table:
    found = catalog.get_table(database, table)
    if found is None:
        raise FailoverError(f"{what} not found in catalog '{catalog.name}'; nothing changed")
    if metadata_location(found) is None:
        raise FailoverError(f"{what} is not an Iceberg table with a {METADATA_LOCATION}")
    return found


def _run_id(replica_location: str, home_location: str) -> str:
    """The names' run id: the two metadata files read, so a re-run reuses every name."""
    digest = hashlib.sha256(f"{replica_location}\n{home_location}".encode()).hexdigest()
    return f"failback-{digest[:12]}"


def _ids(ids: tuple[int, ...]) -> str:
    return ", ".join(str(i) for i in ids) if ids else "none"


def _nothing_summary(name: str, found: Divergence, event_id: str) -> str:
    if found.replica_new and not found.to_write:
        return f"{name}: the replica's snapshots are home already; nothing to write [{event_id}]"
    if found.source_new:
        return (
            f"{name}: only the source changed since the failover (snapshots "
            f"{_ids(found.source_new)}); nothing to write home [{event_id}]"
        )
    return f"{name}: neither side changed since the failover; nothing to write home [{event_id}]"


def _home_summary(result: IcebergFailback, found: Divergence, event_id: str) -> str:
    verb = "would write" if result.dry_run else "wrote"
    over = ""
    if found.conflict:
        over = f", over the source's own snapshots {_ids(found.source_new)} (replica wins)"
    return (
        f"{result.table}: {verb} {len(result.written_home)} snapshot(s) home "
        f"({_ids(result.written_home)}), {result.files_copied} file(s), "
        f"{result.bytes_copied} bytes{over} [{event_id}]"
    )
