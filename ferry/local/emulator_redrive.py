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
  nothing.
- **From its unsuccessful state**: the top-level state entered with no exited event after
  it, with the input it was entered with; the states that succeeded before it do not run
  again. A ``Fail`` state has no exited event: an execution that ended in one fails again in
  it when redriven.
- **A Distributed Map redrives its Map Run in place** (same Map Run ARN, ``redriveCount`` +
  1, ``redriveDate``, ``MapRunRedriven`` instead of ``MapRunStarted``): a child that succeeded
  keeps its result and does not run; an unsuccessful child runs again under its own ARN, from
  its own unsuccessful state (a nested Distributed Map in it redrives its own Map Run the
  same way); the ResultWriter then writes every child's result. A Map Run redriven 1,000
  times fails with ``States.Runtime``. Redriving a child needs ``states:RedriveExecution`` on
  it for the execution's role, as on AWS.

``ExecutionsRedriven`` counts in ``AWS/States``. Inline Map and Parallel states run again
whole (AWS reruns only their failed iterations and branches; the pipeline has neither).
"""

from __future__ import annotations

import copy
import datetime
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from ferry.execution_redrive import MAX_MAP_RUN_REDRIVES, unsuccessful_state

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
#: Map Runs to redrive, by the Map state's name and its input (canonical JSON).
_pending_map_runs: dict[tuple[str, str], Any] = {}
_authorizer: Any = None


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
    from ferry.local import emulator_states

    emulator_states.REDRIVE_HOOKS.update(
        kept=kept_child, redriven=redriven_child, continue_history=continue_child_history
    )
    _redrive_served()
    _drills_served()
    _redrive_fields_described()
    _map_runs_redriven()
    _superseded_workers_silent()


def authorize_with(authorizer: Any) -> None:
    """Check that the execution's role may redrive a Map Run's children, with ``authorizer``."""
    global _authorizer
    _authorizer = authorizer


# -- eligibility ---------------------------------------------------------------------------------


def _aware(moment: Any) -> datetime.datetime | None:
    if moment is None:
        return None
    if isinstance(moment, str):
        moment = datetime.datetime.fromisoformat(moment.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment


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
    start = _aware(execution.start_date)
    if start is not None and now - start > MAX_OPEN_TIME:
        return MAX_TIME
    stop = _aware(execution.stop_date)
    if stop is not None and now - stop > REDRIVABLE_PERIOD:
        return PERIOD
    if len(_history(execution)) > MAX_HISTORY_EVENTS:
        return HISTORY_LIMIT
    return None


def _redrives(execution: Any) -> dict[str, Any]:
    return execution.__dict__.setdefault("ferry_redrive", {"count": 0, "date": None, "tokens": []})


# -- where to start again ------------------------------------------------------------------------


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _expect_map_run(state: str, state_input: Any, record: Any) -> None:
    if record is not None and hasattr(record, "execution_counter"):
        with _lock:
            _pending_map_runs[(state, _canonical(state_input))] = record


# -- RedriveExecution ------------------------------------------------------------------------------


class NotRedrivable(Exception):
    """The execution cannot be redriven: AWS's reason."""


def redrive(execution: Any, client_token: str | None = None) -> datetime.datetime:
    """Redrive ``execution`` as AWS does; its ``redriveDate``."""
    now = clock()
    with _lock:
        redrives = _redrives(execution)
        for token, date, used in redrives["tokens"]:
            if client_token and token == client_token and now - used <= TOKEN_LIFETIME:
                return date
        reason = not_redrivable(execution, now)
        if reason:
            raise NotRedrivable(reason)
        events = _history(execution)
        definition = json.loads(execution.state_machine.definition)
        point = unsuccessful_state(definition.get("States", {}), events)
        redrives["count"] += 1
        redrives["date"] = now
        if client_token:
            redrives["tokens"] = [*redrives["tokens"], (client_token, now, now)][-KEPT_TOKENS:]
        count = redrives["count"]
    old_env = getattr(execution.exec_worker, "env", None)
    records = [_live(r) for r in old_env.map_run_record_pool_manager.get_all()] if old_env else []
    if point is None:
        state, state_input, map_run_arn = definition.get("StartAt"), execution.input_data, None
    else:
        state, state_input, map_run_arn = point.name, point.input, point.map_run_arn
    if map_run_arn:
        _expect_map_run(
            state, state_input, next((r for r in records if r.map_run_arn == map_run_arn), None)
        )
    _start_again(execution, definition, state, state_input, events, records, count, now)
    from ferry.local import emulator_executions

    emulator_executions._put(execution, "ExecutionsRedriven")
    logger.info("redriven %s at %s (redrive %d)", execution.exec_arn, state, count)
    return now


