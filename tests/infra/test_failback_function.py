"""The Failback function in every example environment: deployed with its output, in the VPC
(a Hive metastore is reached there), and a role that may do what failback does and nothing
else (decided by the IAM policy simulator on the resolved template): alter the configured
replica tables and their partitions, write the sources only as the settings' ``failback``
allows, keep its records under the work bucket's ``failover/`` and ``configs/failback/``,
start the replication state machine and read its executions."""

from __future__ import annotations

import pytest

from infra.functions import kebab
from tests.infra.test_dead_letters import actions_of, of_type
from tests.infra.test_failover_function import glue_replicas, operator_function
from tests.infra.test_first_deploy import decide, role_of_function

pytestmark = pytest.mark.infra


def failback_role(template: dict) -> str:
    return role_of_function(template, f"-{kebab('Failback')}")


def statements_of(template: dict, role: str) -> list[dict]:
    return [
        s
        for policy in of_type(template["Resources"], "AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_the_function_is_deployed_in_the_vpc_with_its_output_and_no_retries(deployed):
    function = operator_function(deployed, "Failback")
    assert "FERRY_REPLICATION_STATE_MACHINE_ARN" in function["Environment"]["Variables"]


def test_its_role_alters_the_replica_tables_and_their_partitions_and_no_other(
    deployed, simulator
):
    stack, template, resolved = deployed
    role = failback_role(template)

    def may(action: str, resource: str) -> bool:
        return decide(simulator, template, resolved, role, action, resource) == "Allowed"

    for region, account, database, table in glue_replicas(stack.settings):
        prefix = f"arn:aws:glue:{region}:{account}"
        named = f"{prefix}:table/{database}/{table if table != '*' else 'events_1'}"
        for action in ("glue:UpdateTable", "glue:BatchUpdatePartition", "glue:GetPartitions"):
            assert may(action, named), (action, named)
        for action in ("glue:DeleteTable", "glue:CreateTable", "glue:BatchDeletePartition"):
            assert not may(action, named), (action, named)
        if table != "*":
            assert not may("glue:BatchUpdatePartition", f"{prefix}:table/{database}/other")


def test_its_role_writes_the_sources_only_as_failback_allows(deployed, simulator):
    stack, template, resolved = deployed
    settings = stack.settings
    role = failback_role(template)

    def may(action: str, resource: str) -> bool:
        return decide(simulator, template, resolved, role, action, resource) == "Allowed"

    allowed = settings.failback.write_locations if settings.failback else []
    for location in {loc for r in settings.replications for loc in r.read_locations}:
        bucket, _, prefix = location.removeprefix("s3://").partition("/")
        target = f"arn:aws:s3:::{bucket}/{prefix}orders/ferry-e1/part-0.parquet"
        inside = any(location.startswith(a.replace("*", "")) for a in allowed)
        assert may("s3:PutObject", target) == inside, (location, allowed)
        assert not may("s3:DeleteObject", target)  # its reverse run's Abort removes, not it
    for location in settings.write_locations:  # the replicas' data: read, never written
        bucket, _, prefix = location.removeprefix("s3://").partition("/")
        assert may("s3:GetObject", f"arn:aws:s3:::{bucket}/{prefix}t/e1/part-0.parquet")
        assert not may("s3:DeleteObject", f"arn:aws:s3:::{bucket}/{prefix}t/e1/part-0.parquet")


def test_its_role_starts_only_the_replication_state_machine_and_keeps_its_records(
    deployed, simulator
):
    stack, template, resolved = deployed
    name = stack.settings.name
    role = failback_role(template)

    def may(action: str, resource: str) -> bool:
        return decide(simulator, template, resolved, role, action, resource) == "Allowed"

    machine = resolved.value(stack.resolve(stack.pipeline.replication.state_machine_arn))
    region, account = machine.split(":")[3:5]
    executions = f"arn:aws:states:{region}:{account}:execution"
    assert may("states:StartExecution", machine)
    assert may("states:DescribeExecution", f"{executions}:ferry-{name}-replication:failback-1")
    assert not may("states:StopExecution", f"{executions}:ferry-{name}-replication:failback-1")
    housekeeping = resolved.value(stack.resolve(stack.pipeline.housekeeping.state_machine_arn))
    assert not may("states:StartExecution", housekeeping)
    work = resolved.value(stack.resolve(stack.work.bucket.bucket_arn))
    for key in ("failover/0123abcd.json", "failover/f1-reverse.yml.run.json",
                "configs/failback/f1-reverse.yml"):  # fmt: skip
        assert may("s3:PutObject", f"{work}/{key}") and may("s3:GetObject", f"{work}/{key}")
    assert not may("s3:PutObject", f"{work}/configs/sales-0123.yml")
    assert not may("s3:PutObject", f"{work}/runs/e1/plan.json")
    actions = {a for s in statements_of(template, role) for a in actions_of(s)}
    # It turns no trigger on (the switch does) and tells no one.
    assert not {a for a in actions if a.startswith(("events:", "scheduler:", "sns:"))}
    assert "iam:PassRole" not in actions and "lambda:InvokeFunction" not in actions
