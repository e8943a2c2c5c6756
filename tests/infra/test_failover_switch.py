"""The failover switch in every example environment: the FailoverSwitch function, its
environment and its output, and a role that may turn off and on exactly this environment's
rules and schedules, stop this pipeline's executions and release claims in its state table,
and nothing else (decided by the IAM policy simulator on the resolved template)."""

from __future__ import annotations

import pytest

from ferry.failover.deployed import LONGEST_WAIT
from ferry.failover.trigger_names import config_triggers
from infra.functions import kebab
from tests.infra.test_dead_letters import actions_of, of_type
from tests.infra.test_first_deploy import decide, role_of_function

pytestmark = pytest.mark.infra


def switch_role(template: dict) -> str:
    return role_of_function(template, f"-{kebab('FailoverSwitch')}")


def test_the_function_is_deployed_with_the_stacks_resources_and_its_output(deployed):
    stack, template, resolved = deployed
    name = stack.settings.name
    [function] = [
        f["Properties"]
        for f in of_type(template["Resources"], "AWS::Lambda::Function").values()
        if f["Properties"]["FunctionName"] == f"ferry-{name}-failover-switch"
    ]
    assert function["Handler"] == "lambdas.failover_switch.handler"
    # Long enough for the longest wait the command asks (ferry.failover.deployed.LONGEST_WAIT).
    assert function["Timeout"] >= LONGEST_WAIT.total_seconds() + 60
    variables = resolved.value(function["Environment"]["Variables"])
    assert variables["FERRY_SCHEDULE_GROUP"] == f"ferry-{name}"
    replication, changes = variables["FERRY_FAILOVER_STATE_MACHINES"].split(",")
    assert replication.endswith(f":stateMachine:ferry-{name}-replication")
    assert changes.endswith(f":stateMachine:ferry-{name}-catalog-changes")
    assert "FailoverSwitchFunctionArn" in template["Outputs"]
    # A person invokes it and reads its answer: no retries, no dead-letter queue.
    configs = of_type(template["Resources"], "AWS::Lambda::EventInvokeConfig").values()
    assert not [c for c in configs if "FailoverSwitch" in str(c["Properties"]["FunctionName"])]


def test_its_role_turns_this_environments_triggers_off_and_on_and_no_others(deployed, simulator):
    stack, template, resolved = deployed
    settings = stack.settings
    role = switch_role(template)
    where = f"{settings.region}:{settings.account}"

    def may(action: str, resource: str, context: dict | None = None) -> bool:
        return decide(simulator, template, resolved, role, action, resource, context) == "Allowed"

    for path, config in settings.configs.items():
        triggers = config_triggers(settings.name, path.stem, config)
        for rule in triggers.rules:
            for action in ("events:DescribeRule", "events:DisableRule", "events:EnableRule"):
                assert may(action, f"arn:aws:events:{where}:rule/{rule}"), (action, rule)
        for schedule in triggers.schedules:
            arn = f"arn:aws:scheduler:{where}:schedule/{triggers.group}/{schedule}"
            assert may("scheduler:GetSchedule", arn) and may("scheduler:UpdateSchedule", arn)
    other = "ferry-other-sales"
    assert not may("events:DisableRule", f"arn:aws:events:{where}:rule/{other}-s3-0")
    assert not may("events:DeleteRule", f"arn:aws:events:{where}:rule/ferry-{settings.name}-x")
    assert not may("events:PutRule", f"arn:aws:events:{where}:rule/ferry-{settings.name}-x")
    assert not may(
        "scheduler:UpdateSchedule", f"arn:aws:scheduler:{where}:schedule/ferry-other/{other}"
    )
    assert not may(
        "scheduler:DeleteSchedule",
        f"arn:aws:scheduler:{where}:schedule/ferry-{settings.name}/ferry-{settings.name}-x",
    )


def test_its_role_passes_the_schedules_roles_to_scheduler_only(deployed, simulator):
    stack, template, resolved = deployed
    role = switch_role(template)
    triggers = stack.triggers
    for schedules in (triggers.schedule_role, triggers.poller_role):
        arn = resolved.value(stack.resolve(schedules.role_arn))
        to_scheduler = {"iam:PassedToService": "scheduler.amazonaws.com"}
        assert decide(simulator, template, resolved, role, "iam:PassRole", arn, to_scheduler) == (
            "Allowed"
        )
        to_lambda = {"iam:PassedToService": "lambda.amazonaws.com"}
        assert decide(simulator, template, resolved, role, "iam:PassRole", arn, to_lambda) != (
            "Allowed"
        )
    own = resolved.value(stack.resolve(stack.pipeline.replication.role.role_arn))
    to_scheduler = {"iam:PassedToService": "scheduler.amazonaws.com"}
    assert decide(simulator, template, resolved, role, "iam:PassRole", own, to_scheduler) != (
        "Allowed"
    )


def test_its_role_stops_this_pipelines_runs_and_touches_no_data(deployed, simulator):
    stack, template, resolved = deployed
    settings = stack.settings
    role = switch_role(template)
    where = f"{settings.region}:{settings.account}"
    name = settings.name

    def may(action: str, resource: str) -> bool:
        return decide(simulator, template, resolved, role, action, resource) == "Allowed"

    for machine in (f"ferry-{name}-replication", f"ferry-{name}-catalog-changes"):
        assert may("states:ListExecutions", f"arn:aws:states:{where}:stateMachine:{machine}")
        assert may("states:StopExecution", f"arn:aws:states:{where}:execution:{machine}:run-1")
    child = f"arn:aws:states:{where}:execution:ferry-{name}-replication/tables:child-1"
    assert may("states:DescribeExecution", child)
    housekeeping = f"arn:aws:states:{where}:execution:ferry-{name}-housekeeping:run-1"
    assert not may("states:StopExecution", housekeeping)
    assert not may("states:StartExecution", f"arn:aws:states:{where}:stateMachine:ferry-{name}-replication")
    statements = [
        s
        for policy in of_type(template["Resources"], "AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    actions = {a for s in statements for a in actions_of(s)}
    assert {a for a in actions if a.startswith("dynamodb:")} == {
        "dynamodb:GetItem", "dynamodb:Query", "dynamodb:DeleteItem",
    }  # fmt: skip
    assert not {a for a in actions if a.startswith(("s3:", "glue:", "sns:", "secretsmanager:"))}


def test_the_triggers_it_is_asked_to_turn_off_are_the_ones_the_stack_deploys(deployed):
    stack, template, _ = deployed
    settings = stack.settings
    resources = template["Resources"]
    rules = {r["Properties"]["Name"] for r in of_type(resources, "AWS::Events::Rule").values()}
    schedules = {
        (s["Properties"]["GroupName"], s["Properties"]["Name"])
        for s in of_type(resources, "AWS::Scheduler::Schedule").values()
    }
    asked = 0
    for path, config in settings.configs.items():
        triggers = config_triggers(settings.name, path.stem, config)
        assert set(triggers.rules) <= rules
        assert {(triggers.group, s) for s in triggers.schedules} <= schedules
        asked += len(triggers.rules) + len(triggers.schedules)
    assert asked, "the example environments' configs declare triggers"
