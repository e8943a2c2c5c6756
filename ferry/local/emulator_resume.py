"""Step Functions executions across a stop and a start of the AWS emulator.

On AWS an execution never notices anything; the emulator runs each one in a thread of its
process, which a stop ends. So the emulator's saved state (``ferry.local.
emulator_snapshot``) holds each execution without its interpreter: its fields, its history,
its Map Runs' descriptions, and, for one that was running, **where it was**: the last
top-level state it entered and that state's input. After a start, once the server serves,
each such execution is **resumed at that state**, under its own ARN, its history going on
from where it was (``resume_all``):

- a Task runs again (its earlier attempt may have done its work: Lambda and Step Functions
  promise no more than at-least-once either, and every step of the pipeline converges when
  run again for the same event);
- a Wait waits its whole time again; a Map or Parallel state runs again whole;
- a ``states:startExecution.sync`` task whose child execution had started waits for that
  same child (resumed too) instead of starting another.

An execution that cannot be resumed (its state machine's definition changed so that the
state is gone, a resume that fails) is recorded **ABORTED** with the error
``Ferry.EmulatorStopped``.
"""

from __future__ import annotations

import datetime
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

#: The error of an execution the emulator stopped and could not resume.
STOPPED_ERROR = "Ferry.EmulatorStopped"
STOPPED_CAUSE = (
    "The local runtime's AWS emulator stopped while this execution ran (ferry local down) "
    "and could not resume it."
)
_SYNC_START = "arn:aws:states:::states:startExecution.sync"


# -- recorded (what the snapshot holds) -------------------------------------------------------


class RecordedMapRun:
    """A Map Run of a saved execution: its description, as it was."""

    def __init__(self, arn: str, description: dict[str, Any], item: dict[str, Any]):
        self.map_run_arn = arn
        self._description = description
        self._item = item

    def describe(self) -> dict[str, Any]:
        return self._description

    def list_item(self) -> dict[str, Any]:
        return self._item

    def update(self, **_: Any) -> None:
        return None  # its Map Run has ended


class _RecordedMapRuns:
    def __init__(self, runs: list[RecordedMapRun]):
        self._runs = {run.map_run_arn: run for run in runs}

    def get(self, arn: str) -> RecordedMapRun | None:
        return self._runs.get(arn)

    def get_all(self) -> list[RecordedMapRun]:
        return list(self._runs.values())


class _NoCallbacks:
    """A saved execution waits for no task token."""

    def heartbeat(self, callback_id: str) -> bool:
        return False

    def notify(self, callback_id: str, outcome: Any) -> bool:
        return False


class _RecordedEvents:
    def __init__(self, events: list[dict[str, Any]]):
        self._events = events

    def get_event_history(self) -> list[dict[str, Any]]:
        return list(self._events)


class _RecordedEnvironment:
    def __init__(self, events: list[dict[str, Any]], map_runs: list[RecordedMapRun]):
        self.event_manager = _RecordedEvents(events)
        self.map_run_record_pool_manager = _RecordedMapRuns(map_runs)
        self.callback_pool_manager = _NoCallbacks()


class RecordedWorker:
    """What an execution's interpreter leaves once saved: its history and Map Runs."""

    def __init__(self, events: list[dict[str, Any]], map_runs: list[RecordedMapRun]):
        self.env = _RecordedEnvironment(events, map_runs)

    def stop(self, **_: Any) -> None:
        return None  # nothing runs


def _worker_record(worker: Any) -> tuple[list[dict[str, Any]], list[RecordedMapRun]]:
    environment = getattr(worker, "env", None)
    if environment is None:
        return [], []
    events = list(environment.event_manager.get_event_history())
    runs = []
    for record in list(environment.map_run_record_pool_manager.get_all()):
        try:
            runs.append(RecordedMapRun(record.map_run_arn, record.describe(), record.list_item()))
        except Exception:  # noqa: BLE001 - a Map Run that cannot describe itself is left out
            logger.warning("not saved: the Map Run %s", getattr(record, "map_run_arn", "?"))
    return events, runs


def recorded_worker(worker: Any) -> tuple[Any, ...]:
    """A pickle reduction of an execution's interpreter: its record."""
    return RecordedWorker, _worker_record(worker)


def recorded(execution: Any, moment: datetime.datetime) -> tuple[Any, ...]:
    """A pickle reduction of an execution: its fields, its interpreter replaced by its
    record, and for a running one where to resume it (``ferry_resume``)."""
    from moto.stepfunctions.parser.api import ExecutionStatus

    state = dict(execution.__dict__)
    events, runs = _worker_record(state.get("exec_worker"))
    state["exec_worker"] = RecordedWorker(events, runs)
    state["ferry_resume"] = None
    if state.get("exec_status") == ExecutionStatus.RUNNING:
        state["ferry_resume"] = resume_point(
            execution.state_machine.definition, events, execution.input_data
        )
    return _rebuilt, (type(execution), state)


def _rebuilt(kind: type, state: dict[str, Any]) -> Any:
    obj = kind.__new__(kind)
    obj.__dict__.update(state)
    return obj


