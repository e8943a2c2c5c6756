"""Start a replication on the state machine and follow it state by state (``ferry execute``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ferry.core.errors import describe_error

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
    #: Every state entered, in order (of this execution: the tables' states are in their
    #: own child executions).
    entered: list[str] = field(default_factory=list)
    #: Each table's outcome (its iteration's last output), in the order of the tables.
    tables: list[dict[str, Any]] = field(default_factory=list)
    #: The states entered by the child executions of its Distributed Maps (each table's),
    #: when they are few enough to read (``CHILD_HISTORIES``).
    child_entered: list[str] = field(default_factory=list)

    @property
    def results(self) -> list[dict[str, Any]]:
        """The tables' outcomes (what the Map over the tables wrote to S3)."""
        return self.tables

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
            "tables": self.tables,
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
    on_child: Callable[[list[str]], None] = lambda states: None,
) -> ExecutionOutcome:
    """Poll the execution's history until it ends, reporting each state as it is entered,
    then each child execution's states (each table's, run by the Map over the tables)."""
    started = time.monotonic()
    seen: set[int] = set()
    events: dict[int, dict[str, Any]] = {}
    while True:
        description = sfn.describe_execution(executionArn=execution_arn)
        for event in execution_history(sfn, execution_arn):
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
    output = json.loads(description["output"]) if description.get("output") else None
    state_outputs = _state_outputs(events)
    tables = table_outcomes(output, state_outputs)
    children = _child_histories(sfn, events)
    for child in children:
        on_child(_entered(child))
    return ExecutionOutcome(
        execution_arn=execution_arn,
        status=description["status"],
        seconds=time.monotonic() - started,
        error=description.get("error"),
        cause=description.get("cause"),
        failed_states=[
            *_failed_states(events),
            *(failure for child in children for failure in _failed_states(child)),
            # Without the children's histories, each failed table says where it failed.
            *(() if children else _failed_tables(tables)),
        ],
        child_entered=[state for child in children for state in _entered(child)],
        output=output,
        state_outputs=state_outputs,
        tables=tables,
        entered=_entered(events),
    )


#: Child executions whose histories ``follow`` reads (a run of many tables is followed by its
#: tables' outcomes alone: one history request per table would cost more than the run).
CHILD_HISTORIES = 50


def _child_histories(
    sfn: Any, events: dict[int, dict[str, Any]]
) -> list[dict[int, dict[str, Any]]]:
    """The histories of the child executions of the execution's own Distributed Maps."""
    map_runs = [
        event["mapRunStartedEventDetails"]["mapRunArn"]
        for event in events.values()
        if event["type"] == "MapRunStarted" and event.get("mapRunStartedEventDetails")
    ]
    children = []
    for map_run in map_runs:
        arguments: dict[str, Any] = {"mapRunArn": map_run, "maxResults": 1000}
        while True:
            page = sfn.list_executions(**arguments)
            children.extend(e["executionArn"] for e in page.get("executions", []))
            if not page.get("nextToken") or len(children) > CHILD_HISTORIES:
                break
            arguments["nextToken"] = page["nextToken"]
    if len(children) > CHILD_HISTORIES:
        return []
    return [{e["id"]: e for e in execution_history(sfn, child)} for child in children]


def table_outcomes(output: Any, state_outputs: dict[str, Any]) -> list[dict[str, Any]]:
    """The tables' outcomes, read from where the Map over the tables wrote them (S3).

    A table whose iteration failed where no ``Catch`` took the error has no outcome of its
    own: it is described by its item and the error (Summarize aborts it).
    """
    from ferry.statemachine.outcomes import map_results

    data = output or state_outputs.get("Replicate tables") or state_outputs.get("Summarize")
    details = ((data or {}).get("results") or {}).get("ResultWriterDetails")
    if not details:
        return []
    outcomes = []
    for child in map_results(details):
        if child.status == "SUCCEEDED":
            outcomes.append(child.output)
        else:
            outcomes.append(
                {**child.input, "status": "FAILED", "failedState": "Replicate tables",
                 "error": child.error, "cause": child.cause}
            )  # fmt: skip
    return outcomes


def _failed_tables(tables: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(state, error, cause) of each table that failed, as its Abort recorded it."""
    return [
        (table.get("failedState") or "?", table.get("error") or "", table.get("cause") or "")
        for table in tables
        if table.get("status") == "FAILED"
    ]


def _entered(events: dict[int, dict[str, Any]]) -> list[str]:
    return [
        events[i]["stateEnteredEventDetails"]["name"]
        for i in sorted(events)
        if events[i]["type"].endswith(_ENTERED)
    ]


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


def execution_history(sfn: Any, execution_arn: str) -> list[dict[str, Any]]:
    """Every event of an execution's history, page after page."""
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
