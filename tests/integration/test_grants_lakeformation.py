"""Lake Formation grants and LF-tags from a source table to its replica, through the emulated
Lake Formation, with principals and tags mapped, revocations carried, an unmapped principal
reported, and bad input refused before anything changes."""

from __future__ import annotations

import json

import boto3
import pytest

from ferry.catalog.factory import open_catalog
from ferry.catalog.grant_changes import grant_changes
from ferry.catalog.grants import Grant, GrantTarget, ResourceTag
from ferry.catalog.grants_factory import open_grants
from ferry.catalog.grants_lakeformation import LakeFormationGrants, principal_of
from ferry.config import CatalogConfig
from ferry.config.permissions import TagMapping
from ferry.core.errors import CatalogError, GrantError
from ferry.storage.aws import AwsClients

pytestmark = pytest.mark.integration

COLUMNS = ["id", "amount"]


class Lake:
    """Both sides' tables in the emulated Glue catalog, and roles to grant to."""

    def __init__(self, session: boto3.session.Session, unique: str):
        self.lf, self.glue, self.iam = (
            session.client(name) for name in ("lakeformation", "glue", "iam")
        )
        identity = session.client("sts").get_caller_identity()
        self.account, self.caller = identity["Account"], principal_of(identity["Arn"])
        self.source_db, self.replica_db = f"src_{unique}", f"dr_{unique}"
        for database in (self.source_db, self.replica_db):
            self.glue.create_database(DatabaseInput={"Name": database})
            self.glue.create_table(
                DatabaseName=database,
                TableInput={
                    "Name": "orders",
                    "StorageDescriptor": {
                        "Columns": [{"Name": c, "Type": "bigint"} for c in COLUMNS]
                    },
                },
            )
        self.roles = {}
        for name in ("analyst", "analyst-dr", "contractor"):
            role = f"{name}-{unique}"
            self.iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(TRUST))
            self.roles[name] = f"arn:aws:iam::{self.account}:role/{role}"
        self.tag = f"team-{unique}"
        self.lf.create_lf_tag(TagKey=self.tag, TagValues=["finance", "sales"])

    def admins(self, *principals: str) -> None:
        self.lf.put_data_lake_settings(
            DataLakeSettings={
                "DataLakeAdmins": [{"DataLakePrincipalIdentifier": p} for p in principals]
            }
        )

    def grant(self, principal: str, resource: dict, permissions, grantable=()) -> None:
        self.lf.grant_permissions(
            Principal={"DataLakePrincipalIdentifier": principal}, Resource=resource,
            Permissions=list(permissions), PermissionsWithGrantOption=list(grantable),
        )  # fmt: skip

    def table(self, database: str) -> dict:
        return {"Table": {"DatabaseName": database, "Name": "orders"}}

    def grants(self, caller: str | None = None, session=None) -> LakeFormationGrants:
        lf = self.lf if session is None else session.client("lakeformation")
        return LakeFormationGrants(lf, self.account, caller or self.caller, self.iam)

    def changes(self, mappings: dict, **options):
        reader = self.grants()
        return grant_changes(
            reader.list_grants(self.source_db, "orders", COLUMNS),
            reader.list_grants(self.replica_db, "orders", COLUMNS),
            mappings,
            self.replica_db,
            "orders",
            source_tags=reader.list_tags(self.source_db, "orders", COLUMNS),
            replica_tags=reader.list_tags(self.replica_db, "orders", COLUMNS),
            tag_mappings={self.tag: TagMapping(key=self.tag)},
            **options,
        )

    def replica_grants(self, principal: str) -> set[str]:
        return {
            str(g)
            for g in self.grants().list_grants(self.replica_db, "orders", COLUMNS)
            if g.principal == principal
        }


TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
}


@pytest.fixture
def lake(local_runtime, unique):
    lake = Lake(boto3.session.Session(region_name="us-east-1"), unique)
    lake.admins(lake.caller)
    yield lake
    lake.admins()


