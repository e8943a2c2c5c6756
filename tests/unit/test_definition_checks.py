"""The create-time checks of a definition (``ferry.local.definitions``): every definition of
the repository passes them; what Step Functions refuses is one reason naming the state and
the field."""

from __future__ import annotations

import json

import pytest

from ferry import statemachine
from ferry.local.definitions import InvalidDefinitionError, check_definition, definition_problems


def rendered(path) -> str:
    return statemachine.render(
        {
            name: f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
            for name in statemachine.placeholders(path)
        },
        path,
    )


@pytest.mark.parametrize("path", statemachine.DEFINITIONS, ids=lambda p: p.name)
def test_every_definition_of_the_repository_passes(path):
    assert definition_problems(rendered(path)) == []


def test_payload_beside_payload_dollar_is_refused_naming_the_state_and_the_field():
    document = json.loads(rendered(statemachine.DEFINITION_PATH))
    batch = document["States"]["Replicate tables"]["ItemProcessor"]["States"][
        "S3 server-side copy"
    ]["ItemProcessor"]["States"]["Copy batch"]
    batch["Parameters"]["Payload.$"] = "$"
    with pytest.raises(InvalidDefinitionError) as refused:
        check_definition("ferry-local-replication", json.dumps(document))
    assert str(refused.value) == (
        "state machine ferry-local-replication: invalid definition: state 'Replicate tables' > "
        "'S3 server-side copy' > 'Copy batch': field Parameters.Payload is given twice once "
        "'.$' is stripped ('Payload' and 'Payload.$')"
    )


def test_a_key_given_twice_in_the_text_is_refused():
    text = '{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true, "End": true}}}'
    assert definition_problems(text) == ["field 'End' appears twice in one object"]


def test_a_heartbeat_not_below_the_timeout_is_refused():
    document = {
        "StartAt": "A",
        "States": {
            "A": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "f"},
                "TimeoutSeconds": 60,
                "HeartbeatSeconds": 60,
                "End": True,
            }
        },
    }
    (problem,) = definition_problems(json.dumps(document))
    assert problem == "state 'A': HeartbeatSeconds (60) must be below TimeoutSeconds (60)"


def test_an_sdk_integration_has_no_sync():
    document = {
        "StartAt": "A",
        "States": {
            "A": {
                "Type": "Task",
                "Resource": "arn:aws:states:::aws-sdk:emrserverless:startJobRun.sync",
                "End": True,
            }
        },
    }
    (problem,) = definition_problems(json.dumps(document))
    assert "has no .sync integration" in problem
