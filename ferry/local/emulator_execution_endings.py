"""The AWS emulator's Step Functions ends an execution when its time is up or it is stopped,
at once and for good, as AWS does.

moto 5.2 marked the execution ``TIMED_OUT`` in time, but its history got
``ExecutionTimedOut`` only when the running state returned, and then that state's own ending
(a failure, a success) replaced it (``ExecutionFailed`` after the timeout). Here the
execution ends when its time is up: ``ExecutionTimedOut`` at once, and nothing after it.
Likewise ``StopExecution`` ends it ``ABORTED`` at once, its ``error`` and ``cause`` in
``ExecutionAborted`` (moto's went on ``RUNNING`` until the running state returned, a failure
of that state then made it ``FAILED``, and the error and cause were dropped).
"""

from __future__ import annotations

import threading
from typing import Any

#: The error and cause of the StopExecution request being served (moto's backend drops them).
_stopping = threading.local()


def install() -> None:
    _timeouts_recorded_at_once()
    _stops_recorded_at_once()
    _stop_details_kept()
    _closed_histories_silent()
    _final_states_kept()


def _close(env: Any) -> None:
    # The state that was running goes on in its thread until it returns; whatever it
    # records then is not the execution's any more.
    env.event_manager.__dict__["ferry_closed"] = True


def _timeouts_recorded_at_once() -> None:
    from moto.stepfunctions.parser.api import ExecutionTimedOutEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.program.program import Program
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramTimedOut

    evaluate = Program.eval

    def eval(self: Any, env: Any) -> None:
        evaluate(self, env)  # returns when the program ends, or when its time is up
        if env.is_frame() or not isinstance(env._program_state, ProgramTimedOut):
            return
        env.event_manager.add_event(
            context=env.event_history_context,
            event_type=HistoryEventType.ExecutionTimedOut,
            event_details=EventDetails(
                executionTimedOutEventDetails=ExecutionTimedOutEventDetails()
            ),
        )
        _close(env)

    Program.eval = eval


def _stops_recorded_at_once() -> None:
    from moto.stepfunctions.parser.api import ExecutionAbortedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped
    from moto.stepfunctions.parser.backend.execution import Execution

    stop = Execution.stop

    def stop_now(self: Any, stop_date: Any, error: Any, cause: Any) -> None:
        error, cause = getattr(_stopping, "details", None) or (error, cause)
        stop(self, stop_date, error, cause)
        env = self.exec_worker.env if self.exec_worker else None
        if env is None or not isinstance(env._program_state, ProgramStopped):
            return
        if env.event_manager.__dict__.get("ferry_closed"):
            return
        env.event_history_context.source_event_id = 0
        details = ExecutionAbortedEventDetails()
        if error:
            details["error"] = error
        if cause:
            details["cause"] = cause
        env.event_manager.add_event(
            context=env.event_history_context,
            event_type=HistoryEventType.ExecutionAborted,
            event_details=EventDetails(executionAbortedEventDetails=details),
        )
        _close(env)
        self.exec_worker._execution_communication.terminated()  # ABORTED now, as on AWS

    Execution.stop = stop_now


def _stop_details_kept() -> None:
    from moto.stepfunctions.responses import StepFunctionResponse

    stop_execution = StepFunctionResponse.stop_execution

    def stop_execution_request(self: Any) -> Any:
        _stopping.details = (self._get_param("error"), self._get_param("cause"))
        try:
            return stop_execution(self)
        finally:
            _stopping.details = None

    StepFunctionResponse.stop_execution = stop_execution_request


def _closed_histories_silent() -> None:
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager

    add_event = EventManager.add_event

    def add(self: Any, *args: Any, **kwargs: Any) -> None:
        if not self.__dict__.get("ferry_closed"):
            add_event(self, *args, **kwargs)

    EventManager.add_event = add


def _final_states_kept() -> None:
    """A timed-out or stopped execution stays so: the running state's own failure or end,
    when it returns, does not replace it (moto's ``set_error`` replaced any state)."""
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped, ProgramTimedOut

    def final(env: Any) -> bool:
        state = env._program_state
        return isinstance(state, ProgramTimedOut) or (
            isinstance(state, ProgramStopped) and not env.is_frame()
        )

    for name in ("set_ended", "set_error", "set_stop", "set_timed_out"):
        original = getattr(Environment, name)

        def unless_final(self: Any, *args: Any, _original: Any = original, **kw: Any) -> None:
            if not final(self):
                _original(self, *args, **kw)

        setattr(Environment, name, unless_final)
