"""Commit's part of column statistics and keys: written once what they describe is there.

A catalog checks statistics against the columns the table or partition holds, and a Hive
metastore's ``alter_table`` deletes the statistics of a column it drops or retypes: so each
partition's statistics are written after the partition batches, and the table's statistics
and keys after the table's last write (its creation, or the conditional alter that moves
its event). Every write replaces what the replica holds, and keys are compared with the
replica's again first, so a retried commit converges.
"""

from __future__ import annotations

from ferry.catalog import Catalog
from ferry.core import faults
from ferry.core.model import Table
from ferry.core.statistics import Constraints
from ferry.planning.replication_plan import ReplicationPlan


def write_partition_statistics(replica: Catalog, table: Table, plan: ReplicationPlan) -> None:
    """Write each planned partition's column statistics (the partitions exist by now)."""
    planned = plan.statistics
    if planned is None or not planned.partitions:
        return
    replica.set_partition_column_statistics(
        table,
        {
            partition.values: [record.statistics() for record in partition.statistics]
            for partition in planned.partitions
        },
    )
    faults.point("commit.partition-statistics")


def write_table_statistics(replica: Catalog, table: Table, plan: ReplicationPlan) -> None:
    """Write the table's column statistics, then drop and add its keys."""
    planned = plan.statistics
    if planned is None:
        return
    if planned.table:
        replica.set_column_statistics(table, [record.statistics() for record in planned.table])
        faults.point("commit.table-statistics")
    if not (planned.keys_to_drop or planned.keys_to_add):
        return
    held = {name.lower() for name in replica.get_constraints(table).names}
    dropping = [name for name in planned.keys_to_drop if name.lower() in held]
    if dropping:
        replica.drop_constraints(table, dropping)
        held -= {name.lower() for name in dropping}
        faults.point("commit.keys-dropped")
    adding = planned.keys_to_add
    primary = adding.primary_key
    missing = Constraints(
        primary if primary is not None and primary.name.lower() not in held else None,
        tuple(key for key in adding.foreign_keys if key.name.lower() not in held),
    )
    if missing:  # an earlier attempt added the rest
        replica.add_constraints(table, missing)
