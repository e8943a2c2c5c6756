"""The AWS emulator's Step Functions runs an execution's life as AWS does: its name, its
time limit, and the metrics it leaves behind. moto 5.2's interpreter does neither of the
first two fully, nor the third at all.

- **Names**: ``StartExecution`` refuses a name over 80 characters (``ValidationException``,
  "Member must have length less than or equal to 80") and a name with a character AWS
  refuses — whitespace, ``< > { } [ ] ? * " # % \\ ^ | ~ ` $ & , ; : /``, control characters
  — (``InvalidName``, "Invalid Name: '...'"). moto's own backend checks both; the
  interpreter's, which the emulator runs, checked neither. A ``states:startExecution`` task
  with a ``Name`` goes through the same call, and so fails as on AWS, with the SDK's
  exception name (``StepFunctions.ValidationException``, ``StepFunctions.InvalidNameException``;
  moto doubled the suffix of the first). The names the emulator generates itself (a
  Distributed Map's children) are checked by the same rule.
- **A definition's ``TimeoutSeconds``**: the execution ends when its time is up,
  ``ExecutionTimedOut`` at once and nothing after it, and ``StopExecution`` ends it
  ``ABORTED`` at once, with its ``error`` and ``cause``
  (``ferry.local.emulator_execution_endings``); ``DescribeExecution`` and ``ListExecutions``
  give a timed-out execution a ``stopDate``.
  (A Task's ``TimeoutSeconds``/``TimeoutSecondsPath`` is moto's own: the state stops waiting
  and fails with ``States.Timeout``, which ``States.ALL`` matches; a Lambda invoked by it
  runs on, as on AWS. ``HeartbeatSeconds`` applies to the tasks that send heartbeats,
  callback tasks and activities.)
- **A child execution a ``.sync`` task no longer waits for is stopped**: when the task
  times out, or its execution is stopped or times out, the execution it started is stopped
  (``StopExecution``, with the execution role, which needs ``states:StopExecution`` for
  ``.sync`` as on AWS); moto left it running.
- **A heartbeat missed** fails the task with ``States.Timeout``, which a ``Retry`` or
  ``Catch`` matches by that name or by ``States.HeartbeatTimeout`` (AWS: "only available
  inside the Catch and Retry fields"); moto's matched the first name only.
- **AWS/States metrics**: each execution counts, as AWS counts it, in CloudWatch's
  ``AWS/States`` namespace with the dimension ``StateMachineArn``: ``ExecutionsStarted`` when
  it starts, then one of ``ExecutionsSucceeded``, ``ExecutionsFailed``,
  ``ExecutionsTimedOut``, ``ExecutionsAborted`` when it ends — what the CDK's
  ``metric_failed()`` and ``metric_timed_out()`` (statistic Sum), and so the stack's alarms,
  read. They go into the emulator's CloudWatch of the execution's account and region.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ferry.local import emulator_execution_endings, emulator_metrics

logger = logging.getLogger(__name__)
_ending = threading.Lock()

#: AWS's limit on an execution's (and a Map Run's child execution's) name.
MAX_NAME_LENGTH = 80
#: The characters AWS refuses in an execution's name (besides control characters).
REFUSED_CHARACTERS = frozenset(' <>{}[]?*"#%\\^|~`$&,;:/')
NAMESPACE = "AWS/States"
#: The metric each final status counts in.
ENDED_METRICS = {
    "SUCCEEDED": "ExecutionsSucceeded",
    "FAILED": "ExecutionsFailed",
    "TIMED_OUT": "ExecutionsTimedOut",
    "ABORTED": "ExecutionsAborted",
}


def install() -> None:
    _names_checked()
    _task_error_names_as_the_sdk_names_them()
    emulator_execution_endings.install()
    _heartbeat_timeouts_matched()
    _abandoned_children_stopped()
    _metrics_sent()
    _stop_dates_of_timed_out_executions()


def name_problem(name: str) -> str | None:
    """Why AWS refuses ``name`` as an execution's name (its error code and message), or None."""
    if any(
        c in REFUSED_CHARACTERS or c.isspace() or ord(c) <= 0x1F or 0x7F <= ord(c) <= 0x9F
        for c in name
    ):
        return f"InvalidName: Invalid Name: '{name}'"
    if len(name) > MAX_NAME_LENGTH:
        return (
            f"ValidationException: 1 validation error detected: Value '{name}' at 'name' "
            f"failed to satisfy constraint: Member must have length less than or equal to "
            f"{MAX_NAME_LENGTH}"
        )
    return None


