"""The AWS emulator's Step Functions keeps the rules of AWS's that moto 5.2 does not.

- **``States.ALL`` catches neither ``States.DataLimitExceeded`` nor ``States.Runtime``**: on
  AWS those are terminal (a ``Catch`` or ``Retry`` must name them); moto's wildcard matched
  them, so a definition that relied on ``States.ALL`` to clean up after them passed locally.
- **256 KiB for a Map state's result and for each child of a Distributed Map**: moto checks
  a state's output and a task's result, not a Map's result before its ``ResultPath`` (a
  Distributed Map without a ``ResultWriter`` returns every child's output inline), nor the
  input of each child execution.
- **``ToleratedFailurePercentage`` / ``ToleratedFailureCount``**: moto's grammar reads the
  percentage only as a decimal (``100.0``), and its Distributed Map never fails because a
  child failed. Here a whole percentage is read as AWS reads it, and a Map Run whose failed
  children exceed the tolerance (by default: any) fails with
  ``States.ExceedToleratedFailureThreshold``.
- **A Distributed Map's children are executions**: each with its own history, listed by
  ``ListExecutions(mapRunArn=...)`` (with its ``statusFilter``), described by
  ``DescribeExecution`` and read with ``GetExecutionHistory``, as on AWS (moto runs them as
  frames of the parent and keeps no history of them) — from the moment each starts, as
  ``RUNNING``, so that a run can be followed table by table while it runs. When the
  execution is stopped or times out, its running children and its Map Run end ``ABORTED``
  (moto's children ended ``FAILED`` or ``SUCCEEDED``). ``DescribeMapRun`` counts each
  child once it ends as it ended (moto's counted a failed or aborted one as still running).
- **A task that starts an execution of another state machine** (``states:startExecution``,
  ``.sync``, ``.sync:2``) sends ``StateMachineArn``, ``Input`` and ``Name`` as the API's
  ``stateMachineArn``, ``input`` and ``name``, and its result has AWS's names
  (``ExecutionArn``, ``Status``, ``StartDate`` as epoch milliseconds, ...): moto's port passed
  the names through unchanged, so no such task could run.
- **An execution started without a name is named with a UUID**, as AWS names it: moto's
  named every such execution "None", and the second was refused as already existing.
- **A Distributed Map's ``ResultWriter`` writes the children's results**: moto writes an
  empty manifest. Here each child's input, status, output, or error and cause, are recorded
  as it ends, and written as AWS writes them: ``<prefix>/<map run id>/manifest.json`` and
  ``SUCCEEDED_0.json`` / ``FAILED_0.json``, arrays of the child executions' descriptions.

An execution's name, its time limit and its ``AWS/States`` metrics are
``ferry.local.emulator_executions``'s, which ``install`` installs too.
``RedriveExecution`` is ``ferry.local.emulator_redrive``'s (installed after these).
"""

from __future__ import annotations

import datetime
import json
import threading
import uuid
from typing import Any

from ferry.local import emulator_executions
from ferry.local.emulator_executions import check_name

#: AWS's limit on a state's input or output, a task's result, a child execution's input.
MAX_PAYLOAD_BYTES = 256 * 1024


def install() -> None:
    _unnamed_executions_named()
    _nested_executions_as_on_aws()
    _tolerated_failures_accepted()
    _failures_tolerated_as_on_aws()
    _terminal_errors_not_in_states_all()
    _map_result_within_the_limit()
    _children_recorded()
    _result_writer_writes_results()
    _child_executions_listed()
    emulator_executions.install()


def _unnamed_executions_named() -> None:
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    start = StepFunctionsParserBackend.start_execution

    def start_execution(self: Any, state_machine_arn: str, name: Any = None, *args, **kwargs):
        return start(self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)

    StepFunctionsParserBackend.start_execution = start_execution


def _nested_executions_as_on_aws() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_sfn,
    )

    service = state_task_service_sfn.StateTaskServiceSfn
    normalise = service._normalise_parameters

    def normalise_parameters(
        self: Any, parameters: dict, boto_service_name: Any = None, service_action_name: Any = None
    ) -> None:
        normalise(self, parameters, boto_service_name, service_action_name)  # Input as JSON
        for key in list(parameters):
            parameters[key[:1].lower() + key[1:]] = parameters.pop(key)

    def normalise_response(
        self: Any, response: Any, boto_service_name: Any = None, service_action_name: Any = None
    ) -> None:
        if not isinstance(response, dict):
            return
        for key in list(response):
            value = response.pop(key)
            if isinstance(value, datetime.datetime):
                value = int(value.timestamp() * 1000)
            response[key[:1].upper() + key[1:]] = value

    service._normalise_parameters = normalise_parameters
    service._normalise_response = normalise_response


