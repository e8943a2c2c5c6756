"""The roles of Plan and Commit in every example environment may do what carrying column
statistics takes in a Glue replica catalog (decided by the IAM policy simulator on the
resolved template): Plan reads a replica table's and its partitions' statistics, Commit
writes and deletes them; Plan writes none."""

from __future__ import annotations

import pytest

from infra.functions import kebab
from tests.infra.test_failover_function import glue_replicas
from tests.infra.test_first_deploy import decide, role_of_function

pytestmark = pytest.mark.infra

READ = (
    "glue:GetColumnStatisticsForTable", "glue:GetColumnStatisticsForPartition",
    "glue:GetTable", "glue:GetPartition",
)  # fmt: skip
WRITE = (
    "glue:UpdateColumnStatisticsForTable", "glue:UpdateColumnStatisticsForPartition",
    "glue:DeleteColumnStatisticsForTable", "glue:DeleteColumnStatisticsForPartition",
    "glue:UpdateTable", "glue:UpdatePartition",
)  # fmt: skip


def test_plan_reads_and_commit_writes_the_replicas_column_statistics(deployed, simulator):
    stack, template, resolved = deployed
    plan = role_of_function(template, f"-{kebab('Plan')}")
    commit = role_of_function(template, f"-{kebab('Commit')}")
    replicas = glue_replicas(stack.settings)

    for region, account, database, table in replicas:
        named = f"arn:aws:glue:{region}:{account}:table/{database}/{table.replace('*', 'events_1')}"
        for action in READ:
            for role in (plan, commit):
                assert decide(simulator, template, resolved, role, action, named) == "Allowed", (
                    role, action, named,
                )  # fmt: skip
        for action in WRITE:
            assert decide(simulator, template, resolved, commit, action, named) == "Allowed", (
                action, named,
            )  # fmt: skip
            assert decide(simulator, template, resolved, plan, action, named) != "Allowed", (
                action, named,
            )  # fmt: skip