_COUNTS = (
    ("aborted", "aborted"), ("failed", "failed"), ("pending", "pending"),
    ("results_written", "resultsWritten"), ("running", "running"),
    ("succeeded", "succeeded"), ("timed_out", "timedOut"), ("total", "total"),
)  # fmt: skip


def _live(record: Any) -> Any:
    """A Map Run that can be redriven: ``record`` itself, or, for one the emulator saved
    across a stop and a start (``emulator_resume.RecordedMapRun``: its description only),
    the Map Run rebuilt from that description and its saved children."""
    if hasattr(record, "execution_counter"):
        return record
    from moto.stepfunctions.parser.api import MapRunStatus
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.map_run_record import (  # noqa: E501
        ExecutionCounter,
        ItemCounter,
        MapRunRecord,
    )

    from ferry.local import emulator_states

    described, item = record.describe(), record.list_item()
    live = MapRunRecord.__new__(MapRunRecord)
    live.update_event = threading.Event()
    live.map_run_arn = record.map_run_arn
    live.map_state_machine_arn = item.get("stateMachineArn")
    live.execution_arn = described["executionArn"]
    live.max_concurrency = described.get("maxConcurrency", 0)
    live.tolerated_failure_count = described.get("toleratedFailureCount", 0)
    live.tolerated_failure_percentage = described.get("toleratedFailurePercentage", 0.0)
    live.start_date = _aware(described["startDate"])
    live.stop_date = _aware(described.get("stopDate"))
    live.status = MapRunStatus(described["status"])
    live.execution_counter, live.item_counter = ExecutionCounter(), ItemCounter()
    for counter, key in (
        (live.execution_counter, "executionCounts"),
        (live.item_counter, "itemCounts"),
    ):
        for attribute, name in _COUNTS:
            getattr(counter, attribute).offset(int(described.get(key, {}).get(name, 0)))
    with emulator_states._lock:
        arns = emulator_states._MAP_RUN_CHILDREN.get(record.map_run_arn, [])
        children = [emulator_states._CHILDREN[a] for a in arns if a in emulator_states._CHILDREN]
    live.__dict__["ferry_children"] = children
    live.__dict__["ferry_redrive_count"] = int(described.get("redriveCount", 0))
    if described.get("redriveDate") is not None:
        live.__dict__["ferry_redrive_date"] = described["redriveDate"]
    return live


def _start_again(
    execution: Any,
    definition: dict[str, Any],
    state: str,
    state_input: Any,
    events: list[dict[str, Any]],
    records: list[Any],
    count: int,
    now: datetime.datetime,
) -> None:
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.asl.eval.evaluation_details import (
        EvaluationDetails,
        ExecutionDetails,
        StateMachineDetails,
    )

    definition = dict(definition, StartAt=state)
    details = EvaluationDetails(
        aws_execution_details=execution._get_start_aws_execution_details(),
        execution_details=ExecutionDetails(
            arn=execution.exec_arn,
            name=execution.name,
            role_arn=execution.role_arn,
            inpt=state_input,
            start_time=execution.start_date,
        ),
        state_machine_details=StateMachineDetails(
            arn=execution.state_machine.arn,
            name=execution.state_machine.name,
            typ=execution.state_machine.sm_type,
            definition=json.dumps(definition),
        ),
    )
    old_worker = execution.exec_worker
    comm = getattr(old_worker, "_execution_communication", None)
    if comm is not None:
        comm.__dict__["ferry_superseded"] = True  # the attempt before reports nothing more
    worker = _redriven_worker_class()(
        evaluation_details=details,
        exec_comm=execution._get_start_execution_worker_comm(),
        cloud_watch_logging_session=execution._cloud_watch_logging_session,
        activity_store=execution._activity_store,
    )
    worker.prepare(events, records, count)
    execution.exec_worker = worker
    execution.exec_status = ExecutionStatus.RUNNING
    execution.stop_date = None
    execution.error = None
    execution.cause = None
    execution.output = None
    execution.__dict__["ferry_ended"] = False
    worker.start()


