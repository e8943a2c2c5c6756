"""Commit: point the replica catalog at the new snapshot, once its data is all there.

Commit is safe to run again for the same event after a crash anywhere in it (Lambda and
Step Functions retry; a process can die between two metastore calls):

- the replica's event may be the one the plan read *or this event's own* (a retry after the
  table was already written); anything else means another replication won, and this older
  snapshot must not replace its newer one (``ReplicaChangedError``);
- the table is created only if it is not there yet;
- partitions are split again at commit time into missing (added) and present (altered), so
  partitions an earlier attempt already wrote are accepted and the rest are written;
- an existing table is altered last, so its ``ferry.replication.event`` moves only once
  every partition points at the new snapshot.

What a reader sees part-way (docs/ARCHITECTURE.md, "Commit"): every partition always points
at a complete snapshot, old or new; each metastore call is atomic (Hive: one batch of up to
``batch-size`` partitions per transaction; Glue: each entry of a 100-entry batch on its own),
so a reader may see some partitions already at the new snapshot and others still at the old.
"""

from __future__ import annotations

from dataclasses import dataclass

from ferry import faults
from ferry.avro import copy_schema
from ferry.catalog import Catalog, batched
from ferry.errors import ReplicaChangedError
from ferry.model import Database, Table
from ferry.ownership import referenced_locations
from ferry.plan import ReplicationPlan
from ferry.replica import CREATED_BY_EVENT, REPLICATION_EVENT


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


def commit(plan: ReplicationPlan, replica: Catalog, batch_size: int) -> CommitResult:
    table = plan.replica_table
    current = replica.get_table(table.database, table.name)
    check_unchanged_since_plan(plan, current)
    for schema in plan.schema_copies:
        copy_schema(schema.source_url, schema.target_url)  # the same bytes again on a retry
    if plan.drop_table:
        # PROPAGATE_DELETES: the source table is gone. The replica is EXTERNAL, so its data
        # stays for housekeeping to retire.
        if current is not None:
            replica.drop_table(table.database, table.name)
        return CommitResult(False, 0, 0, dropped_table=True)
    if (
        plan.overwrite
        and current is not None
        and current.parameters.get(REPLICATION_EVENT) != plan.event_id
    ):
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
        replica.create_table(table)
        faults.point("commit.table-created")
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
    if current is not None:
        replica.alter_table(table)
    return CommitResult(current is None, len(to_add), len(to_alter), len(dropping))


def snapshot_references(snapshot: str, replica: Catalog, database: str, name: str) -> list[str]:
    """Every replica location (table or partition) at or below ``snapshot``, or holding it.

    A failed run may remove its snapshot folder only when this is empty: once any replica
    metadata points into it, it holds data a reader may be using.
    """
    return referenced_locations(replica, database, name).referencing(snapshot)