def test_a_grant_and_a_revoke_at_the_source_reach_the_replica_with_mapped_principals(lake):
    analyst, analyst_dr = lake.roles["analyst"], lake.roles["analyst-dr"]
    source_table = lake.table(lake.source_db)
    lake.grant(analyst, source_table, ["SELECT", "INSERT"], grantable=["SELECT"])
    lake.grant(analyst, {"TableWithColumns": {"DatabaseName": lake.source_db, "Name": "orders",
                                              "ColumnNames": ["id"]}}, ["SELECT"])  # fmt: skip
    lake.grant(analyst, {"Database": {"Name": lake.source_db}}, ["DESCRIBE"])
    lake.grant(lake.roles["contractor"], source_table, ["SELECT"])
    # A grant on every table of the database is the database's, not the table's: not read.
    every_table = {"Table": {"DatabaseName": lake.source_db, "TableWildcard": {}}}
    lake.grant(analyst, every_table, ["ALTER"])
    tagged = lake.lf.add_lf_tags_to_resource(
        Resource=source_table, LFTags=[{"TagKey": lake.tag, "TagValues": ["finance"]}]
    )
    assert tagged["Failures"] == []

    changes = lake.changes({analyst: analyst_dr})
    assert changes.unmapped_principals == (lake.roles["contractor"],)
    lake.grants().apply(changes)

    replica = f"{lake.replica_db}.orders"
    assert lake.replica_grants(analyst_dr) == {
        f"DESCRIBE on {lake.replica_db} to {analyst_dr}",
        f"INSERT on {replica} to {analyst_dr}",
        f"SELECT on {replica} to {analyst_dr} with grant option",
        f"SELECT on {replica} (id) to {analyst_dr}",
    }
    assert lake.replica_grants(lake.roles["contractor"]) == set()
    replica_tags = lake.grants().list_tags(lake.replica_db, "orders", COLUMNS)
    assert replica_tags == [
        ResourceTag(GrantTarget(lake.replica_db, "orders"), lake.tag, "finance")
    ]
    assert lake.changes({analyst: analyst_dr}).empty  # converged: a second run changes nothing

    lake.lf.revoke_permissions(
        Principal={"DataLakePrincipalIdentifier": analyst}, Resource=source_table,
        Permissions=["INSERT"],
    )  # fmt: skip
    lake.lf.remove_lf_tags_from_resource(
        Resource=source_table, LFTags=[{"TagKey": lake.tag, "TagValues": ["finance"]}]
    )
    changes = lake.changes({analyst: analyst_dr})
    assert changes.revoke == (Grant(analyst_dr, GrantTarget(lake.replica_db, "orders"), "INSERT"),)
    lake.grants().apply(changes)
    assert f"INSERT on {replica} to {analyst_dr}" not in lake.replica_grants(analyst_dr)
    assert lake.grants().list_tags(lake.replica_db, "orders", COLUMNS) == []


def test_a_mapping_to_a_principal_that_does_not_exist_changes_nothing(lake):
    lake.grant(lake.roles["analyst"], lake.table(lake.source_db), ["SELECT"])
    missing = f"arn:aws:iam::{lake.account}:role/nobody-{lake.source_db}"
    changes = lake.changes({lake.roles["analyst"]: missing})

    # The replica's side as a run opens it from the config: its clients, its caller.
    config = CatalogConfig.model_validate({"name": "dr", "glue": {"region": "us-east-1"}})
    aws = AwsClients()
    replica = open_grants(config, open_catalog(config, aws), aws)
    assert (replica.catalog_id, replica.caller) == (lake.account, lake.caller)

    with pytest.raises(GrantError) as raised:
        replica.apply(changes)

    assert str(raised.value) == (
        f"lakeformation:us-east-1:{lake.account}: principal {missing} does not exist "
        "(mapped in principal-mappings); nothing was granted or revoked"
    )
    assert lake.grants().list_grants(lake.replica_db, "orders", COLUMNS) == []


