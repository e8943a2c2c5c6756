"""Grants carried by a replication (``permissions``), through Ferry's own run of the state
machine's definition: Glue → Glue with Lake Formation grants on the emulated Lake Formation,
Hive → Hive with privileges on two real metastores. A grant and a revoke at the source reach
the replica with mapped principals, an unmapped principal is reported and not granted, a
second run changes nothing, a retried commit converges, and bad input fails Plan with one
line and the replica unchanged."""

from __future__ import annotations

import json

import boto3
import pytest

from ferry.catalog.grants import GrantTarget
from ferry.catalog.grants_hive import HiveGrants
from ferry.catalog.grants_lakeformation import LakeFormationGrants, principal_of
from ferry.core import faults
from ferry.core.model import Column, StorageDescriptor, Table, TableType
from tests.e2e.test_cli import failed_line, ferry
from tests.helpers import Replicator, catalog_state, config_document
from tests.integration.test_grants_hive import create_role, grant, revoke
from tests.integration.test_grants_lakeformation import TRUST

pytestmark = pytest.mark.integration

COLUMNS = ["id", "amount"]


def planned_permissions(replicator: Replicator, source_table: str) -> dict:
    """What ``ferry plan`` shows of the replica's grants now."""
    from ferry.states import plan as plan_state

    preview = plan_state.preview(
        replicator.context(), str(replicator.config_path), source_table, probe=False
    )
    return preview["permissions"]


# -- Glue → Glue: Lake Formation ----------------------------------------------------------------


class Lake:
    """A Glue source table, roles to map, and the emulated Lake Formation of both sides."""

    def __init__(self, unique: str, tmp_path, prefix: str = "src"):
        session = boto3.session.Session(region_name="us-east-1")
        self.lf, self.glue, self.iam = (
            session.client(name) for name in ("lakeformation", "glue", "iam")
        )
        identity = session.client("sts").get_caller_identity()
        self.account, self.caller = identity["Account"], principal_of(identity["Arn"])
        self.source_db, self.replica_db = f"{prefix}_{unique}", f"{prefix}_{unique}_dr"
        self.glue.create_database(DatabaseInput={"Name": self.source_db})
        self.glue.create_table(
            DatabaseName=self.source_db,
            TableInput={
                "Name": "orders",
                "TableType": "EXTERNAL_TABLE",
                "Parameters": {"EXTERNAL": "TRUE"},
                "StorageDescriptor": {
                    "Columns": [{"Name": c, "Type": "bigint"} for c in COLUMNS],
                    "Location": (tmp_path / "orders").as_uri(),
                    "InputFormat": "org.apache.hadoop.mapred.TextInputFormat",
                    "OutputFormat": "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
                    "SerdeInfo": {
                        "SerializationLibrary": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
                    },
                },
            },
        )
        self.roles = {}
        for name in ("analyst", "analyst-dr", "contractor"):
            role = f"{name}-{unique}"
            self.iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(TRUST))
            self.roles[name] = f"arn:aws:iam::{self.account}:role/{role}"

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

    def revoke(self, principal: str, resource: dict, permissions) -> None:
        self.lf.revoke_permissions(
            Principal={"DataLakePrincipalIdentifier": principal}, Resource=resource,
            Permissions=list(permissions),
        )  # fmt: skip

    def source_table(self) -> dict:
        return {"Table": {"DatabaseName": self.source_db, "Name": "orders"}}

    def replica_grants(self) -> set[str]:
        grants = LakeFormationGrants(self.lf, self.account, self.caller, self.iam)
        return {str(g) for g in grants.list_grants(self.replica_db, "orders", COLUMNS)}

    def config(self, consumer_topic: str | None, mappings: dict) -> dict:
        listener = {"sns-event-listener": {"topic": consumer_topic}} if consumer_topic else {}
        return {
            "source-catalog": {"name": "glue-source", "glue": {"region": "us-east-1"}},
            "replica-catalog": {"name": "glue-dr", "glue": {"region": "us-east-1"}},
            **listener,
            "permissions": {"lake-formation": {"principal-mappings": mappings}},
            "table-replications": [
                {
                    "source-table": {"database-name": self.source_db, "table-name": "orders"},
                    "replica-table": {"database-name": self.replica_db},
                    "replication-mode": "METADATA_MIRROR",
                }
            ],
        }


