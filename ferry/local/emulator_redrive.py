"""The AWS emulator's Step Functions redrives an execution as AWS does (``RedriveExecution``).

moto 5.2 has no ``RedriveExecution``. Here, as AWS documents it (redrive-executions,
redrive-map-run, the API reference):

- **Eligibility.** Only an execution of a ``STANDARD`` state machine that ended
  ``FAILED``, ``TIMED_OUT`` or ``ABORTED``, within 14 days of its stop, not past the one-year
  open time, with at most 25,000 history events, its state machine not ``DELETING``.
  Otherwise ``ExecutionNotRedrivable`` with AWS's reason (``Execution is SUCCEEDED and cannot
  be redriven``, ``Execution redrivable period exceeded``, ...), which ``DescribeExecution``
  gives too (``redriveStatus``, ``redriveStatusReason``). A Map Run's child cannot be
  redriven alone: its parent is.
- **The same execution.** Its ARN, input and definition; ``RUNNING`` again, ``redriveCount``
  + 1, ``redriveDate``; its history goes on with ``ExecutionRedriven``. Its
  ``TimeoutSeconds`` counts again from the redrive ("reset to 0"). A ``clientToken`` used by
  one of its last 10 redrives, within 15 minutes, answers that redrive again and starts
  nothing. (Its new interpreter is ``ferry.local.emulator_redrive_restart``'s.)
- **From its unsuccessful state**: the top-level state entered with no exited event after
  it, with the input it was entered with; the states that succeeded before it do not run
  again. A ``Fail`` state has no exited event: an execution that ended in one fails again in
  it when redriven.
- **A Distributed Map redrives its Map Run in place**: only its unsuccessful children run
  again, each from its own unsuccessful state (``ferry.local.emulator_redrive_map_runs``).
- **A Parallel state runs again only its branches that did not succeed, an inline Map only
  its iterations that did not** (``ferry.local.emulator_redrive_branches``).

``ExecutionsRedriven`` counts in ``AWS/States``.
"""

from __future__ import annotations

import datetime
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from ferry.local import (
    emulator_redrive_branches,
    emulator_redrive_map_runs,
    emulator_redrive_restart,
)
from ferry.local.emulator_redrive_branches import (
    attempt_of,
    expect_inline_map,
    expect_parallel,
)
from ferry.local.emulator_redrive_map_runs import (
    all_map_runs,
    aware,
    expect_map_run,
    live,
)
from ferry.local.emulator_redrive_restart import start_again
from ferry.statemachine.execution_redrive import unsuccessful_state

logger = logging.getLogger(__name__)

#: How long after its stop an execution can be redriven.
REDRIVABLE_PERIOD = datetime.timedelta(days=14)
#: An execution's maximum open time.
MAX_OPEN_TIME = datetime.timedelta(days=365)
#: The history AWS keeps for an execution.
MAX_HISTORY_EVENTS = 25_000
#: A clientToken answers again for the execution's last redrives, for this long.
KEPT_TOKENS = 10
TOKEN_LIFETIME = datetime.timedelta(minutes=15)

RUNNING = "Execution is RUNNING and cannot be redriven"
SUCCEEDED = "Execution is SUCCEEDED and cannot be redriven"
DELETING = "State machine is in DELETING status"
HISTORY_LIMIT = "Execution history event limit exceeded"
MAX_TIME = "Execution has exceeded the max execution time"
PERIOD = "Execution redrivable period exceeded"
EXPRESS = "Execution of an EXPRESS state machine cannot be redriven"

_lock = threading.Lock()


#: The failure drills' handle on the redrive rules: ``POST`` ``{"clockOffsetSeconds": n}``
#: moves the clock they read (a stop 15 days ago, without waiting 15 days);
#: ``{"mapRunArn": arn, "redriveCount": n}`` sets how often a Map Run was redriven.
DRILL_PATH = "/ferry-api/redrive-drill"
_clock_offset = datetime.timedelta()


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC) + _clock_offset