def check_name(name: str) -> None:
    """Raise AWS's error for an execution name AWS refuses (as ``StartExecution`` answers)."""
    from moto.stepfunctions.exceptions import InvalidName, NameTooLongException

    problem = name_problem(name)
    if problem is None:
        return
    if problem.startswith("InvalidName"):
        raise InvalidName(f"Invalid Name: '{name}'")
    raise NameTooLongException(name)


def _names_checked() -> None:
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    start = StepFunctionsParserBackend.start_execution

    def start_execution(self: Any, state_machine_arn: str, name: Any = None, *args, **kwargs):
        if name is not None:
            check_name(name)
        return start(self, state_machine_arn, name, *args, **kwargs)

    StepFunctionsParserBackend.start_execution = start_execution


def _task_error_names_as_the_sdk_names_them() -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
        CustomErrorName,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (  # noqa: E501
        StateTaskServiceSfn,
    )

    from_error = StateTaskServiceSfn._from_error

    def _from_error(self: Any, env: Any, ex: Exception) -> Any:
        failure = from_error(self, env, ex)
        name = getattr(failure.error_name, "error_name", None) or ""
        if name.endswith("ExceptionException"):  # the code already ends with "Exception"
            name = name.removesuffix("Exception")
            failure.error_name = CustomErrorName(name)
            for details in (failure.event_details or {}).values():
                if isinstance(details, dict) and "error" in details:
                    details["error"] = name
        return failure

    StateTaskServiceSfn._from_error = _from_error


