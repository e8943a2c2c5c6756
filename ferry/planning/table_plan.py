"""Plan one table replication: what to copy where, and what the replica will become.

Planning only reads (the source and replica catalogs and the source files); it writes
nothing, so a plan that fails, or a dry run, changes neither side. This module reads both
tables, refuses what must not be planned, and hands the table to the plan of its kind: a
Hive table or view (``ferry.planning.hive_plan``), an Iceberg table
(``ferry.planning.iceberg_plan``), or a source table that is gone
(``ferry.planning.dropped_source``). What each partition and the table become, and why, are
the rules of ``ferry.planning.diff``; the plan itself is ``ferry.planning.replication_plan``.
"""

from __future__ import annotations

from collections.abc import Callable

from ferry.catalog import Catalog
from ferry.config import TableReplication
from ferry.copying.manifest import ManifestWriter
from ferry.core.clock import Clock
from ferry.core.errors import ReplicaGuardError
from ferry.iceberg.iceberg_run import IcebergIntent
from ferry.iceberg.recognise import is_iceberg
from ferry.planning.dropped_source import plan_source_gone
from ferry.planning.hive_plan import plan_hive_table
from ferry.planning.iceberg_noop import plan_unchanged
from ferry.planning.replication_plan import PlanInputs, ReplicaRead, ReplicationPlan
from ferry.replicas.replica import check_not_promoted, check_replica_guard


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
    replica_read: ReplicaRead | None = None,
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
    fingerprints; without one they are only counted. ``replica_read``: told every replica
    partition a Hive table's plan read (``PlanInputs.replica_read``).
    """
    writer = manifest or ManifestWriter(None, event_id, 1000)
    try:
        replica_before = replica.get_table(
            replication.replica_database, replication.replica_table_name
        )
        check_not_promoted(replica_before)
        inputs = PlanInputs(
            replication, source, replica, event_id, clock, writer, replica_before, replica_read
        )
        return _plan(inputs, list_threads, intend, adopt)
    except BaseException:
        writer.abandon()
        raise


def _plan(
    inputs: PlanInputs,
    list_threads: int,
    intend: Callable[[IcebergIntent], None] | None,
    adopt: bool,
) -> ReplicationPlan:
    """The plan of the source table's kind, once the replica may be written by this one."""
    replication, replica_before = inputs.replication, inputs.replica_before
    source_config = replication.source_table
    source_table = inputs.source.get_table(source_config.database_name, source_config.table_name)
    if source_table is None:
        return plan_source_gone(inputs)
    check_replica_guard(replica_before, replication, adopt=adopt)
    if replica_before is not None and is_iceberg(replica_before) and not is_iceberg(source_table):
        raise ReplicaGuardError(
            f"replica {replica_before.qualified_name} is an Iceberg table, and its source "
            f"{source_table.qualified_name} is not (any more): not replacing it (drop it, or "
            "replicate to another table)"
        )
    if is_iceberg(source_table):
        unchanged = plan_unchanged(inputs, source_table)  # from the entries, no pyiceberg
        if unchanged is not None:
            return unchanged
        # Imported here: pyiceberg is for Iceberg tables with work (a Hive table's run, and
        # an up-to-date Iceberg table's, start without it; tests/unit/test_cold_start_imports.py).
        from ferry.planning.iceberg_plan import plan_iceberg_table

        return plan_iceberg_table(inputs, source_table, intend)
    return plan_hive_table(inputs, source_table, list_threads)
