"""The copy budget as a deploy creates it, read from the templates: the Claim copy slot
function's environment and role (evaluated by the IAM policy simulator the local runtime
uses, as ``test_catalog_events.py``), and the dashboard's widgets by priority."""

from __future__ import annotations

import json

import pytest

from ferry.copying.budget.dynamodb import BUDGET_KEY
from tests.infra.test_first_deploy import decide, of_type, role_of_function

pytestmark = pytest.mark.infra


def test_every_function_has_the_environments_copy_budget(deployed):
    stack, template, resolved = deployed
    expected = stack.settings.copy_budget.environment()
    for function in of_type(template, "AWS::Lambda::Function").values():
        variables = resolved.value(function["Properties"]["Environment"]["Variables"])
        # Claim copy slot takes a slot; Commit and Abort (and Summarize's aborts) free it.
        assert {k: variables.get(k) for k in expected} == expected


def test_claim_copy_slot_may_touch_only_the_budgets_items(deployed, simulator):
    stack, template, resolved = deployed
    name, region, account = stack.settings.name, stack.settings.region, stack.settings.account
    table = f"arn:aws:dynamodb:{region}:{account}:table/ferry-{name}-state"
    role = role_of_function(template, "-copy-slot")
    lock = "thrift://metastore-1:9083/sales_dr.orders"  # a replica's lock and ledger

    def may(action: str, key: str) -> bool:
        context = {"dynamodb:LeadingKeys": [key]}
        return decide(simulator, template, resolved, role, action, table, context) == "Allowed"

    for action in ("dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem"):
        assert may(action, BUDGET_KEY), action
        assert not may(action, lock), action
        assert not may(action, "changes#s3://ferry-work/configs/x.yml"), action
    for action in ("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem"):
        assert not may(action, BUDGET_KEY), action
    # A slot whose holder's execution has ended is taken over: it may ask Step Functions.
    executions = f"arn:aws:states:{region}:{account}:execution:ferry-{name}-replication"
    assert (
        decide(simulator, template, resolved, role, "states:DescribeExecution", f"{executions}:x")
        == "Allowed"
    )
    # Nothing of the data, the catalogs or the topics.
    for action, resource in (
        ("s3:GetObject", "arn:aws:s3:::ferry-prod-dr-warehouse/warehouse/x"),
        ("glue:GetTable", f"arn:aws:glue:{region}:{account}:table/sales/orders"),
        ("sns:Publish", f"arn:aws:sns:{region}:{account}:ferry-{name}-replication-events"),
    ):
        assert decide(simulator, template, resolved, role, action, resource) != "Allowed", action


def test_the_dashboard_shows_the_line_the_wait_and_the_lag_by_priority(deployed):
    _, template, _ = deployed
    (dashboard,) = of_type(template, "AWS::CloudWatch::Dashboard").values()
    body = "".join(
        part for part in dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
        if isinstance(part, str)
    )  # fmt: skip
    for metric in ("CopyQueueDepth", "CopySlotWait", "ReplicationLag"):
        for priority in ("critical", "normal", "bulk"):
            series = ["Ferry", metric, "Priority", priority, "service", "ferry"]
            assert json.dumps(series, separators=(",", ":"))[1:-1] in body, (metric, priority)