def _heartbeat_timeouts_matched() -> None:
    import moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_factory  # noqa: F401, E501
    from moto.stepfunctions.parser.asl.component.common.error_name.error_name import ErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
        StatesErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (  # noqa: E501
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task import (
        StateTask,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_activitiy import (  # noqa: E501
        StateTaskActivity,
    )
    from moto.stepfunctions.parser.asl.eval.callback.callback import HeartbeatTimeoutError

    heartbeat = StatesErrorNameType.StatesHeartbeatTimeout.to_name()

    class HeartbeatTimedOut(StatesErrorName):
        """``States.Timeout``, as a missed heartbeat reports it: ``States.HeartbeatTimeout``
        matches it too."""

        def __init__(self) -> None:
            super().__init__(typ=StatesErrorNameType.StatesTimeout)

        def matches(self, error_name: str | None) -> bool:
            return error_name in (self.error_name, heartbeat)

        def __eq__(self, other: object) -> bool:
            # Defined here, so that Python asks this side first: ``ErrorEquals`` compares
            # its names with the error's either way round.
            return isinstance(other, ErrorName) and self.matches(other.error_name)

    def wrap(cls: type) -> None:
        from_error = cls.__dict__["_from_error"]

        def _from_error(self: Any, env: Any, ex: Exception) -> Any:
            failure = from_error(self, env, ex)
            if isinstance(ex, HeartbeatTimeoutError):
                failure.error_name = HeartbeatTimedOut()
            return failure

        cls._from_error = _from_error

    classes, seen = [StateTask, StateTaskActivity], set()
    while classes:  # every kind of task that reports its own errors
        cls = classes.pop()
        if cls in seen:
            continue
        seen.add(cls)
        if "_from_error" in cls.__dict__:
            wrap(cls)
        classes.extend(cls.__subclasses__())


_SYNC_CHILD = "__ferry_sync_child__"


def _abandoned_children_stopped() -> None:
    import moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn as sfn_task  # noqa: E501
    from moto.stepfunctions.parser.asl.eval.callback.callback import (
        CallbackOutcomeTimedOut,
        HeartbeatTimedOut,
    )

    service = sfn_task.StateTaskServiceSfn

    def remembered(build: Any) -> Any:
        def build_resolver(
            self: Any,
            env: Any,
            resource_runtime_part: Any,
            normalised_parameters: Any,
            state_credentials: Any,
        ) -> Any:
            started = env.stack[-1] if env.stack else None
            if isinstance(started, dict) and started.get("ExecutionArn"):
                # The task's own frame: what to stop if the task stops waiting.
                env.heap[_SYNC_CHILD] = (
                    started["ExecutionArn"],
                    resource_runtime_part.region,
                    state_credentials,
                )
            return build(
                self,
                env=env,
                resource_runtime_part=resource_runtime_part,
                normalised_parameters=normalised_parameters,
                state_credentials=state_credentials,
            )

        return build_resolver

    service._build_sync_resolver = remembered(service._build_sync_resolver)
    service._build_sync2_resolver = remembered(service._build_sync2_resolver)
    eval_sync = service._eval_sync

    def _eval_sync(self: Any, *args: Any, **kwargs: Any) -> Any:
        outcome = eval_sync(self, *args, **kwargs)
        env = kwargs.get("env") or args[0]
        child = env.heap.get(_SYNC_CHILD)
        # No result: the task timed out (its wait, or its frame ended), or its execution
        # stopped or timed out.
        abandoned = not outcome or isinstance(outcome, CallbackOutcomeTimedOut | HeartbeatTimedOut)
        if abandoned and child:
            arn, region, credentials = child
            try:
                client = sfn_task.boto_client_for(
                    region=region, service="stepfunctions", state_credentials=credentials
                )
                client.stop_execution(executionArn=arn)
            except Exception:  # as on AWS, a best effort: the task has ended all the same
                logger.exception("could not stop %s, which its task no longer waits for", arn)
        return outcome

    service._eval_sync = _eval_sync


def put_execution_metric(account: str, region: str, machine_arn: str, metric: str) -> None:
    """Count one in ``AWS/States`` ``metric`` for ``machine_arn``, in the emulator's CloudWatch."""
    dimensions = {"StateMachineArn": machine_arn}
    emulator_metrics.count(account, region, NAMESPACE, dimensions, {metric: 1})


def _machine_arn(execution: Any) -> str:
    # An execution of a version or alias counts for its state machine, as on AWS.
    return getattr(execution.state_machine, "source_arn", None) or execution.state_machine_arn


def _metrics_sent() -> None:
    from moto.stepfunctions.parser.backend.execution import (
        BaseExecutionWorkerCommunication,
        Execution,
    )

    start = Execution.start

    def started(self: Any) -> None:
        start(self)
        _put(self, "ExecutionsStarted")

    Execution.start = started
    terminated = BaseExecutionWorkerCommunication.terminated

    def ended(self: Any) -> None:
        # Once only: a stopped execution ends when it is stopped, and its worker, when the
        # running state returns, reports the end a second time.
        with _ending:
            if self.execution.__dict__.get("ferry_ended"):
                return
            self.execution.__dict__["ferry_ended"] = True
        terminated(self)
        status = getattr(self.execution.exec_status, "value", self.execution.exec_status)
        metric = ENDED_METRICS.get(str(status))
        if metric:
            _put(self.execution, metric)

    BaseExecutionWorkerCommunication.terminated = ended


def _put(execution: Any, metric: str) -> None:
    try:
        put_execution_metric(
            execution.account_id, execution.region_name, _machine_arn(execution), metric
        )
    except Exception:  # a metric lost must not change the execution
        logger.exception("could not count %s for %s", metric, execution.exec_arn)


def _stop_dates_of_timed_out_executions() -> None:
    from moto.stepfunctions.responses import StepFunctionResponse

    describe = StepFunctionResponse.describe_execution
    list_executions = StepFunctionResponse.list_executions

    def stop_date(self: Any, arn: str) -> Any:
        return self.stepfunction_backend.describe_execution(arn).stop_date

    def describe_execution(self: Any) -> Any:
        answer = describe(self)
        described = answer.result
        if described.get("status") == "TIMED_OUT" and "stopDate" not in described:
            described["stopDate"] = stop_date(self, described["executionArn"])
        return answer

    def listed(self: Any) -> Any:
        answer = list_executions(self)
        for item in answer.result.get("executions", []):
            if item.get("status") == "TIMED_OUT" and "stopDate" not in item:
                item["stopDate"] = stop_date(self, item["executionArn"])
        return answer

    StepFunctionResponse.describe_execution = describe_execution
    StepFunctionResponse.list_executions = listed
