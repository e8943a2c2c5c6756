"""Grants through the deployed pipeline: the state machine on the emulator runs Plan and
Commit under their deployed roles, whose Lake Formation and IAM actions the emulator
enforces, so a grant reaching the replica proves the roles may do exactly what it takes."""

from __future__ import annotations

import boto3
import pytest

from ferry.catalog.grants_lakeformation import LakeFormationGrants
from tests.integration.test_replicate_grants import COLUMNS, Lake

pytestmark = pytest.mark.e2e


def function_role(lambda_client, suffix: str) -> str:
    """The deployed role of the function whose name ends with ``suffix``."""
    pages = lambda_client.get_paginator("list_functions").paginate()
    [role] = {
        f["Role"] for page in pages for f in page["Functions"]
        if f["FunctionName"].endswith(suffix)
    }  # fmt: skip
    return role


@pytest.fixture
def lake(local_runtime, pipeline, unique, tmp_path):
    # The deployed roles read configured Glue databases only (ad-hoc-access: sales*).
    lake = Lake(f"grants_{unique}", tmp_path, prefix="sales")
    functions = boto3.client("lambda", region_name="us-east-1")
    plan, commit = (function_role(functions, s) for s in ("-plan", "-commit"))
    # The replica's roles are data lake administrators, made so outside Ferry (as on AWS).
    lake.admins(lake.caller, plan, commit)
    yield lake
    lake.admins()


def test_a_grant_and_a_revoke_reach_the_replica_through_the_deployed_roles(
    lake, run, consumer
):
    topic, messages = consumer
    analyst, analyst_dr = lake.roles["analyst"], lake.roles["analyst-dr"]
    lake.grant(analyst, lake.source_table(), ["SELECT", "INSERT"])
    lake.grant(lake.roles["contractor"], lake.source_table(), ["SELECT"])
    config = lake.config(topic, {analyst: analyst_dr})

    first = run(config)

    assert first.status == "SUCCEEDED", first
    table = f"{lake.replica_db}.orders"
    reader = LakeFormationGrants(lake.lf, lake.account, lake.caller, lake.iam)
    held = {str(g) for g in reader.list_grants(lake.replica_db, "orders", COLUMNS)}
    assert held == {f"SELECT on {table} to {analyst_dr}", f"INSERT on {table} to {analyst_dr}"}
    [success] = [m["body"] for m in messages() if m["body"]["type"] == "SUCCESS"]
    assert success["permissions"]["granted"] == 2
    assert success["permissions"]["unmappedPrincipals"] == 1

    lake.revoke(analyst, lake.source_table(), ["INSERT"])
    second = run(config)

    assert second.status == "SUCCEEDED", second
    held = {str(g) for g in reader.list_grants(lake.replica_db, "orders", COLUMNS)}
    assert held == {f"SELECT on {table} to {analyst_dr}"}
