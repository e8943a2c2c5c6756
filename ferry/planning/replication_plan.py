"""The plan of one table replication, and the one place it is built.

``ReplicationPlan`` is what Plan decided, before anything is written: every later step reads
it (the copiers, Commit, Abort, the notification, ``ferry plan``). A Hive table's plan
(``ferry.planning.hive_plan``), an Iceberg table's (``ferry.planning.iceberg_plan``) and the
drop of a replica whose source is gone (``ferry.planning.dropped_source``) each decide their
part of it; ``build_plan`` puts it together from what Plan read (``PlanInputs``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ferry.catalog import Catalog
from ferry.catalog.grants import GrantChanges
from ferry.config import ReplicationMode, TableReplication
from ferry.copying.manifest import ManifestSummary, ManifestWriter
from ferry.core.clock import Clock
from ferry.core.model import Partition, Table
from ferry.iceberg.iceberg_run import IcebergRun
from ferry.planning.diff import PartitionChange, definition
from ferry.planning.statistics_records import StatisticsPlan
from ferry.replicas.replica import replica_parameters
from ferry.storage.avro import SchemaCopy


@dataclass(frozen=True)
class ReplicationPlan:
    """Everything one replication will do, decided before anything is written."""

    event_id: str
    replication: TableReplication
    source_table: Table
    replica_before: Table | None
    replica_table: Table
    partitions_to_add: tuple[Partition, ...]
    partitions_to_alter: tuple[Partition, ...]
    #: What the manifest holds (its files were streamed to the manifest while listing).
    manifest: ManifestSummary
    #: The new snapshot folder that a failed run removes again, unless referenced; None
    #: when this event copies no data.
    snapshot_location: str | None
    partition_filter: str | None
    #: PROPAGATE_DELETES: replica partitions whose source partition is gone.
    partitions_to_drop: tuple[Partition, ...] = ()
    #: Every partition in the plan, and why (``ferry plan`` shows them).
    changes: tuple[PartitionChange, ...] = ()
    #: Selected partitions that are already replicated as they are.
    partitions_unchanged: int = 0
    #: PROPAGATE_DELETES of a dropped source table: the replica table is dropped.
    drop_table: bool = False
    #: FULL_OVERWRITE of an existing replica: it is dropped and created anew.
    overwrite: bool = False
    #: Unpartitioned: whether the table's data changed (else it keeps its location).
    table_data_changed: bool = True
    #: Avro schema files to copy before the commit; the replica points at the copies.
    schema_copies: tuple[SchemaCopy, ...] = ()
    #: What a person should know about this run, one line each (e.g. a table-location that
    #: changed since the last run).
    notices: tuple[str, ...] = ()
    #: An Iceberg table: its replica's next metadata and what the run writes for it
    #: (``ferry.iceberg.pipeline``); None for every other table.
    iceberg: IcebergRun | None = None
    #: The source version this plan read (``ferry.planning.source_versions``): Commit records it.
    source_version: str | None = None
    #: Grants and LF-tags the replica needs to match its source's (``permissions``:
    #: ``ferry.planning.grants_plan``); None when the config has no such section.
    grants: GrantChanges | None = None
    #: A Hive-format table's column statistics and keys that Commit writes
    #: (``ferry.planning.statistics_plan``); None when there are none to write.
    statistics: StatisticsPlan | None = None

    @property
    def mode(self) -> ReplicationMode:
        return self.replication.replication_mode

    @property
    def replica_partitions(self) -> tuple[Partition, ...]:
        return self.partitions_to_add + self.partitions_to_alter

    @property
    def kind(self) -> str:
        """ "partitioned table", "table" or "view", for people."""
        if self.source_table.is_view:
            return "view"
        if self.iceberg is not None:
            return "Iceberg table"
        return "partitioned table" if self.source_table.is_partitioned else "table"

    @property
    def unchanged(self) -> bool:
        """True when writing would change nothing a reader sees.

        That is: no partition to add, alter or drop, no grant to give or revoke, no
        statistics or keys to write, the table's data (unpartitioned) is the same, and the
        replica table already has the definition this plan would give it (schema, storage,
        parameters), ignoring when and by which event it was written.
        """
        if self.replica_partitions or self.partitions_to_drop or self.drop_table:
            return False
        if self.grants is not None and not self.grants.empty:
            return False
        if self.statistics:
            return False
        if self.replica_before is None or self.overwrite:
            return False
        if not self.source_table.is_partitioned and self.table_data_changed:
            return False
        return definition(self.replica_before) == definition(self.replica_table)


#: What is told the replica's partitions a plan read, by their values.
ReplicaRead = Callable[[Mapping[tuple[str, ...], Partition]], None]


@dataclass(frozen=True)
class PlanInputs:
    """What the plan of one table starts from: the replication, both catalogs, the event,
    the clock, the manifest its files stream to, and the replica table as Plan read it."""

    replication: TableReplication
    source: Catalog
    replica: Catalog
    event_id: str
    clock: Clock
    writer: ManifestWriter
    replica_before: Table | None
    #: Told every replica partition the plan read, by their values (a Hive table's plan,
    #: when it lists them): Plan hands them to Commit (``ferry.lifecycle.replica_as_planned``).
    replica_read: ReplicaRead | None = None


def replica_parameters_for(
    inputs: PlanInputs,
    source_table: Table,
    source_parameters: Mapping[str, str],
    source_location: str | None,
    replicated_at: datetime,
) -> dict[str, str]:
    """The parameters a replica table or partition gets from its source's: the source's,
    with what Ferry records of the replication and the configured table properties."""
    source = inputs.source
    return replica_parameters(
        source_parameters,
        source_table=source_table,
        source_location=source_location,
        source_catalog_name=source.name,
        source_catalog_description=source.description,
        event_id=inputs.event_id,
        mode=inputs.replication.replication_mode,
        replicated_at=replicated_at,
        extra=inputs.replication.transform_options.table_properties,
    )


def build_plan(
    inputs: PlanInputs, source_table: Table, replica_table: Table, **decided: Any
) -> ReplicationPlan:
    """The plan: what Plan read, the manifest closed (its files were streamed to it while
    listing), and what the table's kind of plan ``decided`` (the other fields of
    ``ReplicationPlan``). A plan that names no partitions writes none, and one that names no
    snapshot folder copies no data into one."""
    nothing_copied: dict[str, Any] = {
        "partitions_to_add": (),
        "partitions_to_alter": (),
        "snapshot_location": None,
        "partition_filter": None,
    }
    return ReplicationPlan(
        event_id=inputs.event_id,
        replication=inputs.replication,
        source_table=source_table,
        replica_before=inputs.replica_before,
        replica_table=replica_table,
        manifest=inputs.writer.close(),
        **(nothing_copied | decided),
    )
