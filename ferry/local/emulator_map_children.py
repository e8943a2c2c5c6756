"""The AWS emulator's Step Functions keeps a Distributed Map's children as executions.

moto runs a Distributed Map's children as frames of the parent and keeps no history of them.
Here each child is an execution as on AWS: with its own history, listed by
``ListExecutions(mapRunArn=...)`` (with its ``statusFilter``), described by
``DescribeExecution`` and read with ``GetExecutionHistory`` — from the moment it starts, as
``RUNNING``, so that a run can be followed table by table while it runs. A child whose input
is over 256 KiB fails with ``States.DataLimitExceeded`` without running, as AWS refuses to
start it. ``DescribeMapRun`` counts each child once it ends as it ended (moto's counted a
failed or aborted one as still running, and one whose execution timed out as succeeded).

The children recorded here are what the ``ResultWriter`` writes
(``ferry.local.emulator_result_writer``) and what a redriven Map Run runs again or keeps
(``ferry.local.emulator_redrive_map_runs``, through ``REDRIVE_HOOKS``).
"""

from __future__ import annotations

import datetime
import json
import threading
from typing import Any

from ferry.local.emulator_executions import check_name
from ferry.local.emulator_payload_limits import MAX_PAYLOAD_BYTES, payload_size

#: How a Map Run being redriven treats its children (``ferry.local.emulator_redrive``
#: installs them): ``kept(record, job)`` (a child that succeeded: its result stands),
#: ``redriven(record, job)`` (one that did not: the child as it was, set to go on from its
#: unsuccessful state), ``continue_history(env, child)`` (its history so far, then
#: ``ExecutionRedriven``; its redriveCount).
REDRIVE_HOOKS: dict[str, Any] = {}
_lock = threading.Lock()
#: Child executions the emulator keeps listing (a long-running emulator forgets the oldest).
KEPT_CHILDREN = 20_000
#: Every child execution of a Distributed Map by its ARN; each map run's, in order.
_CHILDREN: dict[str, dict[str, Any]] = {}
_MAP_RUN_CHILDREN: dict[str, list[str]] = {}


def install() -> None:
    _children_recorded()
    _child_executions_listed()


def child_execution_name(index: int) -> str:
    """The name of a Distributed Map's child execution: its item's index."""
    return f"{index:08d}"


def child_execution_arn(map_run_arn: str, index: int) -> str:
    """A child's ARN, shaped as AWS's: the map run's, as an execution, with the child's name."""
    return f"{map_run_arn.replace(':mapRun:', ':execution:', 1)}:{child_execution_name(index)}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


# -- recorded as they start and end -----------------------------------------------------------


def _children_recorded() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.distributed_item_processor_worker import (  # noqa: E501
        DistributedItemProcessorWorker,
    )

    evaluate = DistributedItemProcessorWorker._eval_job

    def _eval_job(self: Any, env: Any, job: Any) -> None:
        record = self._map_run_record
        hooks = REDRIVE_HOOKS
        if hooks and hooks["kept"](record, job):
            return  # a redriven Map Run keeps a child that succeeded: its result stands
        child = _started(record, env, job, hooks)
        if payload_size(job.job_input) >= MAX_PAYLOAD_BYTES:
            ended = _refused_for_its_input(record, job)
        else:
            evaluate(self, env, job)
            ended = _ended(record, env, job)
        ended["stop"] = _now()
        ended["events"] = env.event_manager.get_event_history()
        with _lock:
            child.pop("manager", None)
            child.update(ended)  # readers copy a child under the lock: all of it or none

    DistributedItemProcessorWorker._eval_job = _eval_job


def _started(record: Any, env: Any, job: Any, hooks: dict[str, Any]) -> dict[str, Any]:
    """The child ``job`` runs as, listed from its start (as AWS lists a running child
    execution), with a history of its own; a redriven one with its start and history so far."""
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager

    previous = hooks["redriven"](record, job) if hooks else None
    child: dict[str, Any] = {
        "index": job.job_index,
        "input": job.job_input,
        "start": _now(),
        "status": "RUNNING",
        "arn": child_execution_arn(record.map_run_arn, job.job_index),
    }
    check_name(child_execution_name(job.job_index))
    env.event_manager = EventManager()  # the child's own history
    if previous is not None:  # redriven in place: its start, its history so far
        child["start"] = previous["start"]
        child["redriveCount"] = hooks["continue_history"](env, previous)
        child["redriveDate"] = _now()
    child["manager"] = env.event_manager
    with _lock:
        record.__dict__.setdefault("ferry_children", []).append(child)
        _CHILDREN[child["arn"]] = child
        _MAP_RUN_CHILDREN.setdefault(record.map_run_arn, []).append(child["arn"])
        while len(_CHILDREN) > KEPT_CHILDREN:  # the oldest first: dicts keep their order
            _CHILDREN.pop(next(iter(_CHILDREN)))
    return child


