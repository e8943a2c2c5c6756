"""Commit: point the replica catalog at the new snapshot, once its data is all there.

The table is created first when it is new; partitions are added or altered in batches; an
existing table is altered last, so its ``ferry.replication.event`` changes only when every
partition already points at the new snapshot.
"""

from __future__ import annotations

from ferry.catalog import Catalog
from ferry.model import Database
from ferry.plan import ReplicationPlan


def commit(plan: ReplicationPlan, replica: Catalog) -> None:
    table = plan.replica_table
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