def resume_point(
    definition: str, events: list[dict[str, Any]], execution_input: Any
) -> dict[str, Any]:
    """Where a running execution resumes: its last top-level state entered, with that
    state's input; and, for a ``startExecution.sync`` task that started its child, the
    start's answer (the child to wait for)."""
    document = json.loads(definition)
    states = document.get("States", {})
    point: dict[str, Any] = {"state": document.get("StartAt"), "input": execution_input}
    submitted = None
    for event in events:
        entered = event.get("stateEnteredEventDetails")
        if entered and entered.get("name") in states:
            point = {"state": entered["name"], "input": json.loads(entered.get("input") or "{}")}
            submitted = None
        details = event.get("taskSubmittedEventDetails")
        if details and str(details.get("resource", "")).startswith("startExecution"):
            submitted = details.get("output")
    resource = str(states.get(point["state"], {}).get("Resource", ""))
    if submitted and resource.startswith(_SYNC_START):
        point["child"] = json.loads(submitted)
    return point


# -- resumed -------------------------------------------------------------------------------------


def resume_all() -> list[str]:
    """Resume every execution saved while it ran; the ARNs resumed."""
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    resumed = []
    for _, _, backend in list(stepfunctions_parser_backends.iter_backends()):
        for machine in list(backend.state_machines):
            for execution in list(machine.executions):
                point = execution.__dict__.pop("ferry_resume", None)
                if point is None:
                    continue
                try:
                    _resume(execution, point)
                except Exception:  # noqa: BLE001 - recorded as stopped instead
                    logger.exception("could not resume %s", execution.exec_arn)
                    _stopped(execution)
                    continue
                logger.info("resumed %s at %s", execution.exec_arn, point["state"])
                resumed.append(execution.exec_arn)
    return resumed


def resume_when_serving(ready: Callable[[], bool], timeout: float = 120.0) -> threading.Thread:
    """Resume the saved executions once ``ready()`` (the server answers), from a thread."""

    def wait_then_resume() -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                logger.error("the server did not answer: no execution resumed")
                return
            time.sleep(0.1)
        resume_all()

    thread = threading.Thread(target=wait_then_resume, name="resume-executions", daemon=True)
    thread.start()
    return thread


def _stopped(execution: Any) -> None:
    from moto.stepfunctions.parser.api import ExecutionStatus

    execution.exec_status = ExecutionStatus.ABORTED
    execution.stop_date = datetime.datetime.now(datetime.UTC)
    execution.error = STOPPED_ERROR
    execution.cause = STOPPED_CAUSE


def _resume(execution: Any, point: dict[str, Any]) -> None:
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.asl.eval.evaluation_details import (
        EvaluationDetails,
        ExecutionDetails,
        StateMachineDetails,
    )

    definition = json.loads(execution.state_machine.definition)
    if point["state"] not in definition.get("States", {}):
        raise ValueError(f"the state {point['state']!r} is not in the definition")
    definition["StartAt"] = point["state"]
    details = EvaluationDetails(
        aws_execution_details=execution._get_start_aws_execution_details(),
        execution_details=ExecutionDetails(
            arn=execution.exec_arn,
            name=execution.name,
            role_arn=execution.role_arn,
            inpt=point["input"],
            start_time=execution.start_date,
        ),
        state_machine_details=StateMachineDetails(
            arn=execution.state_machine.arn,
            name=execution.state_machine.name,
            typ=execution.state_machine.sm_type,
            definition=json.dumps(definition),
        ),
    )
    history = execution.exec_worker.env.event_manager.get_event_history()
    worker = _resumed_worker_class()(
        evaluation_details=details,
        exec_comm=execution._get_start_execution_worker_comm(),
        cloud_watch_logging_session=execution._cloud_watch_logging_session,
        activity_store=execution._activity_store,
    )
    worker.ferry_history = history
    worker.ferry_child = point.get("child")
    execution.exec_worker = worker
    execution.exec_status = ExecutionStatus.RUNNING
    execution.stop_date = None
    worker.start()


_classes: dict[str, type] = {}


def _resumed_worker_class() -> type:
    """moto's execution worker, starting with the history so far instead of a new one."""
    if "worker" in _classes:
        return _classes["worker"]
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    class ResumedWorker(ExecutionWorker):
        ferry_history: list[dict[str, Any]] = []
        ferry_child: dict[str, Any] | None = None

        def _execution_logic(self) -> None:
            program = self._get_evaluation_entrypoint()
            self.env = self._get_evaluation_environment()
            manager = self.env.event_manager
            manager._history_event_list.extend(self.ferry_history)
            manager._event_id_gen._next_id = len(self.ferry_history) + 1
            self.env.event_history_context.source_event_id = len(self.ferry_history)
            self.env.ferry_child = self.ferry_child
            program.eval(self.env)
            self._execution_communication.terminated()

    _classes["worker"] = ResumedWorker
    return ResumedWorker


def install() -> None:
    """A resumed ``startExecution.sync`` task waits for the child it had started."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_sfn,
    )

    service = state_task_service_sfn.StateTaskServiceSfn
    start = service._eval_service_task

    def _eval_service_task(self: Any, env: Any, *args: Any, **kwargs: Any) -> None:
        child = getattr(env, "ferry_child", None)
        if child is not None and self._get_boto_service_action() == "start_execution":
            env.ferry_child = None  # once: a retry of the task starts a new child
            env.stack.append(dict(child))
            return
        start(self, env, *args, **kwargs)

    service._eval_service_task = _eval_service_task