_classes: dict[str, type] = {}


def _redriven_worker_class() -> type:
    """moto's execution worker, going on with the history so far after ``ExecutionRedriven``."""
    if "worker" in _classes:
        return _classes["worker"]
    from moto.stepfunctions.parser.api import ExecutionRedrivenEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker
    from moto.stepfunctions.parser.utils import TMP_THREADS

    class RedrivenWorker(ExecutionWorker):
        def prepare(self, events: list[dict[str, Any]], records: list[Any], count: int) -> None:
            # The environment exists before the thread starts: the execution is described,
            # its history and Map Runs read, from the moment it is redriven.
            self.ferry_program = self._get_evaluation_entrypoint()
            self.env = self._get_evaluation_environment()
            manager = self.env.event_manager
            _continue_history(manager, self.env.event_history_context, events)
            for record in records:
                self.env.map_run_record_pool_manager.add(record)
            manager.add_event(
                context=self.env.event_history_context,
                event_type=HistoryEventType.ExecutionRedriven,
                event_details=EventDetails(
                    executionRedrivenEventDetails=ExecutionRedrivenEventDetails(redriveCount=count)
                ),
            )

        def _execution_logic(self) -> None:
            self.ferry_program.eval(self.env)
            self._execution_communication.terminated()

        def start(self) -> None:
            thread = threading.Thread(target=self._execution_logic, daemon=True)
            TMP_THREADS.append(thread)
            thread.start()

    _classes["worker"] = RedrivenWorker
    return RedrivenWorker


def _continue_history(manager: Any, context: Any, events: list[dict[str, Any]]) -> None:
    manager._history_event_list.extend(events)
    manager._event_id_gen._next_id = len(events) + 1
    context.source_event_id = len(events)
    context.last_published_event_id = len(events)


def _superseded_workers_silent() -> None:
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

    terminated = BaseExecutionWorkerCommunication.terminated

    def ended(self: Any) -> None:
        # A stopped attempt's state may return after the execution was redriven: it is not
        # the execution's any more.
        if self.__dict__.get("ferry_superseded"):
            return
        terminated(self)

    BaseExecutionWorkerCommunication.terminated = ended


def _redrive_served() -> None:
    from moto.core.exceptions import JsonRESTError
    from moto.core.responses import ActionResult
    from moto.stepfunctions.responses import StepFunctionResponse

    from ferry.local import emulator_states

    def redrive_execution(self: Any) -> Any:
        arn = self._get_param("executionArn")
        if emulator_states._child(arn) is not None:
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
        record = next((r for r in _all_map_runs() if r.map_run_arn == body["mapRunArn"]), None)
        if record is None:
            return {"error": f"no Map Run {body['mapRunArn']}"}
        record.__dict__["ferry_redrive_count"] = int(body["redriveCount"])
    return {"clockOffsetSeconds": _clock_offset.total_seconds()}


# -- what DescribeExecution, ListExecutions, DescribeMapRun say ------------------------------------


def _redrive_fields_described() -> None:
    from moto.stepfunctions.responses import StepFunctionResponse

    from ferry.local import emulator_states

    describe = StepFunctionResponse.describe_execution
    list_executions = StepFunctionResponse.list_executions

    def described(self: Any) -> Any:
        answer = describe(self)
        result = answer.result
        arn = result.get("executionArn")
        if emulator_states._child(arn) is not None:
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

    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.map_run_record import (  # noqa: E501
        MapRunRecord,
    )

    describe_map_run = MapRunRecord.describe

    def map_run_described(self: Any) -> Any:
        result = describe_map_run(self)
        result["redriveCount"] = self.__dict__.get("ferry_redrive_count", 0)
        if self.__dict__.get("ferry_redrive_date") is not None:
            result["redriveDate"] = self.__dict__["ferry_redrive_date"]
        children = list(self.__dict__.get("ferry_children", []))
        unsuccessful = sum(1 for child in children if child["status"] in ("FAILED", "ABORTED"))
        ended = str(getattr(self.status, "value", self.status)) != "RUNNING"
        for key in ("executionCounts", "itemCounts"):
            # Children wait for a redrive only between its request and its start: none here.
            result[key]["pendingRedrive"] = 0
            result[key]["failuresNotRedrivable"] = 0
        if ended and self.__dict__.get("ferry_redrive_count", 0) >= MAX_MAP_RUN_REDRIVES:
            for key in ("executionCounts", "itemCounts"):
                result[key]["failuresNotRedrivable"] = unsuccessful
        return result

    MapRunRecord.describe = map_run_described


