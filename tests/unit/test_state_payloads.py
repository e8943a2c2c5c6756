"""Every key the state machines read of a state's input or result is a field of its model.

The definitions (``ferry/statemachine/*.asl.json``) name the payloads' keys in ``Parameters``,
``ResultSelector`` and ``$.…`` paths; the models ``ferry.statemachine.PAYLOADS`` names define
them once. A key renamed on one side only fails here, not in an execution.
"""

import json
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from ferry import statemachine
from ferry.statemachine.replication_payloads import ResolveTablesInput, TableItem

EVENTS = Path(__file__).parents[2] / "events"
_PATH = re.compile(r"^\$\.([A-Za-z_][A-Za-z0-9_]*)")


def keys(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def required(model: type[BaseModel]) -> set[str]:
    return {
        field.alias or name for name, field in model.model_fields.items() if field.is_required()
    }


def tasks() -> list[tuple[str, str, dict]]:
    """(function, state name, state) of every Lambda task of both definitions."""
    found = []
    for path in statemachine.DEFINITIONS:
        document = json.loads(path.read_text())
        for name, state in statemachine.lambda_tasks(document).items():
            function = re.fullmatch(r"\$\{(\w+)FunctionArn\}", state["Parameters"]["FunctionName"])
            found.append((function.group(1), name, state))
    return found


def paths(template) -> list[str]:
    """The ``$.…`` paths a Parameters / ResultSelector / ItemSelector template reads."""
    if isinstance(template, dict):
        found = []
        for key, value in template.items():
            if key.endswith(".$") and isinstance(value, str):
                found += re.findall(r"\$\$?\.[A-Za-z0-9_.]+", value)
            else:
                found += paths(value)
        return found
    if isinstance(template, list):
        return [p for item in template for p in paths(item)]
    return []


def template_keys(template: dict) -> set[str]:
    return {key.removesuffix(".$") for key in template}


TASKS = tasks()


def test_every_function_has_its_payload_models():
    assert set(statemachine.PAYLOADS) == set(statemachine.ALL_FUNCTIONS)
    # The change feeds' intake and poller start the change window, a schedule the freshness
    # check, a person's command the failover switch; no definition runs them.
    driven = (
        set(statemachine.ALL_FUNCTIONS)
        - set(statemachine.OUT_OF_BAND_FUNCTIONS)
        - set(statemachine.OPERATOR_FUNCTIONS)
    )
    assert {function for function, _, _ in TASKS} == driven


@pytest.mark.parametrize("function,name,state", TASKS, ids=[name for _, name, _ in TASKS])
def test_what_a_state_selects_of_its_result_is_a_field_of_the_result_model(function, name, state):
    result = statemachine.PAYLOADS[function][1]
    for path in paths(state.get("ResultSelector", {})):
        parts = path.split(".")
        assert parts[:2] == ["$", "Payload"], (name, path)
        if len(parts) > 2:
            assert parts[2] in keys(result), (
                f"{name} selects {path}: not a field of {result.__name__}"
            )


@pytest.mark.parametrize("function,name,state", TASKS, ids=[name for _, name, _ in TASKS])
def test_what_a_state_sends_its_function_is_its_input_model(function, name, state):
    model = statemachine.PAYLOADS[function][0]
    payload = state["Parameters"].get("Payload")
    if not isinstance(payload, dict):  # "Payload.$": "$": the state's whole input
        return
    sent = template_keys(payload)
    assert sent <= keys(model), f"{name} sends {sent - keys(model)}: not fields of {model.__name__}"
    assert required(model) <= sent, f"{name} does not send {required(model) - sent}"


def test_plan_selects_every_field_of_its_result():
    """Plan's result is one definition (``PlanResult``): the definition selects all of it."""
    (plan,) = [state for function, _, state in TASKS if function == "Plan"]
    assert template_keys(plan["ResultSelector"]) == keys(statemachine.PAYLOADS["Plan"][1])


def scope_paths(machine: dict) -> list[tuple[str, str]]:
    """(state, path) of every ``$.…`` path read in one scope (not in nested Map processors,
    not of a task's own raw result)."""
    found = []
    for name, state in machine["States"].items():
        for key in ("Parameters", "ItemSelector", "ItemReader", "ResultWriter"):
            found += [(name, p) for p in paths(state.get(key, {})) if not p.startswith("$$")]
        for key in ("Variable", "ErrorPath", "CausePath", "MaxConcurrencyPath", "ItemsPath"):
            if key in state:
                found.append((name, state[key]))
        found += [(name, choice["Variable"]) for choice in state.get("Choices", [])]
    return found


def scope_results(machine: dict) -> dict[str, set[str] | None]:
    """What each ``ResultPath`` of a scope holds: the keys its ResultSelector makes, or None
    for anything (an error, a whole result, a Pass state's value)."""
    held: dict[str, set[str] | None] = {}
    for state in machine["States"].values():
        selected = state.get("ResultSelector")
        placed = [(state.get("ResultPath"), template_keys(selected) if selected else None)]
        placed += [(catch.get("ResultPath"), None) for catch in state.get("Catch", [])]
        for place, made in placed:
            if isinstance(place, str) and place.startswith("$."):
                top = place.split(".")[1]
                before = held.get(top, set())
                held[top] = None if made is None or before is None else before | made
    return held


def check_scope(machine: dict, inputs: set[str]) -> None:
    held = scope_results(machine)
    for name, path in scope_paths(machine):
        parts = path.split(".")
        if path == "$":
            continue
        top = parts[1]
        assert top in inputs or top in held, f"{name} reads {path}: nothing puts {top} there"
        if top in held and held[top] is not None and len(parts) > 2:
            assert parts[2] in held[top], f"{name} reads {path}: its state does not select it"


def test_every_path_of_the_replication_definition_reads_what_a_model_or_a_state_put_there():
    document = json.loads(statemachine.DEFINITION_PATH.read_text())
    check_scope(document, keys(ResolveTablesInput))
    tables = document["States"]["Replicate tables"]["ItemProcessor"]
    # Each table's iteration starts from its item: what Resolve tables wrote (TableItem).
    check_scope(tables, keys(TableItem))
    copy = tables["States"]["S3 server-side copy"]
    check_scope(copy["ItemProcessor"], template_keys(copy["ItemSelector"]))


def test_every_path_of_the_housekeeping_definition_reads_its_input_or_a_result():
    document = json.loads(statemachine.HOUSEKEEPING_PATH.read_text())
    check_scope(document, keys(statemachine.PAYLOADS["Housekeeping"][0]))


def test_every_path_of_the_change_window_reads_its_input_or_a_result():
    document = json.loads(statemachine.CHANGES_PATH.read_text())
    check_scope(document, keys(statemachine.PAYLOADS["ClaimChanges"][0]))


def test_the_change_window_starts_the_replication_with_its_input_model():
    document = json.loads(statemachine.CHANGES_PATH.read_text())
    (run,) = [
        state
        for state in document["States"].values()
        if state.get("Resource", "").startswith("arn:aws:states:::states:startExecution")
    ]
    assert run["Parameters"]["StateMachineArn"] == "${ReplicationStateMachineArn}"
    sent = template_keys(run["Parameters"]["Input"])
    assert sent <= keys(ResolveTablesInput)
    assert required(ResolveTablesInput) <= sent


@pytest.mark.parametrize("function", sorted(statemachine.ALL_FUNCTIONS))
def test_each_sample_event_is_its_functions_input(function):
    module = statemachine.ALL_FUNCTIONS[function].split(".")[1]
    event = json.loads((EVENTS / f"{module}.json").read_text())
    statemachine.PAYLOADS[function][0].model_validate(event)
