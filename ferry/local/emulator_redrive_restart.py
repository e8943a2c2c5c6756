"""A redriven execution starts again (``ferry.local.emulator_redrive`` decides whether and
from where): the same execution, with a new interpreter that begins at its unsuccessful
state, whose history goes on after ``ExecutionRedriven`` and which holds the Map Runs of the
attempt before. That attempt, when its running state returns, reports nothing more.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from ferry.local.emulator_redrive_map_runs import continue_history


def install() -> None:
    _superseded_workers_silent()


def start_again(
    execution: Any,
    definition: dict[str, Any],
    state: str,
    state_input: Any,
    events: list[dict[str, Any]],
    records: list[Any],
    count: int,
) -> None:
    """Run ``execution`` again from ``state`` with ``state_input``: a new interpreter whose
    history goes on after ``events``, with the Map Runs ``records``."""
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
            continue_history(manager, self.env.event_history_context, events)
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