# -- a Map Run redriven in place ----------------------------------------------------------------


def _map_runs_redriven() -> None:
    from moto.stepfunctions.parser.api import MapRunStatus
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E501
        DistributedIterationComponent,
    )

    from ferry.local.emulator_states import states_failure

    run_map = DistributedIterationComponent._eval_body

    def _eval_body(self: Any, env: Any) -> None:
        eval_input = env.stack[-1]
        key = (eval_input.state_name, _canonical(env.states.get_input()))
        with _lock:
            record = _pending_map_runs.pop(key, None)
        if record is None:
            run_map(self, env)
            return
        fresh = eval_input.map_run_record
        pool = env.map_run_record_pool_manager
        pool._pool.pop(fresh.map_run_arn, None)
        pool.add(record)
        count = record.__dict__.get("ferry_redrive_count", 0)
        if count >= MAX_MAP_RUN_REDRIVES:
            raise states_failure(
                env,
                "StatesRuntime",
                f"The Map Run {record.map_run_arn} was redriven {count} times, the most a Map "
                "Run can be.",
                "MapRunFailed",
            )
        _check_children_redrivable(env, record)
        record.__dict__.update(
            ferry_redrive_count=count + 1, ferry_redrive_date=clock(), ferry_redriving=True
        )
        record.status = MapRunStatus.RUNNING
        record.stop_date = None
        eval_input.map_run_record = record
        manager = env.event_manager
        env.event_manager = _RedrivenMapRunEvents(manager, record.map_run_arn, count + 1)
        try:
            run_map(self, env)
        finally:
            if isinstance(env.event_manager, _RedrivenMapRunEvents):
                env.event_manager = manager
            record.__dict__["ferry_redriving"] = False

    DistributedIterationComponent._eval_body = _eval_body


def _check_children_redrivable(env: Any, record: Any) -> None:
    """The execution's role may redrive the Map Run's children (``states:RedriveExecution``)."""
    if _authorizer is None:
        return
    from ferry.local.authorization import Caller
    from ferry.local.emulator_states import states_failure
    from ferry.local.iam_actions import Check

    execution = env.states.context_object.context_object_data["Execution"]
    role_arn = execution.get("RoleArn")
    if not role_arn or ":role/" not in role_arn:
        return
    account = role_arn.split(":")[4]
    region = record.map_run_arn.split(":")[3]
    role_name = role_arn.rsplit("/", 1)[-1]
    caller = Caller(role_arn, f"arn:aws:sts::{account}:assumed-role/{role_name}/redrive", account)
    children = [
        child
        for child in list(record.__dict__.get("ferry_children", []))
        if child["status"] != "SUCCEEDED"
    ]
    for child in children[:1]:  # one check: the policy names the children by a pattern
        denial = _authorizer.authorize(
            caller, [Check("states:RedriveExecution", child["arn"])], region
        )
        if denial is not None:
            raise states_failure(env, "StatesRuntime", denial.message, "MapRunFailed")