def test_a_grant_the_ferry_role_may_not_give_changes_nothing(lake):
    analyst, analyst_dr = lake.roles["analyst"], lake.roles["analyst-dr"]
    lake.grant(analyst, lake.table(lake.source_db), ["SELECT", "ALTER"])
    lake.grant(analyst_dr, lake.table(lake.replica_db), ["DESCRIBE"])  # to be revoked
    lake.admins("arn:aws:iam::210987654321:role/someone-else")
    # The caller may pass on SELECT and DESCRIBE, not ALTER: no grant, and no revoke, is made.
    held = ["SELECT", "DESCRIBE"]
    lake.grant(lake.caller, lake.table(lake.replica_db), held, grantable=held)
    changes = lake.changes({analyst: analyst_dr})

    with pytest.raises(GrantError) as raised:
        lake.grants().apply(changes)

    assert str(raised.value) == (
        f"lakeformation:us-east-1:{lake.account}: Ferry may not give ALTER on "
        f"{lake.replica_db}.orders to {analyst_dr} (it is neither an administrator nor holds "
        "the grant option); nothing was granted or revoked"
    )
    assert lake.replica_grants(analyst_dr) == {
        f"DESCRIBE on {lake.replica_db}.orders to {analyst_dr}"
    }


def test_a_tag_value_the_tag_does_not_have_is_refused(lake):
    answer = lake.lf.add_lf_tags_to_resource(
        Resource=lake.table(lake.replica_db), LFTags=[{"TagKey": lake.tag, "TagValues": ["zzz"]}]
    )
    assert [f["Error"]["ErrorCode"] for f in answer["Failures"]] == ["EntityNotFoundException"]
    assert lake.grants().list_tags(lake.replica_db, "orders", COLUMNS) == []


def _role_session(lake: Lake, name: str, actions: list[str]) -> boto3.session.Session:
    """A session of a new role allowed ``actions`` only, assumed through the emulator's STS
    (the emulator enforces IAM on the sessions it gave out)."""
    lake.iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(TRUST))
    policy = {"Version": "2012-10-17",
              "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}  # fmt: skip
    lake.iam.put_role_policy(RoleName=name, PolicyName="grants", PolicyDocument=json.dumps(policy))
    credentials = boto3.client("sts", region_name="us-east-1").assume_role(
        RoleArn=f"arn:aws:iam::{lake.account}:role/{name}", RoleSessionName="ferry"
    )["Credentials"]
    return boto3.session.Session(
        region_name="us-east-1",
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )


READ = ["lakeformation:ListPermissions", "lakeformation:GetDataLakeSettings",
        "lakeformation:GetResourceLFTags"]  # fmt: skip
GRANT = ["lakeformation:BatchGrantPermissions", "lakeformation:BatchRevokePermissions",
         "glue:GetTable", "glue:GetDatabase"]  # fmt: skip


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "denied"])
def test_the_role_that_grants_needs_lake_formations_and_glues_iam_actions(lake, allowed):
    analyst, analyst_dr = lake.roles["analyst"], lake.roles["analyst-dr"]
    lake.grant(analyst, lake.table(lake.source_db), ["SELECT"])
    name = f"ferry-grants-{lake.source_db}"
    actions = READ + (GRANT if allowed else [a for a in GRANT if a != "glue:GetTable"])
    session = _role_session(lake, name, actions)
    role = principal_of(session.client("sts").get_caller_identity()["Arn"])
    assert role == f"arn:aws:iam::{lake.account}:role/{name}"
    lake.admins(role)
    replica = lake.grants(caller=role, session=session)

    changes = lake.changes({analyst: analyst_dr})
    if allowed:
        replica.apply(changes)
        assert lake.replica_grants(analyst_dr) == {
            f"SELECT on {lake.replica_db}.orders to {analyst_dr}"
        }
    else:
        with pytest.raises(CatalogError, match="BatchGrantPermissions refused: AccessDenied"):
            replica.apply(changes)
        assert lake.replica_grants(analyst_dr) == set()


