"""Commit: point the replica catalog at the new snapshot, once its data is all there.

Commit is safe to run again for the same event after a crash anywhere in it (Lambda and
Step Functions retry; a process can die between two metastore calls):

- the replica's event may be the one the plan read *or this event's own* (a retry after the
  table was already written); anything else means another replication won, and this older
  snapshot must not replace its newer one (``ReplicaChangedError``);
- before anything else is written, the replica is *claimed* for this event
  (``claim``): one conditional write of the catalog's own moves its ``ferry.commit.claim``
  to this event, so of two runs that read the same replica — with any driver and any lock
  store — exactly one writes it; a new table is claimed by creating it. A retried commit
  finds its own claim;
- the table is created only if it is not there yet;
- partitions are split again at commit time into missing (added) and present (altered), so
  partitions an earlier attempt already wrote are accepted and the rest are written;
- an existing table's definition (location, schema, parameters) is written last, on the
  condition that the claim is still this event's: its ``ferry.replication.event`` moves
  only once every partition points at the new snapshot.

What a reader sees part-way (docs/ARCHITECTURE.md, "Commit"): every partition always points
at a complete snapshot, old or new; each metastore call is atomic (Hive: one batch of up to
``batch-size`` partitions per transaction; Glue: each entry of a 100-entry batch on its own),
so a reader may see some partitions already at the new snapshot and others still at the old.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from ferry.catalog import Catalog, batched
from ferry.catalog.locations import referenced_locations
from ferry.core import faults
from ferry.core.errors import CatalogError, ConcurrentChangeError, ReplicaChangedError
from ferry.core.model import Database, Table
from ferry.iceberg.paths import canonical
from ferry.iceberg.recognise import metadata_location
from ferry.lifecycle.statistics_commit import write_partition_statistics, write_table_statistics
from ferry.planning.replication_plan import ReplicationPlan
from ferry.replicas.replica import (
    CIRCUS_TRAIN_REPLICATION_EVENT,
    COMMIT_CLAIM,
    CREATED_BY_EVENT,
    REPLICATION_EVENT,
    check_not_promoted,
)
from ferry.storage import fs
from ferry.storage.avro import copy_schema

#: What an adopted table (no event yet) is claimed on: the time the metastore last wrote it.
ADOPTION_KEY = "transient_lastDdlTime"

#: How long a claim of a commit that never finished (its process killed) blocks others.
DEFAULT_CLAIM_LEASE = timedelta(hours=1)


@dataclass(frozen=True)
class CommitResult:
    created_table: bool
    partitions_added: int
    partitions_altered: int
    partitions_dropped: int = 0
    dropped_table: bool = False


def check_unchanged_since_plan(plan: ReplicationPlan, current: Table | None) -> None:
    """Refuse to commit over a replica that someone else changed after this plan read it.

    In the pipeline minutes or hours pass between Plan and Commit; another replication of
    the same table may have committed meanwhile. Its newer snapshot must not be replaced by
    this older one. The replica carrying *this* event is an earlier attempt of this commit.
    """
    before = plan.replica_before
    expected = before.parameters.get(REPLICATION_EVENT) if before else None
    found = current.parameters.get(REPLICATION_EVENT) if current else None
    if found == plan.event_id:
        return
    if current is None and (plan.overwrite or plan.drop_table):
        return  # an earlier attempt of this commit already dropped it
    if (current is None) != (before is None) or found != expected:
        raise ReplicaChangedError(
            f"replica table {plan.replica_table.qualified_name} changed since event "
            f"{plan.event_id} was planned (its event is now {found or 'none'}); "
            f"not committing over it"
        )
    iceberg = plan.iceberg
    now = metadata_location(current) if current is not None else None
    if iceberg is not None and now is not None and current is not None:
        # Another writer's Iceberg commit keeps Ferry's parameters and moves only the
        # metadata: this run's (a retried commit) or the one it planned from are Ferry's.
        ours = {canonical(iceberg.metadata_location)}
        if iceberg.previous_metadata_location is not None:
            ours.add(canonical(iceberg.previous_metadata_location))
        if canonical(now) not in ours:
            raise ReplicaChangedError(
                f"replica table {plan.replica_table.qualified_name} changed since event "
                f"{plan.event_id} was planned (another writer committed Iceberg metadata "
                f"{now}); not committing over it"
            )


def commit(
    plan: ReplicationPlan,
    replica: Catalog,
    batch_size: int,
    now: datetime | None = None,
    claim_lease: timedelta = DEFAULT_CLAIM_LEASE,
    owner: str | None = None,
    gone: Callable[[str], bool] = lambda owner: False,
    recorded: Mapping[str, str] | None = None,
    adopt: bool = False,
) -> CommitResult:
    """Point the replica at this event's snapshot (see the module's steps).

    ``owner``: this process, when a holder that died can be recognised (``ferry replicate``),
    recorded in the claim; ``gone`` tells whether a claim's owner no longer runs, so the
    claim of a process killed mid-commit is taken over at once rather than after
    ``claim_lease``. ``recorded``: parameters written on the replica table with the rest
    (what it replicated of the source: ``ferry.planning.source_versions.recorded_parameters``).
    ``adopt``: the replica may be a table that is no replica yet (``ferry failback``'s
    original source table); it is claimed on the metastore's own change time.

    A replica ``ferry failover`` promoted since the plan read it is refused, right before
    anything is written (``PromotedReplicaError``).
    """
    now = now or datetime.now(UTC)
    current = replica.get_table(plan.replica_table.database, plan.replica_table.name)
    check_not_promoted(current)
    check_unchanged_since_plan(plan, current)
    for schema in plan.schema_copies:
        copy_schema(schema.source_url, schema.target_url)  # the same bytes again on a retry
    if plan.drop_table:
        # PROPAGATE_DELETES: the source table is gone. The replica is EXTERNAL, so its data
        # stays for housekeeping to retire.
        if current is not None:
            replica.drop_table(plan.replica_table.database, plan.replica_table.name)
        return CommitResult(False, 0, 0, dropped_table=True)
    mine = claim_value(plan.event_id, now, owner)
    if current is not None:
        current = claim(replica, current, plan, mine, now, claim_lease, gone, adopt)
        mine = current.parameters[COMMIT_CLAIM]
        faults.point("commit.claimed")
    # The table as planned, carrying this event's claim (idle once its event is this one).
    table = replace(
        plan.replica_table,
        parameters={**plan.replica_table.parameters, **(recorded or {}), COMMIT_CLAIM: mine},
    )
    if plan.overwrite and current is not None and not _created_by(current, plan):
        # FULL_OVERWRITE: a schema change Hive cannot alter. Readers see no table until it
        # is created again below; its old snapshots stay (the table is EXTERNAL).
        replica.drop_table(table.database, table.name)
        faults.point("commit.table-dropped")
        current = None
    if current is None and replica.get_database(table.database) is None:
        replica.create_database(
            Database(
                name=table.database,
                description=f"Replicated by Ferry from {plan.source_table.database}",
                parameters={CREATED_BY_EVENT: plan.event_id},
            )
        )
    if current is None:
        _create(replica, table, plan)
        faults.point("commit.table-created")
    added, altered, dropped = _write_partitions(replica, table, plan, current, batch_size)
    write_partition_statistics(replica, table, plan)
    if current is not None:
        try:  # last, and only while the claim is still this event's
            replica.alter_table_if(table, COMMIT_CLAIM, mine)
        except ConcurrentChangeError as error:
            raise _lost(plan, error) from None
    write_table_statistics(replica, table, plan)  # after the table's last alter
    return CommitResult(current is None, added, altered, dropped)


def _write_partitions(
    replica: Catalog, table: Table, plan: ReplicationPlan, current: Table | None, batch_size: int
) -> tuple[int, int, int]:
    """Add, alter and drop the plan's partitions in batches; how many of each.

    The plan's partitions are split again into missing (added) and present (altered), so a
    retried commit accepts what an earlier attempt wrote and writes the rest; only partitions
    still present are dropped.
    """
    partitions = plan.replica_partitions
    existing = (
        replica.list_partition_values(table)
        if (partitions or plan.partitions_to_drop) and current is not None
        else set()
    )
    to_add = [p for p in partitions if p.values not in existing]
    to_alter = [p for p in partitions if p.values in existing]
    for batch in batched(to_add, batch_size):
        replica.add_partitions(table, batch)
        faults.point("commit.partition-batch")
    for batch in batched(to_alter, batch_size):
        replica.alter_partitions(table, batch)
        faults.point("commit.partition-batch")
    dropping = [p for p in plan.partitions_to_drop if p.values in existing]
    for batch in batched(dropping, batch_size):
        replica.drop_partitions(table, [p.values for p in batch])
        faults.point("commit.partition-batch")
    return len(to_add), len(to_alter), len(dropping)


# -- the claim ---------------------------------------------------------------------------------


def claim_value(event_id: str, now: datetime, owner: str | None = None) -> str:
    """``<event id>@<UTC time>[@<process>]``: who claimed the replica, when, and from which
    process when that can be told."""
    value = f"{event_id}@{now.astimezone(UTC).isoformat(timespec='seconds')}"
    return f"{value}@{owner}" if owner else value


def claim(
    replica: Catalog,
    current: Table,
    plan: ReplicationPlan,
    mine: str,
    now: datetime,
    lease: timedelta,
    gone: Callable[[str], bool] = lambda owner: False,
    adopt: bool = False,
) -> Table:
    """Make the replica this event's to write, before writing any of it; the table as claimed.

    The claim is the replica's ``ferry.commit.claim`` parameter, ``mine``, moved
    by one conditional write of the catalog's own (``Catalog.alter_table_if``: Hive's expected
    parameter, Glue's ``VersionId``): of two runs that read the same replica — whatever
    driver and whatever lock store each used — exactly one claims it; the other fails with
    ``ReplicaChangedError`` before it writes a partition, so a replica never mixes events.

    The claim is idle when it names the replica's own ``ferry.replication.event`` (its
    commit completed) and taken when it names another: a commit in progress, which no other
    event may claim over until ``lease`` has passed since, or its process is known to be gone
    (a process killed mid-commit). A retried commit finds its own claim. A replica from
    before claims (none yet) is claimed on its event parameter, Ferry's or Circus Train's,
    which then moves to this event.
    """
    parameters = current.parameters
    value = parameters.get(COMMIT_CLAIM)
    if value is not None:
        holder, since, owner = (value.split("@", 2) + ["", ""])[:3]
        if holder == plan.event_id:
            return current
        idle = holder == parameters.get(REPLICATION_EVENT)
        if not idle and not _expired(since, now, lease) and not (owner and gone(owner)):
            raise ReplicaChangedError(
                f"replica table {current.qualified_name} is being committed by event {holder} "
                f"(claimed at {since}); not committing event {plan.event_id} over it"
            )
        key, expected, moved = COMMIT_CLAIM, value, {COMMIT_CLAIM: mine}
    else:
        key = (
            REPLICATION_EVENT if REPLICATION_EVENT in parameters else CIRCUS_TRAIN_REPLICATION_EVENT
        )
        if adopt and key not in parameters:
            # A table adopted by ferry failback carries no event yet: the metastore's own
            # change time is the condition (Glue's condition is its VersionId anyway).
            key = ADOPTION_KEY
        expected = parameters.get(key)
        if expected is None and key != ADOPTION_KEY:  # the plan's guard refused it already
            raise ReplicaChangedError(
                f"replica table {current.qualified_name} has no {REPLICATION_EVENT}; not committing"
            )
        moved = {COMMIT_CLAIM: mine, REPLICATION_EVENT: plan.event_id}
        if key != ADOPTION_KEY:
            moved[key] = plan.event_id
    claimed = replace(current, parameters={**parameters, **moved})
    try:
        replica.alter_table_if(claimed, key, expected)  # type: ignore[arg-type]
    except ConcurrentChangeError as error:
        raise _lost(plan, error) from None
    return claimed


def release_claim(replica: Catalog, plan: ReplicationPlan) -> bool:
    """After a failed commit: make the replica's claim idle again if this event holds it, so
    the next run need not wait for its lease. True when it did.

    Conditional on the claim being this event's: a later replication's is never touched. A
    replica claimed on its event parameter (from before claims) gets its previous event back.
    """
    table = plan.replica_table
    current = replica.get_table(table.database, table.name)
    value = current.parameters.get(COMMIT_CLAIM) if current is not None else None
    if current is None or value is None or value.split("@")[0] != plan.event_id:
        return False
    parameters = dict(current.parameters)
    before = plan.replica_before.parameters if plan.replica_before is not None else {}
    if parameters.get(REPLICATION_EVENT) == plan.event_id and before:
        for key in (REPLICATION_EVENT, CIRCUS_TRAIN_REPLICATION_EVENT):
            if key in before:
                parameters[key] = before[key]
            else:
                parameters.pop(key, None)
    event = parameters.get(REPLICATION_EVENT)
    if event is None or event == plan.event_id:
        return False  # this event's own table (it created it): nothing to hand back
    parameters[COMMIT_CLAIM] = f"{event}@{value.split('@')[1]}"
    try:
        replica.alter_table_if(replace(current, parameters=parameters), COMMIT_CLAIM, value)
    except ConcurrentChangeError:
        return False
    return True


def _expired(since: str, now: datetime, lease: timedelta) -> bool:
    try:
        claimed = datetime.fromisoformat(since)
    except ValueError:
        return True  # unreadable: nobody can be told to hold it
    if claimed.tzinfo is None:
        claimed = claimed.replace(tzinfo=UTC)
    return now - claimed >= lease


def _created_by(current: Table, plan: ReplicationPlan) -> bool:
    """Whether ``current`` is the table this event created (an earlier attempt's), not the
    replica it claimed: a claimed replica still has its own event and location."""
    return current.parameters.get(REPLICATION_EVENT) == plan.event_id and fs.normalise(
        current.location or ""
    ) == fs.normalise(plan.replica_table.location or "")


def _create(replica: Catalog, table: Table, plan: ReplicationPlan) -> None:
    """Create the replica table; one created meanwhile by another run wins."""
    try:
        replica.create_table(table)
    except CatalogError as error:
        found = replica.get_table(table.database, table.name)
        if found is None or found.parameters.get(REPLICATION_EVENT) == plan.event_id:
            raise
        raise _lost(plan, error) from None


def _lost(plan: ReplicationPlan, error: Exception) -> ReplicaChangedError:
    return ReplicaChangedError(
        f"replica table {plan.replica_table.qualified_name} was changed by another replication "
        f"while event {plan.event_id} committed ({error}); not committing over it"
    )


def snapshot_references(snapshot: str, replica: Catalog, database: str, name: str) -> list[str]:
    """Every replica location (table or partition) at or below ``snapshot``, or holding it.

    A failed run may remove its snapshot folder only when this is empty: once any replica
    metadata points into it, it holds data a reader may be using.
    """
    return referenced_locations(replica, database, name).referencing(snapshot)
