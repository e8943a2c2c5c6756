"""Who may read a replica, in a replication: Plan reads both sides' grants, Commit gives them.

A config whose ``permissions`` section is enabled (``ferry.config.permissions``) makes every
table of it carry its grants: a Hive table, a view and an Iceberg table alike (grants are on
the catalog's table, whatever its format). Plan reads the source's and the replica's grants
and tags with the grants port (``ferry.catalog.grants_factory.open_grants``), computes what
the replica needs (``ferry.catalog.grant_changes``), checks on the replica's side that it can
be given (``Grants.check``: a mapped principal that does not exist, a grant the replica's
role may not give, fail Plan with one ``GrantError`` line, before anything is written) and
puts the changes in the plan, with a notice for each source principal or tag no mapping
covers. Commit gives them once the replica table is written (``apply_grants``), after
comparing them with what the replica holds then, so a retried commit converges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ferry.catalog import Catalog
from ferry.catalog.grant_changes import grant_changes
from ferry.catalog.grants import GrantChanges, Grants
from ferry.catalog.grants_factory import open_grants
from ferry.config import ReplicationConfig
from ferry.config.permissions import HivePrivileges, LakeFormationPermissions
from ferry.core.model import Table
from ferry.planning.replication_plan import ReplicationPlan
from ferry.storage.aws import AwsClients


def permissions_of(config: ReplicationConfig) -> LakeFormationPermissions | HivePrivileges | None:
    """The config's enabled ``permissions`` section (the catalogs allow one at most), if any."""
    for section in (config.permissions.lake_formation, config.permissions.hive_privileges):
        if section is not None and section.enabled:
            return section
    return None


def plan_grants(
    plan: ReplicationPlan,
    config: ReplicationConfig,
    source: Catalog,
    replica: Catalog,
    aws: AwsClients,
) -> ReplicationPlan:
    """``plan`` with the grants its replica needs (``grants``) and a notice for each source
    principal or tag no mapping covers; ``GrantError`` when the replica's side cannot give
    them. Unchanged without a ``permissions`` section, or for a replica being dropped."""
    section = permissions_of(config)
    if section is None or plan.drop_table:
        return plan
    source_grants = open_grants(config.source_catalog, source, aws)
    replica_grants = open_grants(config.replica_catalog, replica, aws)
    table, target = plan.source_table, plan.replica_table
    columns = column_names(table)
    held, held_tags = [], []
    if plan.replica_before is not None and not plan.overwrite:
        held, held_tags = _read(replica_grants, target)
    changes = grant_changes(
        source_grants.list_grants(table.database, table.name, columns),
        held,
        section.principal_mappings,
        target.database,
        target.name,
        revoke=section.revoke,
        source_tags=source_grants.list_tags(table.database, table.name, columns),
        replica_tags=held_tags,
        tag_mappings=getattr(section, "tag_mappings", None),
    )
    replica_grants.check(changes)
    return replace(plan, grants=changes, notices=(*plan.notices, *changes.notices()))


def apply_grants(
    plan: ReplicationPlan, config: ReplicationConfig, replica: Catalog, aws: AwsClients
) -> GrantChanges | None:
    """Give the replica the plan's grants (revokes and untags first); what was still to do.

    Compared first with what the replica holds now: what an earlier attempt of this commit
    already gave or revoked is not done again (a Hive metastore refuses a grant already held).
    """
    changes = plan.grants
    if changes is None or changes.empty:
        return None
    grants = open_grants(config.replica_catalog, replica, aws)
    held, held_tags = _read(grants, plan.replica_table)
    outstanding = _outstanding(changes, set(held), set(held_tags))
    grants.apply(outstanding)
    return outstanding


def _read(grants: Grants, table: Table) -> tuple[list, list]:
    """The grants and tags ``table`` (and its database and columns) holds."""
    columns = column_names(table)
    return (
        grants.list_grants(table.database, table.name, columns),
        grants.list_tags(table.database, table.name, columns),
    )


def _outstanding(changes: GrantChanges, held: set, held_tags: set) -> GrantChanges:
    """What of ``changes`` the replica does not show yet: grants and tags it lacks, revokes
    and untags of what it still holds (a grant is compared with its grant option)."""
    return replace(
        changes,
        grant=tuple(g for g in changes.grant if g not in held),
        revoke=tuple(g for g in changes.revoke if g in held),
        tag=tuple(t for t in changes.tag if t not in held_tags),
        untag=tuple(t for t in changes.untag if t in held_tags),
    )


def column_names(table: Table) -> Sequence[str]:
    """A table's column names, its partition keys included (a grant may name them)."""
    return [c.name for c in (*table.storage.columns, *table.partition_keys)]