def test_lake_formation_refuses_a_role_a_grant_it_may_not_give_as_ferry_does_first(lake):
    analyst, analyst_dr = lake.roles["analyst"], lake.roles["analyst-dr"]
    name = f"ferry-grantor-{lake.source_db}"
    session = _role_session(lake, name, READ + GRANT + ["lakeformation:GrantPermissions"])
    role = f"arn:aws:iam::{lake.account}:role/{name}"
    lake.admins("arn:aws:iam::210987654321:role/someone-else")
    # The role may pass on SELECT on the replica table (and so on its columns), not INSERT.
    lake.grant(role, lake.table(lake.replica_db), ["SELECT"], grantable=["SELECT"])
    as_role = session.client("lakeformation")
    principal = {"DataLakePrincipalIdentifier": analyst_dr}
    columns = {"TableWithColumns": {"DatabaseName": lake.replica_db, "Name": "orders",
                                    "ColumnNames": ["id"]}}  # fmt: skip

    answer = as_role.batch_grant_permissions(Entries=[
        {"Id": "0", "Principal": principal, "Resource": columns, "Permissions": ["SELECT"]},
        {"Id": "1", "Principal": principal, "Resource": lake.table(lake.replica_db),
         "Permissions": ["INSERT"]},
    ])  # fmt: skip
    assert [(f["RequestEntry"]["Id"], f["Error"]["ErrorCode"]) for f in answer["Failures"]] == [
        ("1", "AccessDeniedException")
    ]
    with pytest.raises(as_role.exceptions.AccessDeniedException):
        as_role.grant_permissions(
            Principal=principal, Resource=lake.table(lake.replica_db), Permissions=["INSERT"]
        )
    assert lake.replica_grants(analyst_dr) == {
        f"SELECT on {lake.replica_db}.orders (id) to {analyst_dr}"
    }

    lake.grant(analyst, lake.table(lake.source_db), ["INSERT"])
    with pytest.raises(GrantError, match=f"Ferry may not give INSERT on {lake.replica_db}.orders"):
        lake.grants(caller=role, session=session).apply(lake.changes({analyst: analyst_dr}))
    assert lake.replica_grants(analyst_dr) == {
        f"SELECT on {lake.replica_db}.orders (id) to {analyst_dr}"
    }


def test_grants_reach_a_replica_in_another_account_with_its_own_principals(lake, unique):
    from ferry.local.accounts import account_clients

    dr_account = "222222222222"
    client = account_clients(dr_account, "us-east-1", lake.lf.meta.endpoint_url)
    glue, iam, lf, sts = (client(name) for name in ("glue", "iam", "lakeformation", "sts"))
    database = f"dr_{unique}_x"
    glue.create_database(DatabaseInput={"Name": database})
    glue.create_table(DatabaseName=database, TableInput={"Name": "orders"})
    iam.create_role(RoleName=f"analyst-{unique}", AssumeRolePolicyDocument=json.dumps(TRUST))
    analyst_dr = f"arn:aws:iam::{dr_account}:role/analyst-{unique}"
    caller = principal_of(sts.get_caller_identity()["Arn"])
    lf.put_data_lake_settings(
        DataLakeSettings={"DataLakeAdmins": [{"DataLakePrincipalIdentifier": caller}]}
    )
    replica = LakeFormationGrants(lf, dr_account, caller, iam)
    analyst = lake.roles["analyst"]
    lake.grant(analyst, lake.table(lake.source_db), ["SELECT", "DESCRIBE"])
    lake.grant(analyst, {"Database": {"Name": lake.source_db}}, ["DESCRIBE"])

    def changes():
        return grant_changes(
            lake.grants().list_grants(lake.source_db, "orders", COLUMNS),
            replica.list_grants(database, "orders", COLUMNS),
            {analyst: analyst_dr},
            database,
            "orders",
        )

    replica.apply(changes())
    assert {str(g) for g in replica.list_grants(database, "orders", COLUMNS)} == {
        f"DESCRIBE on {database} to {analyst_dr}",
        f"DESCRIBE on {database}.orders to {analyst_dr}",
        f"SELECT on {database}.orders to {analyst_dr}",
    }
    assert lake.replica_grants(analyst_dr) == set()  # the source account's replica db: untouched

    lake.lf.revoke_permissions(
        Principal={"DataLakePrincipalIdentifier": analyst}, Resource=lake.table(lake.source_db),
        Permissions=["SELECT"],
    )  # fmt: skip
    replica.apply(changes())
    assert {str(g) for g in replica.list_grants(database, "orders", COLUMNS)} == {
        f"DESCRIBE on {database} to {analyst_dr}",
        f"DESCRIBE on {database}.orders to {analyst_dr}",
    }
    assert changes().empty