#: The emulator's clock for the redrive rules (``DRILL_PATH`` moves it).
clock: Callable[[], datetime.datetime] = utc_now


def install() -> None:
    """Add RedriveExecution and the redrive fields to the emulator's Step Functions (after
    ``emulator_states.install``, whose patches these wrap)."""
    emulator_redrive_map_runs.now = lambda: clock()
    emulator_redrive_map_runs.install()
    emulator_redrive_branches.install()
    _redrive_served()
    _drills_served()
    _redrive_fields_described()
    emulator_redrive_restart.install()


# -- eligibility ---------------------------------------------------------------------------------


def _status(execution: Any) -> str:
    return str(getattr(execution.exec_status, "value", execution.exec_status))


def _history(execution: Any) -> list[dict[str, Any]]:
    worker = execution.exec_worker
    env = getattr(worker, "env", None)
    return list(env.event_manager.get_event_history()) if env is not None else []


def not_redrivable(execution: Any, now: datetime.datetime | None = None) -> str | None:
    """Why AWS would refuse to redrive ``execution`` now (its ``redriveStatusReason``), or
    None when it can be redriven."""
    now = now or clock()
    machine = execution.state_machine
    if str(getattr(machine, "status", "")) == "DELETING":
        return DELETING
    if str(getattr(machine.sm_type, "value", machine.sm_type)) == "EXPRESS":
        return EXPRESS
    status = _status(execution)
    if status == "RUNNING":
        return RUNNING
    if status == "SUCCEEDED":
        return SUCCEEDED
    start = aware(execution.start_date)
    if start is not None and now - start > MAX_OPEN_TIME:
        return MAX_TIME
    stop = aware(execution.stop_date)
    if stop is not None and now - stop > REDRIVABLE_PERIOD:
        return PERIOD
    if len(_history(execution)) > MAX_HISTORY_EVENTS:
        return HISTORY_LIMIT
    return None


def _redrives(execution: Any) -> dict[str, Any]:
    return execution.__dict__.setdefault("ferry_redrive", {"count": 0, "date": None, "tokens": []})


# -- RedriveExecution ------------------------------------------------------------------------------


class NotRedrivable(Exception):
    """The execution cannot be redriven: AWS's reason."""


def redrive(execution: Any, client_token: str | None = None) -> datetime.datetime:
    """Redrive ``execution`` as AWS does; its ``redriveDate``."""
    now = clock()
    with _lock:  # one redrive at a time: the second sees the execution RUNNING
        redrives = _redrives(execution)
        for token, date in redrives["tokens"]:
            if client_token and token == client_token and now - date <= TOKEN_LIFETIME:
                return date
        reason = not_redrivable(execution, now)
        if reason:
            raise NotRedrivable(reason)
        events = _history(execution)
        definition = json.loads(execution.state_machine.definition)
        point = unsuccessful_state(definition.get("States", {}), events)
        old_env = getattr(execution.exec_worker, "env", None)
        pool = old_env.map_run_record_pool_manager.get_all() if old_env else []
        records = [live(record) for record in pool]
        if point is None:
            state, state_input, map_run_arn = definition["StartAt"], execution.input_data, None
        else:
            state, state_input, map_run_arn = point.name, point.input, point.map_run_arn
        if map_run_arn:
            record = next((r for r in records if r.map_run_arn == map_run_arn), None)
            expect_map_run(state, state_input, record)
        declared = definition["States"].get(state, {})
        if declared.get("Type") == "Parallel":
            expect_parallel(state, state_input, attempt_of(state, events))
        mode = (declared.get("ItemProcessor") or {}).get("ProcessorConfig", {}).get("Mode")
        if declared.get("Type") == "Map" and mode != "DISTRIBUTED":
            expect_inline_map(execution.exec_arn, state)
        redrives["count"] += 1
        redrives["date"] = now
        if client_token:
            redrives["tokens"] = [*redrives["tokens"], (client_token, now)][-KEPT_TOKENS:]
        start_again(execution, definition, state, state_input, events, records, redrives["count"])
    from ferry.local import emulator_executions

    emulator_executions._put(execution, "ExecutionsRedriven")
    logger.info("redriven %s at %s (redrive %d)", execution.exec_arn, state, redrives["count"])
    return now


