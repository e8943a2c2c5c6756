"""Redriving a replication's execution: Step Functions' ``RedriveExecution``.

A redrive goes on with the **same** execution (its ARN, input and definition) from its
unsuccessful state — the top-level state entered with no exited event after it — and the
states that succeeded do not run again. When that state is the Map over the tables, its Map
Run is redriven in place: the tables that succeeded keep their outcome, the others go on
from their own unsuccessful state (inside a table's S3 copy Map, only its unfinished
batches run again).

What it is for in Ferry: an execution that timed out, was stopped, or failed where no
``Catch`` takes the error (``States.Runtime``, ``States.DataLimitExceeded``, a step of the
fan-out itself). An execution that ended in one of the definition's ``Fail`` states
("Replication failed": some table failed, was aborted and told its consumers) would only
fail again there: AWS reruns just that state. Those tables run again with the next
replication (``ferry replicate``, ``ferry resume EVENT``).

Who may redrive: a person or tool needs ``states:RedriveExecution`` on the execution
(``arn:aws:states:REGION:ACCOUNT:execution:ferry-ENV-replication:*``); the state machine's
role has it on its Map Runs' child executions, which a redrive of their parent redrives.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ferry.core.errors import FerryError
from ferry.statemachine.executions import execution_history

#: AWS's limit on the redrives of one Map Run (more fail the Map with ``States.Runtime``).
MAX_MAP_RUN_REDRIVES = 1_000
_ENDED = {"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}


class NotRedrivableError(FerryError):
    """The execution cannot be redriven (AWS's reason, or why it would be pointless)."""


@dataclass(frozen=True)
class UnsuccessfulState:
    """Where a redrive goes on: the state, the input it was entered with, its Map Run."""

    name: str
    input: Any
    map_run_arn: str | None = None


def unsuccessful_state(
    state_names: Iterable[str], events: list[dict[str, Any]]
) -> UnsuccessfulState | None:
    """The last of ``state_names`` entered with no exited event after it (a redrive goes on
    there), with its input and the Map Run it started; None when every entered state exited."""
    names = set(state_names)
    open_states: dict[str, UnsuccessfulState] = {}
    last: str | None = None
    for event in events:
        entered = event.get("stateEnteredEventDetails")
        exited = event.get("stateExitedEventDetails")
        if entered and entered.get("name") in names:
            last = entered["name"]
            open_states.pop(last, None)
            open_states[last] = UnsuccessfulState(last, json.loads(entered.get("input") or "{}"))
        elif exited and exited.get("name") in names:
            open_states.pop(exited["name"], None)
        for key in ("mapRunStartedEventDetails", "mapRunRedrivenEventDetails"):
            details = event.get(key)
            if details and last in open_states:
                state = open_states[last]
                open_states[last] = UnsuccessfulState(state.name, state.input, details["mapRunArn"])
    return open_states[next(reversed(open_states))] if open_states else None


@dataclass(frozen=True)
class Redrive:
    """What a redrive of an execution runs again."""

    execution_arn: str
    status: str
    state: str
    redrive_count: int
    #: For the Map over the tables: how many tables run again, of how many.
    tables_again: int | None = None
    tables: int | None = None
    redrive_date: str | None = None
    outcome: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: what runs again."""
        again = f"from {self.state}"
        if self.tables_again is not None:
            again += f" ({self.tables_again} of {self.tables} tables again)"
        return f"redriven ({self.redrive_count}): {self.execution_arn} {again}"

    def to_dict(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "executionArn": self.execution_arn,
            "previousStatus": self.status,
            "state": self.state,
            "redriveCount": self.redrive_count,
            "redriveDate": self.redrive_date,
        }
        if self.tables_again is not None:
            answer.update(tablesAgain=self.tables_again, tables=self.tables)
        if self.outcome:
            answer["outcome"] = self.outcome
        return answer


def plan_redrive(sfn: Any, execution_arn: str) -> Redrive:
    """What redriving ``execution_arn`` would run again, or ``NotRedrivableError`` (one line:
    AWS's reason, or why a redrive would be pointless). Reads only."""
    described = sfn.describe_execution(executionArn=execution_arn)
    status = described["status"]
    if described.get("mapRunArn"):
        parent = sfn.describe_map_run(mapRunArn=described["mapRunArn"])["executionArn"]
        raise NotRedrivableError(
            f"{execution_arn} is a child execution of a Map Run: redrive its parent execution "
            f"{parent}, which redrives it"
        )
    reason = described.get("redriveStatusReason")
    if described.get("redriveStatus") == "NOT_REDRIVABLE" or status not in _ENDED - {"SUCCEEDED"}:
        reason = reason or f"Execution is {status} and cannot be redriven"
        raise NotRedrivableError(f"{execution_arn} cannot be redriven: {reason}")
    definition = json.loads(
        sfn.describe_state_machine_for_execution(executionArn=execution_arn)["definition"]
    )
    states = definition.get("States", {})
    point = unsuccessful_state(states, execution_history(sfn, execution_arn))
    name = point.name if point else definition["StartAt"]
    if states.get(name, {}).get("Type") == "Fail":
        raise NotRedrivableError(
            f"{execution_arn} ended in its Fail state {name!r}: a redrive would only fail "
            "there again (Step Functions reruns just that state); its failed tables were "
            "aborted and told their consumers: `ferry replicate` or `ferry resume EVENT` "
            "runs them again"
        )
    tables_again = tables = None
    if point is not None and point.map_run_arn:
        run = sfn.describe_map_run(mapRunArn=point.map_run_arn)
        if run.get("redriveCount", 0) >= MAX_MAP_RUN_REDRIVES:
            raise NotRedrivableError(
                f"{execution_arn} cannot be redriven: its Map Run {point.map_run_arn} was "
                f"redriven {run['redriveCount']} times, the most Step Functions allows"
            )
        tables = _items(point.input, run)
        tables_again = tables - int(run.get("executionCounts", {}).get("succeeded", 0))
    return Redrive(
        execution_arn, status, name, int(described.get("redriveCount", 0)) + 1,
        tables_again, tables,
    )  # fmt: skip


def _items(state_input: Any, run: dict[str, Any]) -> int:
    """How many items (tables) the Map has: the count Resolve tables gave it, else the Map
    Run's."""
    count = (state_input.get("run") or {}).get("tables") if isinstance(state_input, dict) else None
    if isinstance(count, int):
        return count
    return int(run.get("itemCounts", {}).get("total", 0))


def redrive_execution(sfn: Any, execution_arn: str) -> Redrive:
    """Redrive ``execution_arn`` (``RedriveExecution``) after ``plan_redrive`` allowed it."""
    planned = plan_redrive(sfn, execution_arn)
    answer = sfn.redrive_execution(executionArn=execution_arn)
    date = answer.get("redriveDate")
    return Redrive(
        planned.execution_arn, planned.status, planned.state, planned.redrive_count,
        planned.tables_again, planned.tables, date.isoformat() if hasattr(date, "isoformat")
        else str(date),
    )  # fmt: skip
