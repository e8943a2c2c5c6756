"""The grants port on a Hive metastore: privileges as SQL-standard authorization keeps them.

Reads with ``list_privileges`` and no principal, which returns every principal's grants on a
database or a table, and one call per column for column grants; writes with
``revoke_privileges`` and ``grant_privileges`` (each takes a bag of grants in one call).
A Hive 2.3 metastore refuses to grant a privilege already held ("… is already granted"),
which is why changes are always computed against what the replica holds
(``ferry.catalog.grant_changes``).

The metastore itself authorizes no grant (HiveServer2 does, before it calls the metastore),
so every grant may be given; of principals, only roles exist as objects of the metastore:
a mapped ``ROLE:`` that the replica's metastore does not have is refused before any change.
Partition-level grants are not read.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from hmsclient.genthrift.hive_metastore import ttypes

from ferry.catalog.grants import Grant, GrantChanges, Grants, GrantTarget
from ferry.catalog.hive import HiveMetastoreCatalog

_TYPES = ttypes.PrincipalType._VALUES_TO_NAMES
_TYPE_OF = ttypes.PrincipalType._NAMES_TO_VALUES
#: Who a grant is written as when the source names no grantor.
DEFAULT_GRANTOR = "USER:ferry"


class HiveGrants(Grants):
    """The privileges of the Hive metastore behind ``catalog``."""

    def __init__(self, catalog: HiveMetastoreCatalog):
        self.catalog = catalog
        self.description = f"Hive metastore '{catalog.name}' ({catalog.description})"

    def list_grants(self, database: str, table: str, columns: Sequence[str]) -> list[Grant]:
        objects = [
            ttypes.HiveObjectRef(ttypes.HiveObjectType.DATABASE, database),
            ttypes.HiveObjectRef(ttypes.HiveObjectType.TABLE, database, table),
        ] + [
            ttypes.HiveObjectRef(ttypes.HiveObjectType.COLUMN, database, table, None, column)
            for column in columns
        ]
        grants = []
        for hive_object in objects:
            rows = self.catalog.call(lambda c, o=hive_object: c.list_privileges(None, None, o))
            grants.extend(_grant_of(row) for row in rows or [])
        return grants

    def missing_principals(self, principals: Iterable[str]) -> list[str]:
        roles = None
        missing = []
        for principal in principals:
            kind, _, name = principal.partition(":")
            if kind != "ROLE":
                continue  # users and groups are the authenticator's, not the metastore's
            if roles is None:
                roles = {role.lower() for role in self.catalog.call(lambda c: c.get_role_names())}
            if name.lower() not in roles:
                missing.append(principal)
        return missing

    def not_grantable(self, grants: Sequence[Grant]) -> list[Grant]:
        return []  # the metastore authorizes no grant itself

    def _write(self, changes: GrantChanges) -> None:
        if changes.revoke:
            bag = ttypes.PrivilegeBag([_privilege_of(g) for g in changes.revoke])
            self.catalog.call(lambda c: c.revoke_privileges(bag))
        if changes.grant:
            bag = ttypes.PrivilegeBag([_privilege_of(g) for g in changes.grant])
            self.catalog.call(lambda c: c.grant_privileges(bag))


def _grant_of(row: ttypes.HiveObjectPrivilege) -> Grant:
    hive_object, info = row.hiveObject, row.grantInfo
    if hive_object.objectType == ttypes.HiveObjectType.DATABASE:
        target = GrantTarget(hive_object.dbName.lower())
    elif hive_object.objectType == ttypes.HiveObjectType.COLUMN:
        target = GrantTarget(
            hive_object.dbName.lower(), hive_object.objectName.lower(),
            (hive_object.columnName.lower(),),
        )  # fmt: skip
    else:
        target = GrantTarget(hive_object.dbName.lower(), hive_object.objectName.lower())
    grantor = f"{_TYPES[info.grantorType]}:{info.grantor}" if info.grantor else None
    return Grant(
        f"{_TYPES[row.principalType]}:{row.principalName}",
        target,
        info.privilege.upper(),
        bool(info.grantOption),
        grantor,
    )


def _privilege_of(grant: Grant) -> ttypes.HiveObjectPrivilege:
    target = grant.target
    if target.table is None:
        hive_object = ttypes.HiveObjectRef(ttypes.HiveObjectType.DATABASE, target.database)
    elif target.columns:
        hive_object = ttypes.HiveObjectRef(
            ttypes.HiveObjectType.COLUMN, target.database, target.table, None, target.columns[0]
        )
    else:
        hive_object = ttypes.HiveObjectRef(
            ttypes.HiveObjectType.TABLE, target.database, target.table
        )
    kind, _, name = grant.principal.partition(":")
    grantor_kind, _, grantor = (grant.grantor or DEFAULT_GRANTOR).partition(":")
    info = ttypes.PrivilegeGrantInfo(
        grant.privilege, int(time.time()), grantor, _TYPE_OF[grantor_kind], grant.grantable
    )
    return ttypes.HiveObjectPrivilege(hive_object, name, _TYPE_OF[kind], info)
