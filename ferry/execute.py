"""Start a replication on the state machine and follow it state by state (``ferry execute``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ferry.errors import describe_error

_ENTERED = "StateEntered"
TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}


@dataclass(frozen=True)
class ExecutionOutcome:
    execution_arn: str
    status: str
    seconds: float
    error: str | None = None
    cause: str | None = None
    #: The states that failed, with their error: (state, error, cause).
    failed_states: list[tuple[str, str, str]] = field(default_factory=list)
    output: Any = None
    #: Each state's last output, by state name (a failed execution has no output of its own:
    #: the tables' results are in the output of the state that ran them).
    state_outputs: dict[str, Any] = field(default_factory=dict)
    #: Every state entered, in order (Map iterations included; child executions not).
    entered: list[str] = field(default_factory=list)

    @property
    def results(self) -> list[dict[str, Any]]:
        """The tables' outcomes (the output of the Map over the tables)."""
        data = self.output or self.state_outputs.get("Replicate tables") or {}
        return data.get("results", [])

    def to_dict(self) -> dict[str, Any]:
        return {
            "executionArn": self.execution_arn,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "error": self.error,
            "cause": self.cause,
            "failedStates": [
                {"state": state, "error": error, "cause": cause}
                for state, error, cause in self.failed_states
            ],
            "output": self.output,
        }


def start(sfn: Any, state_machine_arn: str, name: str, execution_input: dict[str, Any]) -> str:
    return sfn.start_execution(
        stateMachineArn=state_machine_arn, name=name, input=json.dumps(execution_input)
    )["executionArn"]


def follow(
    sfn: Any,
    execution_arn: str,
    on_state: Callable[[str], None] = lambda name: None,
    poll_seconds: float = 0.5,
    timeout_seconds: float | None = None,
) -> ExecutionOutcome:
    """Poll the execution's history until it ends, reporting each state as it is entered."""
    started = time.monotonic()
    seen: set[int] = set()
    events: dict[int, dict[str, Any]] = {}
    while True:
        description = sfn.describe_execution(executionArn=execution_arn)
        for event in _history(sfn, execution_arn):
            if event["id"] in seen:
                continue
            seen.add(event["id"])
            events[event["id"]] = event
            if event["type"].endswith(_ENTERED):
                on_state(event["stateEnteredEventDetails"]["name"])
        if description["status"] in TERMINAL:
            break
        if timeout_seconds is not None and time.monotonic() - started > timeout_seconds:
            raise TimeoutError(
                f"execution {execution_arn} still running after {timeout_seconds:.0f} s"
            )
        time.sleep(poll_seconds)
    output = description.get("output")
    return ExecutionOutcome(
        execution_arn=execution_arn,
        status=description["status"],
        seconds=time.monotonic() - started,
        error=description.get("error"),
        cause=description.get("cause"),
        failed_states=_failed_states(events),
        output=json.loads(output) if output else None,
        state_outputs=_state_outputs(events),
        entered=[
            events[i]["stateEnteredEventDetails"]["name"]
            for i in sorted(events)
            if events[i]["type"].endswith(_ENTERED)
        ],
    )


def _state_outputs(events: dict[int, dict[str, Any]]) -> dict[str, Any]:
    outputs: dict[str, Any] = {}
    for event_id in sorted(events):
        details = events[event_id].get("stateExitedEventDetails")
        if details and details.get("output"):
            try:
                outputs[details["name"]] = json.loads(details["output"])
            except ValueError:
                continue
    return outputs


def _history(sfn: Any, execution_arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    arguments: dict[str, Any] = {"executionArn": execution_arn, "maxResults": 1000}
    while True:
        page = sfn.get_execution_history(**arguments)
        events.extend(page["events"])
        if not page.get("nextToken"):
            return events
        arguments["nextToken"] = page["nextToken"]


def _failed_states(events: dict[int, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """Each failed task, named by the state it failed in (found through previousEventId)."""
    failed = []
    for event in events.values():
        if event["type"] != "TaskFailed":
            continue
        details = event.get("taskFailedEventDetails", {})
        _, line = describe_error({"Error": details.get("error"), "Cause": details.get("cause")})
        failed.append((_state_of(event, events), details.get("error", ""), line))
    return failed


def _state_of(event: dict[str, Any], events: dict[int, dict[str, Any]]) -> str:
    current: dict[str, Any] | None = event
    while current is not None:
        if current["type"].endswith(_ENTERED):
            return current["stateEnteredEventDetails"]["name"]
        current = events.get(current.get("previousEventId", -1))
    return "?"
