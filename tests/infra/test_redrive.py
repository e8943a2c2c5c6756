"""The deployed replication state machine can be redriven: its role may redrive its own Map
Runs' child executions (``states:RedriveExecution``, which a redrive of their parent needs),
and nothing else of the kind."""

from __future__ import annotations

import pytest

from tests.infra.test_catalog_events import named
from tests.infra.test_first_deploy import decide

pytestmark = pytest.mark.infra


def test_the_replication_role_may_redrive_its_own_map_runs_children(deployed, simulator):
    stack, template, resolved = deployed
    name, region, account = stack.settings.name, stack.settings.region, stack.settings.account
    _, machine = named(template, "AWS::StepFunctions::StateMachine", "-replication")
    role = machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]

    def may(action: str, resource: str) -> bool:
        return decide(simulator, template, resolved, role, action, resource) == "Allowed"

    executions = f"arn:aws:states:{region}:{account}:execution"
    child = f"{executions}:ferry-{name}-replication/0c2b1e7a:4f6e0d1c:00000000"
    assert may("states:RedriveExecution", child)
    # Not the parent executions (a person or tool redrives those), nor another machine's.
    assert not may("states:RedriveExecution", f"{executions}:ferry-{name}-replication:run-1")
    assert not may("states:RedriveExecution", f"{executions}:ferry-{name}-housekeeping/x:y:0")
    assert not may("states:RedriveExecution", f"{executions}:ferry-{name}-catalog-changes:w")
