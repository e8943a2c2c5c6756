"""Where a redrive goes on (``ferry.statemachine.execution_redrive.unsuccessful_state``): the last state
entered with no exited event after it, with the input it was entered with."""

from __future__ import annotations

import json

from ferry.statemachine.execution_redrive import UnsuccessfulState, unsuccessful_state

STATES = ["Resolve tables", "Replicate tables", "Summarize", "Replication failed"]


def entered(name: str, state_input: dict) -> dict:
    return {"stateEnteredEventDetails": {"name": name, "input": json.dumps(state_input)}}


def exited(name: str) -> dict:
    return {"stateExitedEventDetails": {"name": name, "output": "{}"}}


def test_a_state_that_exited_is_not_run_again():
    events = [entered("Resolve tables", {"a": 1}), exited("Resolve tables"),
              entered("Replicate tables", {"b": 2}),
              {"mapRunStartedEventDetails": {"mapRunArn": "arn:run"}}]  # fmt: skip
    assert unsuccessful_state(STATES, events) == UnsuccessfulState(
        "Replicate tables", {"b": 2}, "arn:run"
    )


def test_a_fail_state_never_exits_and_inner_states_are_not_top_level():
    events = [entered("Summarize", {}), exited("Summarize"),
              entered("Replication failed", {"summary": {"failed": 1}}),
              entered("Plan", {}), ]  # fmt: skip
    point = unsuccessful_state(STATES, events)
    assert point is not None
    assert (point.name, point.input) == ("Replication failed", {"summary": {"failed": 1}})


def test_a_redriven_map_run_is_the_one_a_second_redrive_goes_on_with():
    events = [entered("Replicate tables", {}),
              {"mapRunStartedEventDetails": {"mapRunArn": "arn:run"}},
              {"type": "ExecutionRedriven"},
              entered("Replicate tables", {}),
              {"mapRunRedrivenEventDetails": {"mapRunArn": "arn:run", "redriveCount": 1}}]  # fmt: skip
    point = unsuccessful_state(STATES, events)
    assert point is not None and point.map_run_arn == "arn:run"


def test_every_state_exited_leaves_nothing_to_redrive():
    assert unsuccessful_state(STATES, [entered("Summarize", {}), exited("Summarize")]) is None
