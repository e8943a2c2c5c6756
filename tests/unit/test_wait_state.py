"""The in-process driver's Wait state (``Wait for a copy slot``): it sleeps for real, as long
as the claim said, never more than ``LONGEST_WAIT_SECONDS``; and a Choice on a boolean."""

from __future__ import annotations

from ferry.commands.in_process import LONGEST_WAIT_SECONDS, InProcessDriver
from ferry.commands.in_process_data_flow import choose
from ferry.states.context import StateContext


def driver(slept: list[float]) -> InProcessDriver:
    return InProcessDriver(StateContext("file:///tmp/ferry-unused"), None, sleep=slept.append)


def test_a_wait_sleeps_the_seconds_its_path_names_and_goes_on():
    slept: list[float] = []
    state = {"Type": "Wait", "SecondsPath": "$.slot.waitSeconds", "Next": "Claim copy slot"}
    data = {"slot": {"granted": False, "waitSeconds": 7}}
    assert driver(slept)._run_state("Wait for a copy slot", state, data, None) == (
        data, "Claim copy slot",
    )  # fmt: skip
    assert slept == [7.0]


def test_a_wait_never_sleeps_longer_than_a_minute_here():
    slept: list[float] = []
    state = {"Type": "Wait", "Seconds": 86400, "Next": "On"}
    driver(slept)._run_state("Wait", state, {}, None)
    assert slept == [LONGEST_WAIT_SECONDS] == [60.0]


def test_copy_slot_granted_chooses_on_a_boolean_then_the_copier():
    state = {
        "Choices": [
            {"Variable": "$.slot.granted", "BooleanEquals": False, "Next": "Wait"},
            {"Variable": "$.plan.copier", "StringEquals": "inline", "Next": "Inline copy"},
        ],
        "Default": "Unknown copier",
    }
    plan = {"copier": "inline"}
    assert choose(state, {"slot": {"granted": False}, "plan": plan}) == "Wait"
    assert choose(state, {"slot": {"granted": True}, "plan": plan}) == "Inline copy"