def _redrive_served() -> None:
    from moto.core.exceptions import JsonRESTError
    from moto.core.responses import ActionResult
    from moto.stepfunctions.responses import StepFunctionResponse

    from ferry.local import emulator_map_children

    def redrive_execution(self: Any) -> Any:
        arn = self._get_param("executionArn")
        if emulator_map_children._child(arn) is not None:
            raise JsonRESTError(
                "ExecutionNotRedrivable",
                "A Map Run's child execution is redriven by redriving its parent execution",
            )
        execution = self.stepfunction_backend.describe_execution(arn)
        try:
            date = redrive(execution, self._get_param("clientToken"))
        except NotRedrivable as refused:
            raise JsonRESTError("ExecutionNotRedrivable", str(refused)) from None
        return ActionResult({"redriveDate": date})

    StepFunctionResponse.redrive_execution = redrive_execution


def _drills_served() -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    dispatch = DomainDispatcherApplication.__call__

    def serving(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") != DRILL_PATH or environ.get("REQUEST_METHOD") != "POST":
            return dispatch(self, environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(length) or b"{}")
        status, answer = "200 OK", drill(body)
        if answer.get("error"):
            status = "400 Bad Request"
        start_response(status, [("Content-Type", "application/json")])
        return [json.dumps(answer).encode()]

    DomainDispatcherApplication.__call__ = serving


def drill(body: dict[str, Any]) -> dict[str, Any]:
    """Apply a failure drill's request to the redrive rules (``DRILL_PATH``)."""
    global _clock_offset
    if "clockOffsetSeconds" in body:
        _clock_offset = datetime.timedelta(seconds=float(body["clockOffsetSeconds"]))
    if "mapRunArn" in body:
        record = next((r for r in all_map_runs() if r.map_run_arn == body["mapRunArn"]), None)
        if record is None:
            return {"error": f"no Map Run {body['mapRunArn']}"}
        record.__dict__["ferry_redrive_count"] = int(body["redriveCount"])
    return {"clockOffsetSeconds": _clock_offset.total_seconds()}


# -- what DescribeExecution, ListExecutions, DescribeMapRun say ------------------------------------


def _redrive_fields_described() -> None:
    from moto.stepfunctions.responses import StepFunctionResponse

    from ferry.local import emulator_map_children

    describe = StepFunctionResponse.describe_execution
    list_executions = StepFunctionResponse.list_executions

    def described(self: Any) -> Any:
        answer = describe(self)
        result = answer.result
        arn = result.get("executionArn")
        if emulator_map_children._child(arn) is not None:
            return answer
        execution = self.stepfunction_backend.describe_execution(arn)
        redrives = _redrives(execution)
        result["redriveCount"] = redrives["count"]
        if redrives["date"] is not None:
            result["redriveDate"] = redrives["date"]
        reason = not_redrivable(execution)
        result["redriveStatus"] = "NOT_REDRIVABLE" if reason else "REDRIVABLE"
        if reason:
            result["redriveStatusReason"] = reason
        return answer

    def listed(self: Any) -> Any:
        answer = list_executions(self)
        if self._get_param("mapRunArn"):
            return answer
        wanted = self._get_param("redriveFilter")
        items = []
        for item in answer.result.get("executions", []):
            execution = self.stepfunction_backend.describe_execution(item["executionArn"])
            redrives = _redrives(execution)
            item["redriveCount"] = redrives["count"]
            if redrives["date"] is not None:
                item["redriveDate"] = redrives["date"]
            redriven = redrives["count"] > 0
            if wanted == "REDRIVEN" and not redriven or wanted == "NOT_REDRIVEN" and redriven:
                continue
            items.append(item)
        answer.result["executions"] = items
        return answer

    StepFunctionResponse.describe_execution = described
    StepFunctionResponse.list_executions = listed
