"""A Distributed Map's Map Run redriven in place, as AWS redrives it (``ferry.local.
emulator_redrive`` redrives the execution; this, the Map Runs of its unsuccessful states).

- The same Map Run: its ARN, ``redriveCount`` + 1, ``redriveDate``, ``MapRunRedriven`` in the
  history in place of ``MapRunStarted``; ``DescribeMapRun`` gives both, and counts in
  ``executionCounts`` / ``itemCounts`` ``pendingRedrive`` and ``failuresNotRedrivable``.
- A child that succeeded keeps its result and does not run; one that did not runs again
  under its own ARN, from its own unsuccessful state with the input it had there (its start
  date kept, its history going on after ``ExecutionRedriven``); a Distributed Map in it
  redrives its own Map Run the same way. The ResultWriter then writes every child's result.
- At most 1,000 redrives of a Map Run: then the Map fails with ``States.Runtime``. The
  execution's role needs ``states:RedriveExecution`` on the children, as on AWS.
- A Map Run the emulator saved across a stop and a start (its description only) is rebuilt
  from that description and its saved children (``live``).
"""

from __future__ import annotations

import copy
import datetime
import json
import threading
from collections.abc import Callable
from typing import Any

from ferry.statemachine.execution_redrive import MAX_MAP_RUN_REDRIVES, unsuccessful_state

_lock = threading.Lock()
#: Map Runs to redrive, by the Map state's name and its input (canonical JSON).
_pending_map_runs: dict[tuple[str, str], Any] = {}
_authorizer: Any = None


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


#: The clock of the redrive dates (``emulator_redrive`` gives its own).
now: Callable[[], datetime.datetime] = utc_now


def install() -> None:
    """Redrive Map Runs in place (after ``emulator_states.install``, whose patches these
    wrap and whose hooks, ``emulator_map_children.REDRIVE_HOOKS``, these fill)."""
    from ferry.local import emulator_map_children

    emulator_map_children.REDRIVE_HOOKS.update(
        kept=kept_child, redriven=redriven_child, continue_history=continue_child_history
    )
    _map_runs_redriven()
    _map_runs_described()


def authorize_with(authorizer: Any) -> None:
    """Check that the execution's role may redrive a Map Run's children, with ``authorizer``."""
    global _authorizer
    _authorizer = authorizer


def aware(moment: Any) -> datetime.datetime | None:
    """``moment`` (a datetime, or an ISO 8601 text) as an aware datetime (UTC when naive)."""
    if moment is None:
        return None
    if isinstance(moment, str):
        moment = datetime.datetime.fromisoformat(moment.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment


def canonical(value: Any) -> str:
    """``value`` as JSON that two equal values write alike."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def expect_map_run(state: str, state_input: Any, record: Any) -> None:
    """The Map state ``state``, entered with ``state_input`` again, redrives ``record``."""
    if record is not None and hasattr(record, "execution_counter"):
        with _lock:
            _pending_map_runs[(state, canonical(state_input))] = record


_COUNTS = (
    ("aborted", "aborted"), ("failed", "failed"), ("pending", "pending"),
    ("results_written", "resultsWritten"), ("running", "running"),
    ("succeeded", "succeeded"), ("timed_out", "timedOut"), ("total", "total"),
)  # fmt: skip


def live(record: Any) -> Any:
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

    from ferry.local import emulator_map_children

    described, item = record.describe(), record.list_item()
    live = MapRunRecord.__new__(MapRunRecord)
    live.update_event = threading.Event()
    live.map_run_arn = record.map_run_arn
    live.map_state_machine_arn = item.get("stateMachineArn")
    live.execution_arn = described["executionArn"]
    live.max_concurrency = described.get("maxConcurrency", 0)
    live.tolerated_failure_count = described.get("toleratedFailureCount", 0)
    live.tolerated_failure_percentage = described.get("toleratedFailurePercentage", 0.0)
    live.start_date = aware(described["startDate"])
    live.stop_date = aware(described.get("stopDate"))
    live.status = MapRunStatus(described["status"])
    live.execution_counter, live.item_counter = ExecutionCounter(), ItemCounter()
    for counter, key in (
        (live.execution_counter, "executionCounts"),
        (live.item_counter, "itemCounts"),
    ):
        for attribute, name in _COUNTS:
            getattr(counter, attribute).offset(int(described.get(key, {}).get(name, 0)))
    with emulator_map_children._lock:
        arns = emulator_map_children._MAP_RUN_CHILDREN.get(record.map_run_arn, [])
        known = emulator_map_children._CHILDREN
        children = [known[a] for a in arns if a in known]
    live.__dict__["ferry_children"] = children
    live.__dict__["ferry_redrive_count"] = int(described.get("redriveCount", 0))
    if described.get("redriveDate") is not None:
        live.__dict__["ferry_redrive_date"] = described["redriveDate"]
    return live


def continue_history(manager: Any, context: Any, events: list[dict[str, Any]]) -> None:
    """A new history (``manager``, ``context``) that goes on after ``events``."""
    manager._history_event_list.extend(events)
    manager._event_id_gen._next_id = len(events) + 1
    context.source_event_id = len(events)
    context.last_published_event_id = len(events)


def _map_runs_described() -> None:
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
        key = (eval_input.state_name, canonical(env.states.get_input()))
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
            ferry_redrive_count=count + 1, ferry_redrive_date=now(), ferry_redriving=True
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
    from ferry.local import emulator_map_children

    with emulator_map_children._lock:
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
    from ferry.local import emulator_map_children

    previous = _previous_child(record, job.job_index)
    if previous is None:
        return None
    with emulator_map_children._lock:
        record.__dict__["ferry_children"].remove(previous)
        arns = emulator_map_children._MAP_RUN_CHILDREN.get(record.map_run_arn, [])
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
            for candidate in all_map_runs():
                if candidate.map_run_arn == map_run_arn:
                    pool = candidate
                    break
            expect_map_run(state, state_input, pool)
        if type(program.states.states[state]).__name__ == "StateParallel":
            from ferry.local.emulator_redrive_branches import attempt_of, expect_parallel

            expect_parallel(state, state_input, attempt_of(state, previous.get("events") or []))
        job.job_program = _FromState(program, state, state_input)
    return previous


def all_map_runs() -> list[Any]:
    """Every Map Run of every execution the emulator runs or ran (since it started)."""
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
    continue_history(env.event_manager, env.event_history_context, previous.get("events") or [])
    env.event_manager.add_event(
        context=env.event_history_context,
        event_type=HistoryEventType.ExecutionRedriven,
        event_details=EventDetails(
            executionRedrivenEventDetails=ExecutionRedrivenEventDetails(redriveCount=count)
        ),
    )
    return count
