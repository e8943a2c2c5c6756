"""Hive metastore privileges from a source table on one real metastore to its replica on
another: principals mapped, revocations carried, an unmapped principal reported, and a
mapped role the replica does not have refused before anything changes."""

from __future__ import annotations

import dataclasses

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from ferry.catalog.grant_changes import grant_changes
from ferry.catalog.grants import GrantTarget
from ferry.catalog.grants_factory import open_grants
from ferry.catalog.grants_hive import HiveGrants
from ferry.config import CatalogConfig
from ferry.core.errors import GrantError
from ferry.core.model import Column, Database, StorageDescriptor, Table, TableType
from ferry.storage.aws import AwsClients

pytestmark = pytest.mark.integration

COLUMNS = ["id", "amount"]


def orders(database: str) -> Table:
    return Table(
        database=database,
        name="orders",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(
            location=None,
            columns=tuple(Column(c, "bigint") for c in COLUMNS),
            input_format="org.apache.hadoop.mapred.TextInputFormat",
            output_format="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            serde_library="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
        ),
        parameters={"EXTERNAL": "TRUE"},
    )


def create_role(catalog, name: str) -> None:
    role = ttypes.Role(roleName=name, createTime=0, ownerName="admin")
    catalog.call(lambda c: c.create_role(role))


def _privilege(principal: str, target: GrantTarget, privilege: str, grantable: bool):
    """A privilege as Thrift carries it, built here without Ferry's adapter."""
    kind, _, name = principal.partition(":")
    if target.table is None:
        on = ttypes.HiveObjectRef(ttypes.HiveObjectType.DATABASE, target.database)
    elif target.columns:
        on = ttypes.HiveObjectRef(
            ttypes.HiveObjectType.COLUMN, target.database, target.table, None, target.columns[0]
        )
    else:
        on = ttypes.HiveObjectRef(ttypes.HiveObjectType.TABLE, target.database, target.table)
    info = ttypes.PrivilegeGrantInfo(privilege, 0, "hive", ttypes.PrincipalType.USER, grantable)
    return ttypes.HiveObjectPrivilege(on, name, ttypes.PrincipalType._NAMES_TO_VALUES[kind], info)


def grant(catalog, principal: str, target: GrantTarget, privilege: str, grantable=False) -> None:
    """A grant made at the source as HiveServer2 makes it (``GRANT … TO …``)."""
    bag = ttypes.PrivilegeBag([_privilege(principal, target, privilege, grantable)])
    catalog.call(lambda c: c.grant_privileges(bag))


def revoke(catalog, principal: str, target: GrantTarget, privilege: str) -> None:
    bag = ttypes.PrivilegeBag([_privilege(principal, target, privilege, False)])
    catalog.call(lambda c: c.revoke_privileges(bag))


@pytest.fixture
def tables(source_catalog, replica_catalog, unique, tmp_path):
    source, replica = f"src_{unique}", f"dr_{unique}"
    for catalog, database in ((source_catalog, source), (replica_catalog, replica)):
        catalog.create_database(Database(database, location=(tmp_path / database).as_uri()))
        table = orders(database)
        location = (tmp_path / database / "orders").as_uri()
        catalog.create_table(
            dataclasses.replace(table, storage=table.storage.with_location(location))
        )
    return source, replica


def changes(source_catalog, replica_catalog, tables, mappings, **options):
    source, replica = tables
    return grant_changes(
        HiveGrants(source_catalog).list_grants(source, "orders", COLUMNS),
        HiveGrants(replica_catalog).list_grants(replica, "orders", COLUMNS),
        mappings,
        replica,
        "orders",
        **options,
    )


def held(replica_catalog, replica: str, principals: set[str]) -> set[str]:
    return {
        str(g)
        for g in HiveGrants(replica_catalog).list_grants(replica, "orders", COLUMNS)
        if g.principal in principals
    }