def _refused_for_its_input(record: Any, job: Any) -> dict[str, Any]:
    """AWS refuses to start a child execution whose input is over the limit: it fails."""
    for counter in (record.item_counter, record.execution_counter):
        counter.total.count()
        counter.failed.count()
    job.job_output = None
    return {
        "status": "FAILED",
        "error": "States.DataLimitExceeded",
        "cause": f"The input of item {job.job_index} exceeds 262144 bytes.",
    }


def _ended(record: Any, env: Any, job: Any) -> dict[str, Any]:
    """How the child that ran ended: its status, and its output or its error and cause."""
    from moto.stepfunctions.parser.asl.eval.program_state import (
        ProgramError,
        ProgramStopped,
        ProgramTimedOut,
    )

    state = env.program_state()
    _counted_as_aws_counts(record, state)
    if isinstance(state, ProgramStopped | ProgramTimedOut):
        return {"status": "ABORTED"}  # its execution was stopped or timed out
    if job.job_output is not None and not isinstance(state, ProgramError):
        return {"status": "SUCCEEDED", "output": job.job_output}
    details = (state.error if isinstance(state, ProgramError) else None) or {}
    return {
        "status": "FAILED",
        "error": details.get("error", "States.TaskFailed"),
        "cause": details.get("cause", ""),
    }


def _counted_as_aws_counts(record: Any, state: Any) -> None:
    """Correct moto's count of a child that ended in ``state`` (``DescribeMapRun``'s
    ``executionCounts`` and ``itemCounts``): moto left a failed or aborted child counted as
    running, and counted one whose execution timed out as succeeded."""
    from moto.stepfunctions.parser.asl.eval.program_state import (
        ProgramError,
        ProgramStopped,
        ProgramTimedOut,
    )

    executions, items = record.execution_counter, record.item_counter
    if isinstance(state, ProgramError | ProgramStopped):
        executions.running.offset(-1)
    elif isinstance(state, ProgramTimedOut):
        for counter in (executions, items):
            counter.succeeded.offset(-1)
            counter.results_written.offset(-1)
            counter.aborted.count()


# -- listed, described, their history read ----------------------------------------------------


def _child(arn: str) -> dict[str, Any] | None:
    """A copy of a child execution as it is now (running or ended), or None."""
    with _lock:
        child = _CHILDREN.get(arn)
        return None if child is None else dict(child)


def _child_description(child: dict[str, Any], map_run_arn: str) -> dict[str, Any]:
    machine = map_run_arn.split(":")[6].split("/")[0]
    prefix = map_run_arn.split(":mapRun:")[0]
    described = {
        "executionArn": child["arn"],
        "name": child_execution_name(child["index"]),
        "startDate": child["start"],
        "stateMachineArn": f"{prefix}:stateMachine:{machine}",
        "status": child["status"],
        "mapRunArn": map_run_arn,
    }
    if "stop" in child:
        described["stopDate"] = child["stop"]
    described["redriveCount"] = child.get("redriveCount", 0)
    if "redriveDate" in child:
        described["redriveDate"] = child["redriveDate"]
    return described


def _child_executions_listed() -> None:
    from moto.core.responses import ActionResult
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.responses import StepFunctionResponse

    list_executions = StepFunctionResponse.list_executions

    def listed(self: Any) -> Any:
        map_run_arn = self._get_param("mapRunArn")
        if not map_run_arn:
            return list_executions(self)
        status = self._get_param("statusFilter")
        with _lock:
            arns = list(_MAP_RUN_CHILDREN.get(map_run_arn, []))
        children = [child for child in map(_child, arns) if child is not None]
        return ActionResult(
            {
                "executions": [
                    _child_description(child, map_run_arn)
                    for child in children
                    if status is None or child["status"] == status
                ]
            }
        )

    StepFunctionResponse.list_executions = listed
    describe = StepFunctionResponse.describe_execution

    def describe_execution(self: Any) -> Any:
        child = _child(self._get_param("executionArn"))
        if child is None:
            return describe(self)
        return ActionResult(_child_described(child))

    StepFunctionResponse.describe_execution = describe_execution
    history = StepFunctionsParserBackend.get_execution_history

    def get_execution_history(self: Any, execution_arn: str) -> Any:
        child = _child(execution_arn)
        if child is None:
            return history(self, execution_arn)
        manager = child.get("manager")
        return {"events": manager.get_event_history() if manager else child["events"]}

    StepFunctionsParserBackend.get_execution_history = get_execution_history


def _child_described(child: dict[str, Any]) -> dict[str, Any]:
    """What ``DescribeExecution`` says of a child execution."""
    map_run_arn = child["arn"].rsplit(":", 1)[0].replace(":execution:", ":mapRun:", 1)
    described = _child_description(child, map_run_arn)
    described["input"] = json.dumps(child["input"])
    if child["status"] == "SUCCEEDED":
        described["output"] = json.dumps(child["output"])
    elif child["status"] == "FAILED":
        described.update(error=child.get("error"), cause=child.get("cause"))
    described["redriveStatus"] = (
        "NOT_REDRIVABLE" if child["status"] in ("SUCCEEDED", "RUNNING") else "REDRIVABLE_BY_MAP_RUN"
    )
    return described
