"""The housekeeping state machine: one Task with the one retry policy, caught into a Fail
(``States.DataLimitExceeded`` too, which ``States.ALL`` does not match)."""

import importlib
import json
from pathlib import Path

import pytest
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

from ferry import statemachine as definition
from ferry.core.errors import error_names

EVENTS = Path(__file__).parents[2] / "events"
ARN = "arn:aws:lambda:us-east-1:123456789012:function:Housekeeping"


@pytest.fixture(scope="module")
def rendered():
    return definition.load({"HousekeepingFunctionArn": ARN}, definition.HOUSEKEEPING_PATH)


def test_its_only_placeholder_is_the_function_and_the_emulator_parses_it():
    assert definition.placeholders(definition.HOUSEKEEPING_PATH) == {"HousekeepingFunctionArn"}
    AmazonStateLanguageParser.parse(
        definition.render({"HousekeepingFunctionArn": ARN}, definition.HOUSEKEEPING_PATH)
    )


def test_one_task_retried_with_the_policy_and_caught_into_a_fail(rendered):
    states = definition.states(rendered)
    assert set(states) == {"Housekeeping", "Housekeeping failed"}
    task = states["Housekeeping"]
    assert task["Parameters"]["FunctionName"] == ARN
    assert task["Retry"] == definition.retry_policy()
    # States.ALL does not match States.DataLimitExceeded: it is named on its own.
    assert task["Catch"] == [
        {
            "ErrorEquals": [name],
            "ResultPath": "$.error",
            "Next": "Housekeeping failed",
        }
        for name in ("States.DataLimitExceeded", "States.ALL")
    ]
    failed = states["Housekeeping failed"]
    assert (failed["Type"], failed["ErrorPath"], failed["CausePath"]) == (
        "Fail",
        "$.error.Error",
        "$.error.Cause",
    )
    assert all(state.get("Comment") for state in states.values())
    named = {e for block in task["Retry"] for e in block["ErrorEquals"]}
    assert {e for e in named if "." not in e} <= error_names()


def test_the_function_runs_the_step_its_handler_calls_and_has_a_sample_event():
    for function, handler in definition.HOUSEKEEPING_FUNCTIONS.items():
        module = handler.rsplit(".", 1)[0]
        source = Path(importlib.import_module(module).__file__).read_text()
        state = definition.STATES[function]
        assert f"{state.rsplit('.', 1)[1]}.run(" in source, module
        assert callable(importlib.import_module(state).run)
        sample = EVENTS / f"{module.rsplit('.', 1)[1]}.json"
        assert {"configUri", "dryRun", "vacuum"} <= set(json.loads(sample.read_text()))


def test_both_definitions_functions_are_deployed_and_driven():
    from ferry.commands.in_process import substitutions

    assert set(definition.ALL_FUNCTIONS) == (
        set(definition.FUNCTIONS)
        | {"Housekeeping"}
        | set(definition.CHANGES_FUNCTIONS)
        | set(definition.FEED_FUNCTIONS)
        | set(definition.CHECK_FUNCTIONS)
        | set(definition.OPERATOR_FUNCTIONS)
    )
    values = substitutions()
    for path in (definition.DEFINITION_PATH, definition.HOUSEKEEPING_PATH):
        assert definition.placeholders(path) <= set(values), path
