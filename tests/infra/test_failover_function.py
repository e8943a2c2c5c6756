"""The Failover function in every example environment: deployed with its output, in the VPC
(a Hive replica metastore is reached there), and a role that may read and promote exactly
the configured replica tables, list the write locations and keep baselines under the work
bucket's ``failover/``, and nothing else (decided by the IAM policy simulator on the resolved
template)."""

from __future__ import annotations

import pytest

from infra.functions import kebab
from tests.infra.test_dead_letters import actions_of, of_type
from tests.infra.test_first_deploy import decide, role_of_function

pytestmark = pytest.mark.infra


def failover_role(template: dict) -> str:
    return role_of_function(template, f"-{kebab('Failover')}")


def glue_replicas(settings) -> list[tuple[str, str, str, str]]:
    """(region, account, database, table) of each deployed config's replica in this account's
    Glue (a pattern's table: ``*``)."""
    found = []
    for config in settings.configs.values():
        catalog = config.replica_catalog
        if catalog.glue is None or catalog.assume_role is not None:
            continue
        for replication in config.table_replications:
            found.append(
                (
                    catalog.glue.region or settings.region,
                    catalog.glue.catalog_id or settings.account,
                    replication.replica_database,
                    replication.replica_table_name or "*",
                )
            )
    return found


def operator_function(deployed, name: str) -> dict:
    """The operator's function ``name`` (``Failover``, ``Failback``): deployed with its
    output, in the VPC when the environment has one, its handler's, 15 minutes, and invoked
    synchronously only (no asynchronous retries); its properties."""
    stack, template, _ = deployed
    function_name = f"ferry-{stack.settings.name}-{kebab(name)}"
    [function] = [
        f["Properties"]
        for f in of_type(template["Resources"], "AWS::Lambda::Function").values()
        if f["Properties"]["FunctionName"] == function_name
    ]
    assert function["Handler"] == f"lambdas.{name.lower()}.handler"
    assert function["Timeout"] == 900
    assert ("VpcConfig" in function) == (stack.settings.network is not None)
    assert f"{name}FunctionArn" in template["Outputs"]
    configs = of_type(template["Resources"], "AWS::Lambda::EventInvokeConfig").values()
    assert not [c for c in configs if f"-{kebab(name)}\"" in str(c["Properties"]["FunctionName"])]
    return function


def test_the_function_is_deployed_in_the_vpc_with_its_output_and_no_retries(deployed):
    operator_function(deployed, "Failover")


def test_its_role_promotes_the_configured_replica_tables_and_no_other(deployed, simulator):
    stack, template, resolved = deployed
    role = failover_role(template)

    def may(action: str, resource: str) -> bool:
        return decide(simulator, template, resolved, role, action, resource) == "Allowed"

    replicas = glue_replicas(stack.settings)
    assert replicas, "the example environments replicate into Glue"
    for region, account, database, table in replicas:
        prefix = f"arn:aws:glue:{region}:{account}"
        named = f"{prefix}:table/{database}/{table if table != '*' else 'events_1'}"
        for action in ("glue:GetTable", "glue:GetPartitions", "glue:UpdateTable"):
            assert may(action, named), (action, named)
        assert may("glue:UpdateTable", f"{prefix}:database/{database}")
        assert may("glue:UpdateTable", f"{prefix}:catalog")
        for action in ("glue:DeleteTable", "glue:CreateTable", "glue:BatchDeletePartition"):
            assert not may(action, named), (action, named)
        if table != "*":  # another table of the replica database is not the config's
            assert not may("glue:UpdateTable", f"{prefix}:table/{database}/not_replicated")
        assert not may("glue:UpdateTable", f"{prefix}:table/{database}_other/{table}")


def test_its_role_lists_the_replicas_and_keeps_baselines_and_nothing_else(deployed, simulator):
    stack, template, resolved = deployed
    settings = stack.settings
    role = failover_role(template)

    def may(action: str, resource: str, context: dict | None = None) -> bool:
        return decide(simulator, template, resolved, role, action, resource, context) == (
            "Allowed"
        )

    for location in settings.write_locations:
        bucket, _, prefix = location.removeprefix("s3://").partition("/")
        listing = {"s3:prefix": f"{prefix}orders/dt=1/"}
        assert may("s3:ListBucket", f"arn:aws:s3:::{bucket}", listing), location
        assert may("s3:GetObject", f"arn:aws:s3:::{bucket}/{prefix}t/metadata/1.metadata.json")
        assert not may("s3:GetObject", f"arn:aws:s3:::{bucket}/{prefix}t/e1/part-0.parquet")
        assert not may("s3:PutObject", f"arn:aws:s3:::{bucket}/{prefix}t/e1/part-0.parquet")
        assert not may("s3:DeleteObject", f"arn:aws:s3:::{bucket}/{prefix}t/e1/part-0.parquet")
    work = resolved.value(stack.resolve(stack.work.bucket.bucket_arn))
    assert may("s3:PutObject", f"{work}/failover/0123abcd.json")
    assert may("s3:GetObject", f"{work}/failover/0123abcd.json")
    assert not may("s3:PutObject", f"{work}/runs/e1/plan.json")
    assert not may("s3:GetObject", f"{work}/configs/sales-0123.yml")
    for location in {loc for r in settings.replications for loc in r.read_locations}:
        bucket, _, prefix = location.removeprefix("s3://").partition("/")
        assert not may("s3:GetObject", f"arn:aws:s3:::{bucket}/{prefix}orders/part-0")
        assert not may("s3:ListBucket", f"arn:aws:s3:::{bucket}", {"s3:prefix": prefix})
    statements = [
        s
        for policy in of_type(template["Resources"], "AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    actions = {a for s in statements for a in actions_of(s)}
    # It stops nothing and starts nothing (the switch does), writes no state, tells no one.
    assert not {
        a for a in actions if a.startswith(("states:", "events:", "scheduler:", "dynamodb:", "sns:"))
    }
    assert not {a for a in actions if a.startswith("glue:")} - {
        "glue:GetDatabase", "glue:GetTable", "glue:GetPartitions", "glue:UpdateTable",
    }  # fmt: skip
    assert "iam:PassRole" not in actions and "lambda:InvokeFunction" not in actions