def payload_size(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return len(text.encode("utf-8"))


def states_failure(env: Any, kind_name: str, cause: str, event: str = "TaskFailed") -> Exception:
    """A failure named by one of Step Functions' own errors (``StatesErrorNameType.<kind>``),
    as the interpreter raises its own."""
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
        StatesErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (  # noqa: E501
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    kind = getattr(StatesErrorNameType, kind_name)
    return FailureEventException(
        failure_event=FailureEvent(
            env=env,
            error_name=StatesErrorName(typ=kind),
            event_type=getattr(HistoryEventType, event),
            event_details=EventDetails(
                executionFailedEventDetails=ExecutionFailedEventDetails(
                    error=kind.to_name(), cause=cause
                )
            ),
        )
    )


def _data_limit_exceeded(env: Any, cause: str) -> Exception:
    return states_failure(env, "StatesStatesDataLimitExceeded", cause)


def _tolerated_failures_accepted() -> None:
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    create = StepFunctionsParserBackend.create_state_machine
    update = StepFunctionsParserBackend.update_state_machine

    def create_state_machine(self: Any, name: str, definition: str, *args: Any, **kw: Any) -> Any:
        return create(self, name, tolerance_as_moto_reads_it(definition), *args, **kw)

    def update_state_machine(
        self: Any, arn: str, definition: Any = None, *args: Any, **kw: Any
    ) -> Any:
        if isinstance(definition, str):
            definition = tolerance_as_moto_reads_it(definition)
        return update(self, arn, definition, *args, **kw)

    StepFunctionsParserBackend.create_state_machine = create_state_machine
    StepFunctionsParserBackend.update_state_machine = update_state_machine


def tolerance_as_moto_reads_it(definition: str) -> str:
    """The definition with each ``ToleratedFailurePercentage`` a decimal number."""
    try:
        document = json.loads(definition)
    except ValueError:
        return definition

    def convert(node: Any) -> None:
        if isinstance(node, dict):
            value = node.get("ToleratedFailurePercentage")
            if node.get("Type") == "Map" and isinstance(value, int):
                node["ToleratedFailurePercentage"] = float(value)
            for item in node.values():
                convert(item)
        elif isinstance(node, list):
            for item in node:
                convert(item)

    convert(document)
    return json.dumps(document)


def _exceeded(env: Any, cause: str) -> Exception:
    return states_failure(env, "StatesExceedToleratedFailureThreshold", cause, "MapRunFailed")


def _failures_tolerated_as_on_aws() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E501
        DistributedIterationComponent,
    )

    run = DistributedIterationComponent._map_run

    def _map_run(self: Any, env: Any, eval_input: Any) -> None:
        run(self, env, eval_input)
        record = eval_input.map_run_record
        children = record.__dict__.get("ferry_children", [])
        failed = sum(1 for child in children if child["status"] == "FAILED")
        if not failed:
            return
        count = int(record.tolerated_failure_count or 0)
        percentage = float(record.tolerated_failure_percentage or 0)
        if failed > count and failed * 100 > percentage * len(children):
            raise _exceeded(
                env,
                f"The specified tolerated failure threshold was exceeded: {failed} of "
                f"{len(children)} child executions failed",
            )

    DistributedIterationComponent._map_run = _map_run


def _terminal_errors_not_in_states_all() -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import (
        ErrorEqualsDecl,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
        StatesErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (  # noqa: E501
        StatesErrorNameType,
    )

    terminal = {
        StatesErrorNameType.StatesStatesDataLimitExceeded,
        StatesErrorNameType.StatesRuntime,
    }
    matches = ErrorEqualsDecl._eval_body

    def _eval_body(self: Any, env: Any) -> None:
        error_name = env.stack[-1]
        if (
            isinstance(error_name, StatesErrorName)
            and error_name.typ in terminal
            and ErrorEqualsDecl._STATE_ALL_ERROR in self.error_names
        ):
            env.stack.pop()
            env.stack.append(False)  # only an ErrorEquals that names it matches it
            return
        matches(self, env)

    ErrorEqualsDecl._eval_body = _eval_body


def _map_result_within_the_limit() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map import StateMap

    execute = StateMap._eval_execution

    def _eval_execution(self: Any, env: Any) -> None:
        execute(self, env)
        if env.stack and payload_size(env.stack[-1]) >= MAX_PAYLOAD_BYTES:
            raise _data_limit_exceeded(
                env,
                f"The state/task '{self.name}' returned a result with a size exceeding the "
                "maximum number of bytes service limit.",
            )

    StateMap._eval_execution = _eval_execution


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


def _children_recorded() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.distributed_item_processor_worker import (  # noqa: E501
        DistributedItemProcessorWorker,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager
    from moto.stepfunctions.parser.asl.eval.program_state import (
        ProgramError,
        ProgramStopped,
        ProgramTimedOut,
    )

    evaluate = DistributedItemProcessorWorker._eval_job

    def _eval_job(self: Any, env: Any, job: Any) -> None:
        record = self._map_run_record
        hooks = REDRIVE_HOOKS
        if hooks and hooks["kept"](record, job):
            return  # a redriven Map Run keeps a child that succeeded: its result stands
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
            # Listed from its start, as AWS lists a running child execution.
            record.__dict__.setdefault("ferry_children", []).append(child)
            _CHILDREN[child["arn"]] = child
            _MAP_RUN_CHILDREN.setdefault(record.map_run_arn, []).append(child["arn"])
            while len(_CHILDREN) > KEPT_CHILDREN:  # the oldest first: dicts keep their order
                _CHILDREN.pop(next(iter(_CHILDREN)))
        ended: dict[str, Any] = {}
        if payload_size(job.job_input) >= MAX_PAYLOAD_BYTES:
            # AWS refuses to start a child execution whose input is over the limit.
            ended.update(
                status="FAILED",
                error="States.DataLimitExceeded",
                cause=f"The input of item {job.job_index} exceeds 262144 bytes.",
            )
            for counter in (record.item_counter, record.execution_counter):
                counter.total.count()
                counter.failed.count()
            job.job_output = None
        else:
            evaluate(self, env, job)
            state = env.program_state()
            _counted_as_aws_counts(record, state)
            if isinstance(state, ProgramStopped | ProgramTimedOut):
                ended.update(status="ABORTED")  # its execution was stopped or timed out
            elif job.job_output is not None and not isinstance(state, ProgramError):
                ended.update(status="SUCCEEDED", output=job.job_output)
            else:
                details = (state.error if isinstance(state, ProgramError) else None) or {}
                ended.update(
                    status="FAILED",
                    error=details.get("error", "States.TaskFailed"),
                    cause=details.get("cause", ""),
                )
        ended["stop"] = _now()
        ended["events"] = env.event_manager.get_event_history()
        with _lock:
            child.pop("manager", None)
            child.update(ended)  # readers copy a child under the lock: all of it or none

    DistributedItemProcessorWorker._eval_job = _eval_job


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


def child_execution_name(index: int) -> str:
    """The name of a Distributed Map's child execution: its item's index."""
    return f"{index:08d}"


def child_execution_arn(map_run_arn: str, index: int) -> str:
    """A child's ARN, shaped as AWS's: the map run's, as an execution, with the child's name."""
    return f"{map_run_arn.replace(':mapRun:', ':execution:', 1)}:{child_execution_name(index)}"


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
        map_run_arn = child["arn"].rsplit(":", 1)[0].replace(":execution:", ":mapRun:", 1)
        described = _child_description(child, map_run_arn)
        described["input"] = json.dumps(child["input"])
        if child["status"] == "SUCCEEDED":
            described["output"] = json.dumps(child["output"])
        elif child["status"] == "FAILED":
            described.update(error=child.get("error"), cause=child.get("cause"))
        described["redriveStatus"] = (
            "NOT_REDRIVABLE"
            if child["status"] in ("SUCCEEDED", "RUNNING")
            else "REDRIVABLE_BY_MAP_RUN"
        )
        return ActionResult(described)

    StepFunctionResponse.describe_execution = describe_execution
    history = StepFunctionsParserBackend.get_execution_history

    def get_execution_history(self: Any, execution_arn: str) -> Any:
        child = _child(execution_arn)
        if child is None:
            return history(self, execution_arn)
        manager = child.get("manager")
        return {"events": manager.get_event_history() if manager else child["events"]}

    StepFunctionsParserBackend.get_execution_history = get_execution_history


_MAP_RUN = "__ferry_map_run__"


def _result_writer_writes_results() -> None:
    from moto.stepfunctions.parser.api import MapRunStatus
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E501
        DistributedIterationComponent,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.resource_eval import (  # noqa: E501
        resource_eval_s3,
    )
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped, ProgramTimedOut

    ResourceEvalS3 = resource_eval_s3.ResourceEvalS3
    run_map = DistributedIterationComponent._eval_body

    def _eval_body(self: Any, env: Any) -> None:
        # Each frame has its own heap: the Map's ResultWriter finds its own map run here (moto
        # takes the last map run of the execution, a nested Map's when Maps are nested).
        record = env.heap[_MAP_RUN] = env.stack[-1].map_run_record
        try:
            run_map(self, env)
        finally:
            if isinstance(env.program_state(), ProgramStopped | ProgramTimedOut):
                # The execution was stopped or timed out: its Map Run is aborted, as on AWS
                # (moto's ended SUCCEEDED, or FAILED).
                record.set_stop(status=MapRunStatus.ABORTED)

    DistributedIterationComponent._eval_body = _eval_body

    from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.result_writer_decl import (  # noqa: E501
        ResultWriter,
    )

    def write(self: Any, env: Any) -> None:
        # ResultWriter's Parameters are paths into the Map state's input, as on AWS; moto
        # evaluates them against the children's outputs.
        outputs = env.stack.pop()
        env.stack.append(env.states.get_input())
        self.parargs.eval(env=env)
        parameters = env.stack.pop()
        env.stack.pop()
        env.stack.extend([outputs, parameters])
        self.resource_eval.eval_resource(env=env)

    ResultWriter._eval_body = write

    @staticmethod  # type: ignore[misc]
    def _handle_put_object(env: Any, resource_runtime_part: Any, state_credentials: Any) -> None:
        parameters = env.stack.pop()
        env.stack.pop()  # the children's outputs: written below, from the record
        s3 = ResourceEvalS3._get_s3_client(
            resource_runtime_part=resource_runtime_part, state_credentials=state_credentials
        )
        record = env.heap.get(_MAP_RUN) or env.map_run_record_pool_manager.get_all().pop()
        map_run_arn = record.map_run_arn
        map_run_id = map_run_arn.split(":")[-1]
        prefix = parameters.get("Prefix", "")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        machine_arn = env.states.context_object.context_object_data["StateMachine"]["Id"]
        children = sorted(record.__dict__.get("ferry_children", []), key=lambda c: c["index"])
        files: dict[str, list[dict[str, Any]]] = {"FAILED": [], "PENDING": [], "SUCCEEDED": []}
        for status in ("SUCCEEDED", "FAILED"):
            entries = [
                _execution(child, machine_arn, map_run_arn)
                for child in children
                if child["status"] == status
            ]
            if not entries:
                continue
            key = f"{prefix}{map_run_id}/{status}_0.json"
            body = json.dumps(entries).encode()
            s3.put_object(Bucket=parameters["Bucket"], Key=key, Body=body)
            files[status].append({"Key": key, "Size": len(body)})
        manifest = {
            "DestinationBucket": parameters["Bucket"],
            "MapRunArn": map_run_arn,
            "ResultFiles": files,
        }
        key = f"{prefix}{map_run_id}/manifest.json"
        s3.put_object(
            Bucket=parameters["Bucket"], Key=key, Body=json.dumps(manifest, indent=2).encode()
        )
        env.stack.append(
            {
                "MapRunArn": map_run_arn,
                "ResultWriterDetails": {"Bucket": parameters["Bucket"], "Key": key},
            }
        )

    ResourceEvalS3._handle_put_object = _handle_put_object


def _execution(child: dict[str, Any], machine_arn: str, map_run_arn: str) -> dict[str, Any]:
    """A child execution as AWS describes it in a ResultWriter file."""
    name = child_execution_name(child["index"])
    entry: dict[str, Any] = {
        "ExecutionArn": child["arn"],
        "Input": json.dumps(child["input"]),
        "InputDetails": {"Included": True},
        "Name": name,
        "StartDate": child["start"],
        "StateMachineArn": machine_arn,
        "Status": child["status"],
        "StopDate": child["stop"],
        "RedriveCount": child.get("redriveCount", 0),
        # A child is redriven with its parent (its Map Run), never alone.
        "RedriveStatus": (
            "NOT_REDRIVABLE" if child["status"] == "SUCCEEDED" else "REDRIVABLE_BY_MAP_RUN"
        ),
    }
    if "redriveDate" in child:
        entry["RedriveDate"] = child["redriveDate"]
    if child["status"] == "SUCCEEDED":
        entry.update(Output=json.dumps(child["output"]), OutputDetails={"Included": True})
    else:
        entry.update(Error=child.get("error"), Cause=child.get("cause"))
    return entry
