"""A Parallel state, and an inline Map, redriven as AWS redrives them: only the branches and
iterations that did not succeed run again (``ferry.local.emulator_redrive`` redrives the
execution; this, the Parallel or inline Map state it goes on from). moto ran them all again.

- A branch that reached its end (its last state exited) keeps that state's output as its
  result and does not run; one that did not goes on from its own unsuccessful state (the last
  of its states entered with no exited event after it) with the input it had there, or from
  its start. State names are unique in a definition, so each branch's events are told apart
  by its states' names.
- An inline Map's iterations interleave in the history, so each one's output is recorded as
  it succeeds (by execution, state, index and item; the last ``KEPT_ITERATIONS``, saved
  across ``down`` and ``up``): a redrive keeps those and runs the others again from their
  start.
"""

from __future__ import annotations

import copy
import datetime
import json
import threading
from typing import Any

from ferry.statemachine.execution_redrive import unsuccessful_state

_lock = threading.Lock()
#: Parallel states to redrive, by name and input (canonical JSON): their attempt's events.
_pending: dict[tuple[str, str], list[dict[str, Any]]] = {}
#: Inline Map iterations that succeeded, by execution, state, index and item: their output.
_iterations: dict[tuple[str, str, int, str], Any] = {}
KEPT_ITERATIONS = 20_000
#: Inline Map states (execution, state) to redrive; then being redriven.
_pending_maps: set[tuple[str, str]] = set()
_redriving_maps: set[tuple[str, str]] = set()


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def expect_parallel(state: str, state_input: Any, events: list[dict[str, Any]]) -> None:
    """The Parallel state ``state``, entered with ``state_input`` again, redrives the
    branches its attempt recorded in ``events`` (from its entered event on)."""
    with _lock:
        _pending[(state, canonical(state_input))] = events


def attempt_of(state: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of ``state``'s last attempt: from its last entered event on."""
    start = 0
    for index, event in enumerate(events):
        if (event.get("stateEnteredEventDetails") or {}).get("name") == state:
            start = index
    return events[start:]


def _branch_outcome(program: Any, events: list[dict[str, Any]]) -> tuple[str, Any, Any]:
    """``("kept", output, None)`` for a branch that reached its end, else ``("again",
    state, input)`` (state None: from its start)."""
    from moto.stepfunctions.parser.asl.component.state.state_continue_with import ContinueWithEnd

    states = program.states.states
    ends = {
        name for name, state in states.items() if isinstance(state.continue_with, ContinueWithEnd)
    }
    for event in reversed(events):
        exited = event.get("stateExitedEventDetails") or {}
        if exited.get("name") in ends:
            return "kept", json.loads(exited.get("output") or "null"), None
    point = unsuccessful_state(states, events)
    if point is None:
        return "again", None, None
    return "again", point.name, point.input


def expect_inline_map(execution_arn: str, state: str) -> None:
    """The inline Map ``state`` of ``execution_arn``, entered again, keeps the iterations
    that succeeded."""
    with _lock:
        _pending_maps.add((execution_arn, state))


def install() -> None:
    """Redrive Parallel states' unsuccessful branches, inline Maps' unsuccessful iterations."""
    _branches_redriven()
    _iterations_redriven()


def _iterations_redriven() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.inline_iteration_component import (  # noqa: E501
        InlineIterationComponent,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iteration_worker import (  # noqa: E501
        IterationWorker,
    )

    def where(env: Any) -> tuple[str, str]:
        context = env.states.context_object.context_object_data
        return context["Execution"]["Id"], context.get("State", {}).get("Name")

    run_map = InlineIterationComponent._eval_body

    def _eval_body(self: Any, env: Any) -> None:
        key = where(env)
        with _lock:
            redriving = key in _pending_maps
            _pending_maps.discard(key)
            if redriving:
                _redriving_maps.add(key)
        try:
            run_map(self, env)
        finally:
            if redriving:
                with _lock:
                    _redriving_maps.discard(key)

    InlineIterationComponent._eval_body = _eval_body
    evaluate = IterationWorker._eval_job

    def _eval_job(self: Any, env: Any, job: Any) -> None:
        execution = env.states.context_object.context_object_data["Execution"]["Id"]
        key = (execution, self._work_name, job.job_index, canonical(job.job_input))
        with _lock:
            if (execution, self._work_name) in _redriving_maps and key in _iterations:
                job.job_output = copy.deepcopy(_iterations[key])
                return  # it succeeded: its output stands
        evaluate(self, env, job)
        if not isinstance(job.job_output, Exception):
            with _lock:
                _iterations[key] = copy.deepcopy(job.job_output)
                while len(_iterations) > KEPT_ITERATIONS:  # the oldest first
                    _iterations.pop(next(iter(_iterations)))

    IterationWorker._eval_job = _eval_job


def _branches_redriven() -> None:
    from moto.stepfunctions.parser.asl.component.common.flow.start_at import StartAt
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branch_worker import (
        BranchWorker,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branches_decl import (
        BranchesDecl,
        BranchWorkerPool,
    )

    evaluate = BranchesDecl._eval_body

    def _eval_body(self: Any, env: Any) -> None:
        state = env.states.context_object.context_object_data.get("State", {}).get("Name")
        key = (state, canonical(env.states.get_input()))
        with _lock:
            events = _pending.pop(key, None)
        if events is None:
            evaluate(self, env)
            return
        input_value = env.stack.pop()
        outcomes = [_branch_outcome(program, events) for program in self.programs]
        again = [i for i, outcome in enumerate(outcomes) if outcome[0] == "again"]
        pool = BranchWorkerPool(workers_num=len(again))
        workers: dict[int, Any] = {}
        for index in again:
            _, start, start_input = outcomes[index]
            program = self.programs[index]
            frame = env.open_inner_frame()
            frame.states.reset(input_value=copy.deepcopy(input_value))
            if start is not None:
                program = copy.copy(program)
                program.start_at = StartAt(start)
                frame.states.reset(input_value=copy.deepcopy(start_input))
            workers[index] = BranchWorker(branch_worker_comm=pool, program=program, env=frame)
            workers[index].start()
        if again:
            pool.wait()
        failed = pool.get_exit_event_details()
        if failed is not None:
            for worker in workers.values():
                worker.stop(stop_date=datetime.datetime.now(), cause=None, error=None)
                env.close_frame(worker.env)
            raise _branch_failure(env, failed)
        results = []
        for index, outcome in enumerate(outcomes):
            if index in workers:
                results.append(workers[index].env.states.get_input())
                env.close_frame(workers[index].env)
            else:
                results.append(outcome[1])
        env.stack.append(results)

    BranchesDecl._eval_body = _eval_body


def _branch_failure(env: Any, details: dict[str, Any]) -> Exception:
    """The failure of a branch, as moto raises it for the Parallel state."""
    from moto.stepfunctions.parser.api import HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
        CustomErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    return FailureEventException(
        failure_event=FailureEvent(
            env=env,
            error_name=CustomErrorName(error_name=details.get("error")),
            event_type=HistoryEventType.ExecutionFailed,
            event_details=EventDetails(executionFailedEventDetails=details),
        )
    )
