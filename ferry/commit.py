"""Commit: point the replica catalog at the new snapshot, once its data is all there.

The table is created first when it is new; partitions are added or altered in batches; an
existing table is altered last, so its ``ferry.replication.event`` changes only when every
partition already points at the new snapshot.
"""

from __future__ import annotations

from ferry.catalog import Catalog
from ferry.errors import ReplicaChangedError
from ferry.model import Database
from ferry.plan import ReplicationPlan
from ferry.replica import REPLICATION_EVENT


def _check_unchanged_since_plan(plan: ReplicationPlan, replica: Catalog) -> None:
    """Refuse to commit over a replica that someone changed after this plan read it.

    In the pipeline minutes or hours pass between Plan and Commit; another replication of
    the same table may have committed meanwhile. Its newer snapshot must not be replaced by
    this older one.
    """
    table = plan.replica_table
    current = replica.get_table(table.database, table.name)
    before = plan.replica_before
    expected = before.parameters.get(REPLICATION_EVENT) if before else None
    found = current.parameters.get(REPLICATION_EVENT) if current else None
    if (current is None) != (before is None) or found != expected:
        raise ReplicaChangedError(
            f"replica table {table.qualified_name} changed since event {plan.event_id} was "
            f"planned (its event is now {found or 'none'}); not committing over it"
        )


def commit(plan: ReplicationPlan, replica: Catalog) -> None:
    table = plan.replica_table
    _check_unchanged_since_plan(plan, replica)
    if replica.get_database(table.database) is None:
        replica.create_database(
            Database(
                name=table.database,
                description=f"Replicated by Ferry from {plan.source_table.database}",
            )
        )
    if plan.replica_before is None:
        replica.create_table(table)
    if plan.partitions_to_add:
        replica.add_partitions(table, plan.partitions_to_add)
    if plan.partitions_to_alter:
        replica.alter_partitions(table, plan.partitions_to_alter)
    if plan.replica_before is not None:
        replica.alter_table(table)