@pytest.fixture
def lake(local_runtime, unique, tmp_path):
    lake = Lake(unique, tmp_path)
    lake.admins(lake.caller)  # the replica's role is a data lake administrator
    yield lake
    lake.admins()


def test_glue_grants_and_revokes_reach_the_replica_mapped_and_unmapped_ones_are_reported(
    lake, consumer
):
    topic, messages = consumer
    analyst, analyst_dr = lake.roles["analyst"], lake.roles["analyst-dr"]
    lake.grant(analyst, lake.source_table(), ["SELECT", "INSERT"], grantable=["SELECT"])
    lake.grant(analyst, {"TableWithColumns": {"DatabaseName": lake.source_db, "Name": "orders",
                                              "ColumnNames": ["id"]}}, ["SELECT"])  # fmt: skip
    lake.grant(lake.roles["contractor"], lake.source_table(), ["SELECT"])
    replicator = Replicator(lake.config(topic, {analyst: analyst_dr}))

    [first] = replicator.run()

    assert first.status == "SUCCEEDED", first.error
    table = f"{lake.replica_db}.orders"
    assert lake.replica_grants() == {
        f"SELECT on {table} to {analyst_dr} with grant option",
        f"INSERT on {table} to {analyst_dr}",
        f"SELECT on {table} (id) to {analyst_dr}",
    }
    success = [m["body"] for m in messages() if m["body"]["type"] == "SUCCESS"]
    assert success[0]["permissions"] == {
        "granted": 3, "revoked": 0, "tagged": 0, "untagged": 0,
        "unmappedPrincipals": 1, "unmappedTags": 0,
    }  # fmt: skip

    lake.revoke(analyst, lake.source_table(), ["INSERT"])
    [second] = replicator.run()
    assert second.status == "SUCCEEDED", second.error
    assert lake.replica_grants() == {
        f"SELECT on {table} to {analyst_dr} with grant option",
        f"SELECT on {table} (id) to {analyst_dr}",
    }
    assert planned_permissions(replicator, f"{lake.source_db}.orders")["grant"] == []
    [third] = replicator.run()
    assert third.status == "SUCCEEDED", third.error
    third_success = [m["body"] for m in messages() if m["body"]["type"] == "SUCCESS"][-1]
    assert third_success["permissions"]["granted"] == third_success["permissions"]["revoked"] == 0
    assert lake.replica_grants() == {
        f"SELECT on {table} to {analyst_dr} with grant option",
        f"SELECT on {table} (id) to {analyst_dr}",
    }


def test_glue_mapping_to_a_role_that_does_not_exist_fails_plan_and_changes_nothing(lake):
    analyst = lake.roles["analyst"]
    lake.grant(analyst, lake.source_table(), ["SELECT"])
    missing = f"arn:aws:iam::{lake.account}:role/no-such-role"

    [outcome] = Replicator(lake.config(None, {analyst: missing})).run()

    assert (outcome.status, outcome.error_type) == ("FAILED", "GrantError")
    assert outcome.error == (
        f"lakeformation:us-east-1:{lake.account}: principal {missing} does not exist (mapped "
        "in principal-mappings); nothing was granted or revoked"
    )
    assert not any(
        d["Name"] == lake.replica_db for d in lake.glue.get_databases()["DatabaseList"]
    )


def test_glue_grant_the_replica_role_may_not_give_is_one_line_of_ferry_replicate(
    lake, write_config
):
    analyst, analyst_dr = lake.roles["analyst"], lake.roles["analyst-dr"]
    lake.grant(analyst, lake.source_table(), ["SELECT"])
    lake.admins()  # Ferry's role is no data lake administrator, and holds no grant option

    result = ferry("replicate", str(write_config(lake.config(None, {analyst: analyst_dr}))))

    assert result.returncode == 1, result.stdout + result.stderr
    line = failed_line(result)
    assert "GrantError" in line
    assert f"Ferry may not give SELECT on {lake.replica_db}.orders to {analyst_dr}" in line
    assert not any(
        d["Name"] == lake.replica_db for d in lake.glue.get_databases()["DatabaseList"]
    )


# -- Hive → Hive: privileges --------------------------------------------------------------------