def test_privileges_granted_and_revoked_at_the_source_reach_the_replica_mapped(
    source_catalog, replica_catalog, tables, unique
):
    source, replica = tables
    analysts, analysts_dr = f"analysts_{unique}", f"analysts_dr_{unique}"
    create_role(source_catalog, analysts)
    create_role(replica_catalog, analysts_dr)
    table = GrantTarget(source, "orders")
    grant(source_catalog, f"ROLE:{analysts}", table, "SELECT", grantable=True)
    grant(source_catalog, "USER:etl", table, "INSERT")
    grant(source_catalog, "USER:etl", GrantTarget(source), "SELECT")
    grant(source_catalog, "USER:bob", GrantTarget(source, "orders", ("amount",)), "SELECT")
    mappings = {f"ROLE:{analysts}": f"ROLE:{analysts_dr}", "USER:etl": "USER:etl_dr"}
    managed = set(mappings.values())

    found = changes(source_catalog, replica_catalog, tables, mappings)
    assert found.unmapped_principals == ("USER:bob",)
    HiveGrants(replica_catalog).apply(found)

    assert held(replica_catalog, replica, managed) == {
        f"SELECT on {replica}.orders to ROLE:{analysts_dr} with grant option",
        f"INSERT on {replica}.orders to USER:etl_dr",
        f"SELECT on {replica} to USER:etl_dr",
    }
    assert held(replica_catalog, replica, {"USER:bob"}) == set()
    # Converged: a second run grants nothing (Hive refuses a grant already held).
    assert changes(source_catalog, replica_catalog, tables, mappings).empty

    revoke(source_catalog, "USER:etl", table, "INSERT")
    found = changes(source_catalog, replica_catalog, tables, mappings)
    assert [str(g) for g in found.revoke] == [f"INSERT on {replica}.orders to USER:etl_dr"]
    HiveGrants(replica_catalog).apply(found)
    assert held(replica_catalog, replica, managed) == {
        f"SELECT on {replica}.orders to ROLE:{analysts_dr} with grant option",
        f"SELECT on {replica} to USER:etl_dr",
    }


def test_column_privileges_reach_the_replica(source_catalog, replica_catalog, tables):
    source, replica = tables
    grant(source_catalog, "USER:bob", GrantTarget(source, "orders", ("amount",)), "SELECT")
    found = changes(source_catalog, replica_catalog, tables, {"USER:bob": "USER:bob"})
    HiveGrants(replica_catalog).apply(found)
    assert held(replica_catalog, replica, {"USER:bob"}) == {
        f"SELECT on {replica}.orders (amount) to USER:bob"
    }


def test_a_mapped_role_the_replica_does_not_have_changes_nothing(
    source_catalog, replica_catalog, tables, unique
):
    source, replica = tables
    grant(source_catalog, "USER:etl", GrantTarget(source, "orders"), "SELECT")
    grant(source_catalog, "USER:ops", GrantTarget(source, "orders"), "SELECT")
    mappings = {"USER:etl": "USER:etl", "USER:ops": f"ROLE:missing_{unique}"}
    found = changes(source_catalog, replica_catalog, tables, mappings)

    config = CatalogConfig.model_validate(
        {"name": "dr", "hive-metastore-uris": replica_catalog.description}
    )
    replica_grants = open_grants(config, replica_catalog, AwsClients())
    with pytest.raises(GrantError) as checked:
        replica_grants.check(found)  # what Plan can ask before Commit applies
    with pytest.raises(GrantError) as raised:
        replica_grants.apply(found)
    assert str(checked.value) == str(raised.value)

    assert str(raised.value) == (
        f"Hive metastore 'dr' ({replica_catalog.description}): principal ROLE:missing_{unique} "
        "does not exist (mapped in principal-mappings); nothing was granted or revoked"
    )
    assert held(replica_catalog, replica, {"USER:etl"}) == set()


def test_a_grant_option_given_at_the_source_reaches_the_replica(
    source_catalog, replica_catalog, tables
):
    source, replica = tables
    table = GrantTarget(source, "orders")
    grant(source_catalog, "USER:etl", table, "SELECT")
    mappings = {"USER:etl": "USER:etl"}
    HiveGrants(replica_catalog).apply(changes(source_catalog, replica_catalog, tables, mappings))
    revoke(source_catalog, "USER:etl", table, "SELECT")
    grant(source_catalog, "USER:etl", table, "SELECT", grantable=True)

    found = changes(source_catalog, replica_catalog, tables, mappings)
    assert [str(g) for g in found.revoke] == [f"SELECT on {replica}.orders to USER:etl"]
    HiveGrants(replica_catalog).apply(found)

    assert held(replica_catalog, replica, {"USER:etl"}) == {
        f"SELECT on {replica}.orders to USER:etl with grant option"
    }
    assert changes(source_catalog, replica_catalog, tables, mappings).empty
