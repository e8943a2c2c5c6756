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
- **A Distributed Map's children are executions**, listed, described and with a history of
  their own, as on AWS (``ferry.local.emulator_map_children``). When the execution is stopped
  or times out, its running children and its Map Run end ``ABORTED`` (moto's children ended
  ``FAILED`` or ``SUCCEEDED``).
- **A task that starts an execution of another state machine** (``states:startExecution``,
  ``.sync``, ``.sync:2``) sends ``StateMachineArn``, ``Input`` and ``Name`` as the API's
  ``stateMachineArn``, ``input`` and ``name``, and its result has AWS's names
  (``ExecutionArn``, ``Status``, ``StartDate`` as epoch milliseconds, ...): moto's port passed
  the names through unchanged, so no such task could run.
- **An execution started without a name is named with a UUID**, as AWS names it: moto's
  named every such execution "None", and the second was refused as already existing.
- **A Distributed Map's ``ResultWriter`` writes the children's results**: moto writes an
  empty manifest (``ferry.local.emulator_result_writer``).

An execution's name, its time limit and its ``AWS/States`` metrics are
``ferry.local.emulator_executions``'s, which ``install`` installs too.
``RedriveExecution`` is ``ferry.local.emulator_redrive``'s (installed after these).
"""

from __future__ import annotations

import datetime
import json
import uuid
from typing import Any

from ferry.local import emulator_executions, emulator_map_children, emulator_result_writer
from ferry.local.emulator_payload_limits import MAX_PAYLOAD_BYTES, payload_size


def install() -> None:
    _unnamed_executions_named()
    _nested_executions_as_on_aws()
    _tolerated_failures_accepted()
    _failures_tolerated_as_on_aws()
    _terminal_errors_not_in_states_all()
    _map_result_within_the_limit()
    emulator_map_children.install()
    emulator_result_writer.install()
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