def hive_orders(database: str, location: str) -> Table:
    return Table(
        database=database,
        name="orders",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(
            location=location,
            columns=tuple(Column(c, "bigint") for c in COLUMNS),
            input_format="org.apache.hadoop.mapred.TextInputFormat",
            output_format="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            serde_library="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
        ),
        parameters={"EXTERNAL": "TRUE"},
    )


@pytest.fixture
def hive(local_runtime, source_catalog, replica_catalog, unique, tmp_path):
    """A Hive source table, a role on each side, and the config that maps them."""
    from ferry.core.model import Database

    source_db, replica_db = f"src_{unique}", f"src_{unique}_dr"
    source_catalog.create_database(Database(source_db, location=(tmp_path / "src").as_uri()))
    source_catalog.create_table(hive_orders(source_db, (tmp_path / "src" / "orders").as_uri()))
    analysts, analysts_dr = f"analysts_{unique}", f"analysts_dr_{unique}"
    create_role(source_catalog, analysts)
    create_role(replica_catalog, analysts_dr)

    def config(mappings: dict | None = None) -> dict:
        return config_document(
            local_runtime,
            [
                {
                    "source-table": {"database-name": source_db, "table-name": "orders"},
                    "replica-table": {"database-name": replica_db},
                    "replication-mode": "METADATA_MIRROR",
                }
            ],
            permissions={
                "hive-privileges": {
                    "principal-mappings": mappings
                    or {f"ROLE:{analysts}": f"ROLE:{analysts_dr}", "USER:etl": "USER:etl_dr"}
                }
            },
        )

    def held() -> set[str]:
        return {
            str(g)
            for g in HiveGrants(replica_catalog).list_grants(replica_db, "orders", COLUMNS)
            if g.principal in (f"ROLE:{analysts_dr}", "USER:etl_dr", "USER:stranger")
        }

    return {
        "source": GrantTarget(source_db, "orders"),
        "replica_db": replica_db,
        "analysts": f"ROLE:{analysts}",
        "analysts_dr": f"ROLE:{analysts_dr}",
        "config": config,
        "held": held,
    }


def test_hive_privileges_and_revokes_reach_the_replica_and_a_retried_commit_converges(
    hive, source_catalog
):
    table, replica = hive["source"], f"{hive['replica_db']}.orders"
    grant(source_catalog, hive["analysts"], table, "SELECT", grantable=True)
    grant(source_catalog, "USER:etl", table, "INSERT")
    grant(source_catalog, "USER:stranger", table, "SELECT")
    replicator = Replicator(hive["config"]())

    # Commit dies after it gave the grants (a Lambda timeout): its retry must converge,
    # though a Hive metastore refuses a grant already held.
    with faults.armed(faults.Fault("commit.grants-applied", error=faults.LAMBDA_TIMEOUT)):
        [first] = replicator.run()

    assert first.status == "SUCCEEDED", first.error
    assert hive["held"]() == {
        f"SELECT on {replica} to {hive['analysts_dr']} with grant option",
        f"INSERT on {replica} to USER:etl_dr",
    }
    revoke(source_catalog, "USER:etl", table, "INSERT")
    [second] = replicator.run()
    assert second.status == "SUCCEEDED", second.error
    assert hive["held"]() == {f"SELECT on {replica} to {hive['analysts_dr']} with grant option"}
    assert planned_permissions(replicator, f"{table.database}.orders") == {
        "grant": [], "revoke": [], "tag": [], "untag": [],
        "unmappedPrincipals": ["USER:stranger"], "unmappedTags": [],
    }  # fmt: skip
    [third] = replicator.run()  # a Hive metastore refuses a grant already held
    assert third.status == "SUCCEEDED", third.error
    assert hive["held"]() == {f"SELECT on {replica} to {hive['analysts_dr']} with grant option"}


def test_hive_mapping_to_a_role_the_replica_lacks_is_one_line_of_ferry_replicate(
    hive, source_catalog, replica_catalog, write_config
):
    grant(source_catalog, hive["analysts"], hive["source"], "SELECT")
    before = catalog_state(replica_catalog, hive["replica_db"], ["orders"])
    config = write_config(hive["config"]({hive["analysts"]: "ROLE:no_such_role"}))

    result = ferry("replicate", str(config))

    assert result.returncode == 1, result.stdout + result.stderr
    line = failed_line(result)
    assert "GrantError" in line and "principal ROLE:no_such_role does not exist" in line
    assert catalog_state(replica_catalog, hive["replica_db"], ["orders"]) == before