class _RedrivenMapRunEvents:
    """The Map state's history while its Map Run is redriven: ``MapRunRedriven`` in place
    of ``MapRunStarted``."""

    def __init__(self, manager: Any, map_run_arn: str, count: int):
        self._manager = manager
        self._map_run_arn = map_run_arn
        self._count = count

    def add_event(self, context: Any, event_type: Any, event_details: Any = None, **kw: Any):
        from moto.stepfunctions.parser.api import HistoryEventType, MapRunRedrivenEventDetails
        from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

        if event_type == HistoryEventType.MapRunStarted:
            event_type = HistoryEventType.MapRunRedriven
            event_details = EventDetails(
                mapRunRedrivenEventDetails=MapRunRedrivenEventDetails(
                    mapRunArn=self._map_run_arn, redriveCount=self._count
                )
            )
        return self._manager.add_event(context, event_type, event_details, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._manager, name)


def kept_child(record: Any, job: Any) -> bool:
    """When ``record``'s Map Run is being redriven and ``job``'s child succeeded: its result
    is the job's, and it does not run again."""
    if not record.__dict__.get("ferry_redriving"):
        return False
    previous = _previous_child(record, job.job_index)
    if previous is None or previous["status"] != "SUCCEEDED":
        return False
    job.job_output = previous["output"]
    return True


def _previous_child(record: Any, index: int) -> dict[str, Any] | None:
    from ferry.local import emulator_states

    with emulator_states._lock:
        for child in record.__dict__.get("ferry_children", []):
            if child["index"] == index:
                return child
    return None


def redriven_child(record: Any, job: Any) -> dict[str, Any] | None:
    """When ``record``'s Map Run is being redriven and ``job``'s child did not succeed: that
    child, taken out of the Map Run's list and counts (it runs again under its ARN), with
    ``job`` set to run it from its unsuccessful state; else None."""
    if not record.__dict__.get("ferry_redriving"):
        return None
    from ferry.local import emulator_states

    previous = _previous_child(record, job.job_index)
    if previous is None:
        return None
    with emulator_states._lock:
        record.__dict__["ferry_children"].remove(previous)
        arns = emulator_states._MAP_RUN_CHILDREN.get(record.map_run_arn, [])
        if previous["arn"] in arns:
            arns.remove(previous["arn"])
    ended = "aborted" if previous["status"] in ("ABORTED", "RUNNING") else "failed"
    for counter in (record.execution_counter, record.item_counter):
        counter.total.offset(-1)
        getattr(counter, ended).offset(-1)
    program = job.job_program
    point = unsuccessful_state(program.states.states, previous.get("events") or [])
    if point is not None:
        state, state_input, map_run_arn = point.name, point.input, point.map_run_arn
        if map_run_arn:
            pool = None
            for candidate in _all_map_runs():
                if candidate.map_run_arn == map_run_arn:
                    pool = candidate
                    break
            _expect_map_run(state, state_input, pool)
        job.job_program = _FromState(program, state, state_input)
    return previous


def _all_map_runs() -> list[Any]:
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    records = []
    for _, _, backend in list(stepfunctions_parser_backends.iter_backends()):
        for machine in list(backend.state_machines):
            for execution in list(machine.executions):
                env = getattr(execution.exec_worker, "env", None)
                if env is not None and hasattr(env.map_run_record_pool_manager, "_pool"):
                    records.extend(env.map_run_record_pool_manager.get_all())
    return records


class _FromState:
    """A child's program, started at one of its states with the input it had there."""

    def __init__(self, program: Any, state: str, state_input: Any):
        self.program = program
        self.state = state
        self.state_input = state_input

    def eval(self, env: Any) -> None:
        from moto.stepfunctions.parser.asl.component.common.flow.start_at import StartAt

        env.states.reset(input_value=copy.deepcopy(self.state_input))
        program = copy.copy(self.program)
        program.start_at = StartAt(self.state)
        program.eval(env)


def continue_child_history(env: Any, previous: dict[str, Any]) -> int:
    """A redriven child's history: the one it had, then ``ExecutionRedriven``; its
    redriveCount."""
    from moto.stepfunctions.parser.api import ExecutionRedrivenEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    count = int(previous.get("redriveCount", 0)) + 1
    _continue_history(env.event_manager, env.event_history_context, previous.get("events") or [])
    env.event_manager.add_event(
        context=env.event_history_context,
        event_type=HistoryEventType.ExecutionRedriven,
        event_details=EventDetails(
            executionRedrivenEventDetails=ExecutionRedrivenEventDetails(redriveCount=count)
        ),
    )
    return count
