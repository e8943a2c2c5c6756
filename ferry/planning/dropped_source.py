"""A source table that is gone: its replica is dropped (PROPAGATE_DELETES), or the plan stops.

PROPAGATE_DELETES drops a replica table only when the source really dropped that very
table: its catalog still holds the database and answers that the table is gone, and the
replica records that table, from that catalog, as its source. Anything else is a source
table not found (``SourceTableNotFoundError``), and nothing is written.
"""

from __future__ import annotations

from dataclasses import replace

from ferry.catalog import Catalog
from ferry.config import ReplicationStrategy, TableReplication
from ferry.core.errors import SourceTableNotFoundError
from ferry.core.model import Table
from ferry.planning.replication_plan import PlanInputs, ReplicationPlan, build_plan
from ferry.replicas.replica import (
    CIRCUS_TRAIN_SOURCE_METASTORE_URIS,
    CIRCUS_TRAIN_SOURCE_TABLE,
    SOURCE_METASTORE_URIS,
    SOURCE_TABLE,
    check_replica_guard,
)


def plan_source_gone(inputs: PlanInputs) -> ReplicationPlan:
    """The plan when the source table is not found: drop its replica (PROPAGATE_DELETES, and
    only the replica of that very table), else ``SourceTableNotFoundError``."""
    replication, source, replica_before = inputs.replication, inputs.source, inputs.replica_before
    missing = (
        f"source table {replication.source_table.qualified_name} not found in catalog "
        f"'{source.name}' ({source.description})"
    )
    strategy = replication.replication_strategy
    if strategy is not ReplicationStrategy.PROPAGATE_DELETES or replica_before is None:
        raise SourceTableNotFoundError(missing)
    check_replica_guard(replica_before, replication)
    check_source_dropped(replica_before, replication, source, missing)
    # The replica table is dropped; its data stays for housekeeping to retire.
    return build_plan(
        inputs,
        replace(replica_before, parameters={}),
        replica_before,
        drop_table=True,
        table_data_changed=False,
    )


def check_source_dropped(
    replica_before: Table, replication: TableReplication, source: Catalog, missing: str
) -> None:
    """Refuse PROPAGATE_DELETES' drop unless the source really dropped this replica's table.

    The source catalog must hold the table's database (a catalog that never held it, a
    wrong URI, answers "no such database" too), and the replica must be Ferry's (or Circus
    Train's) replica of that very table from that very catalog, as its parameters record.
    """
    database = replication.source_table.database_name
    replica = replica_before.qualified_name
    if source.get_database(database) is None:
        raise SourceTableNotFoundError(
            f"{missing}, nor its database {database}: not dropping replica {replica} "
            "(PROPAGATE_DELETES drops a replica only when its source catalog holds the "
            "database and answers that the table is gone)"
        )
    parameters = replica_before.parameters
    recorded_table = parameters.get(SOURCE_TABLE) or parameters.get(CIRCUS_TRAIN_SOURCE_TABLE)
    recorded_catalog = parameters.get(SOURCE_METASTORE_URIS) or parameters.get(
        CIRCUS_TRAIN_SOURCE_METASTORE_URIS
    )
    source_name = replication.source_table.qualified_name
    if not recorded_table or recorded_table.lower() != source_name.lower():
        raise SourceTableNotFoundError(
            f"{missing}; replica {replica} does not record {source_name} as its source "
            f"({SOURCE_TABLE}: {recorded_table or 'none'}): not dropping it"
        )
    if not recorded_catalog or _catalog_key(recorded_catalog) != _catalog_key(source.description):
        raise SourceTableNotFoundError(
            f"{missing}; replica {replica} was replicated from catalog "
            f"{recorded_catalog or 'unknown'}, not {source.description}: not dropping it"
        )


def _catalog_key(description: str) -> tuple[str, ...]:
    """A catalog's description compared as a set of lower-case URIs."""
    return tuple(sorted(part.strip().lower() for part in description.split(",") if part.strip()))
