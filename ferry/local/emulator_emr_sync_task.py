"""The emulator's ``arn:aws:states:::emr-serverless:startJobRun.sync`` task
(``ferry.local.emulator_emr_serverless`` installs it in moto's Step Functions).

The task is authorized for the execution's role as on AWS (``emr-serverless:StartJobRun`` on
the application, ``iam:PassRole`` of the job role to EMR Serverless, the managed rule ``.sync``
needs, ``GetJobRun``), records the job run in moto's EMR Serverless backend and runs it on a
thread (``ferry.local.emulator_emr_job_runner``) with the job role's credentials; the state
polls the run until it ends, and a failed run fails the task with ``States.TaskFailed``.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from ferry.local.authorization import Authorizer, Caller, Check
from ferry.local.emulator_emr_job_runner import JobRunner

_TERMINAL_JOB_STATES = {"SUCCESS", "FAILED", "CANCELLED"}
_FAILED_JOB_STATES = {"FAILED", "CANCELLED"}
#: The rule Step Functions manages to learn that a ``.sync`` job run ended.
SYNC_RULE = "StepFunctionsGetEventsForEMRServerlessJobRule"
#: The parameters of ``startJobRun`` that a state may give.
_START_JOB_RUN_PARAMETERS = {
    "ApplicationId", "ExecutionRoleArn", "Name", "JobDriver", "ClientToken",
    "ConfigurationOverrides", "Tags", "ExecutionTimeoutMinutes",
}  # fmt: skip


def api_parameters(value: Any, keep: frozenset[str] = frozenset({"Tags"})) -> Any:
    """Step Functions' PascalCase parameters as the EMR Serverless API's camelCase.

    Tags are the caller's own keys and stay as they are.
    """
    if isinstance(value, dict):
        return {
            key[:1].lower() + key[1:]: (item if key in keep else api_parameters(item))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [api_parameters(item) for item in value]
    return value


def task_service_class(authorizer: Authorizer, runner: JobRunner) -> type:
    """moto's service task for ``emr-serverless``, authorizing with ``authorizer`` and running
    the jobs with ``runner``."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import (
        ResourceCondition,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (  # noqa: E501
        StateTaskServiceCallback,
    )

    class StateTaskServiceEmrServerless(StateTaskServiceCallback):
        """``arn:aws:states:::emr-serverless:startJobRun.sync`` on the local runtime."""

        def __init__(self) -> None:
            # moto 5.2 ends every integration pattern with callback_endpoint.interrupt_all(),
            # and creates that endpoint only for services that accept task tokens; without
            # WaitForTaskToken here a .sync task fails with "'NoneType' ... interrupt_all".
            super().__init__(
                supported_integration_patterns={
                    ResourceCondition.Sync,
                    ResourceCondition.WaitForTaskToken,
                }
            )

        def _get_supported_parameters(self) -> set[str] | None:
            if self.resource.api_action.lower() != "startjobrun":
                return None
            return set(_START_JOB_RUN_PARAMETERS)

        def _eval_service_task(
            self, env, resource_runtime_part, normalised_parameters, state_credentials
        ):
            request = api_parameters(normalised_parameters)
            _authorize(self, env, state_credentials, resource_runtime_part, request, authorizer)
            started = _start_job_run(resource_runtime_part, request, authorizer, runner)
            env.stack.append(started)

        def _build_sync_resolver(
            self, env, resource_runtime_part, normalised_parameters, state_credentials
        ):
            return _resolver(self, env, resource_runtime_part, env.stack.pop())

    return StateTaskServiceEmrServerless


def _backend(runtime: Any) -> Any:
    from moto.emrserverless.models import emrserverless_backends

    return emrserverless_backends[runtime.account][runtime.region]


def _application_arn(runtime: Any, request: dict[str, Any]) -> str:
    return (
        f"arn:aws:emr-serverless:{runtime.region}:{runtime.account}:"
        f"/applications/{request['applicationId']}"
    )


def _start_checks(runtime: Any, request: dict[str, Any]) -> list[Check]:
    """What Step Functions needs of the execution's role to start a job run and follow it."""
    application = _application_arn(runtime, request)
    return [
        Check("emr-serverless:StartJobRun", application),
        Check(
            "iam:PassRole",
            request["executionRoleArn"],
            {"iam:PassedToService": "emr-serverless.amazonaws.com"},
        ),
        *(
            Check(
                f"events:{action}",
                f"arn:aws:events:{runtime.region}:{runtime.account}:rule/{SYNC_RULE}",
            )
            for action in ("PutTargets", "PutRule", "DescribeRule")
        ),
        Check("emr-serverless:GetJobRun", f"{application}/jobruns/*"),
    ]


def _authorize(
    task: Any,
    env: Any,
    state_credentials: Any,
    runtime: Any,
    request: dict[str, Any],
    authorizer: Authorizer,
) -> None:
    """Fail the task as Step Functions does when the execution's role may not."""
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
        CustomErrorName,
    )

    role_arn = state_credentials.role_arn
    caller = Caller(
        role_arn,
        f"arn:aws:sts::{runtime.account}:assumed-role/{role_arn.rsplit('/', 1)[-1]}/step-functions",
        runtime.account,
    )
    denial = authorizer.authorize(caller, _start_checks(runtime, request), runtime.region)
    if denial is None:
        return
    name = "EMRServerless.AccessDeniedException"  # as Step Functions names it
    raise _failed(task, env, CustomErrorName(name), name, denial.message)


def _start_job_run(
    runtime: Any, request: dict[str, Any], authorizer: Authorizer, runner: JobRunner
) -> dict[str, Any]:
    """Record the job run in moto's backend and run it on a thread; what the sync resolver
    follows."""
    job_run = _backend(runtime).start_job_run(
        application_id=request["applicationId"],
        client_token=request.get("clientToken") or str(uuid.uuid4()),
        execution_role_arn=request["executionRoleArn"],
        job_driver=request.get("jobDriver"),
        configuration_overrides=request.get("configurationOverrides"),
        tags=request.get("tags"),
        execution_timeout_minutes=request.get("executionTimeoutMinutes"),
        name=request.get("name"),
    )
    job_run.state = "RUNNING"

    def run() -> None:
        try:
            credentials = authorizer.assume(
                request["executionRoleArn"],
                "emr-serverless.amazonaws.com",
                f"emr-job-{job_run.id}",
                runtime.region,
                source_arn=_application_arn(runtime, request),
            )
        except PermissionError as error:
            succeeded, details = False, str(error)
        else:
            succeeded, details = runner.run(
                job_run.id, request.get("jobDriver") or {}, runtime.region, credentials
            )
        job_run.state = "SUCCESS" if succeeded else "FAILED"
        job_run.state_details = details or None

    threading.Thread(target=run, name=f"emr-job-{job_run.id}", daemon=True).start()
    return {"ApplicationId": job_run.application_id, "JobRunId": job_run.id, "Arn": job_run.arn}


def _resolver(task: Any, env: Any, runtime: Any, started: dict[str, Any]) -> Any:
    """The poll of the job run: None while it runs, its output once it succeeded; the task's
    failure once it failed or was cancelled."""
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
        StatesErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    backend = _backend(runtime)

    def resolve() -> Any | None:
        job_run = backend.get_job_run(started["ApplicationId"], started["JobRunId"])
        if job_run.state not in _TERMINAL_JOB_STATES:
            return None
        output = {
            **started,
            "Name": job_run.name,
            "State": job_run.state,
            "StateDetails": job_run.state_details,
        }
        if job_run.state in _FAILED_JOB_STATES:
            failed = StatesErrorNameType.StatesTaskFailed
            raise _failed(
                task, env, StatesErrorName(typ=failed), failed.to_name(), to_json_str(output)
            )
        return output

    return resolve


def _failed(task: Any, env: Any, error_name: Any, error: str, cause: str) -> Exception:
    """The task's failure, as Step Functions reports a failed service task."""
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    return FailureEventException(
        FailureEvent(
            env=env,
            error_name=error_name,
            event_type=HistoryEventType.TaskFailed,
            event_details=EventDetails(
                taskFailedEventDetails=TaskFailedEventDetails(
                    resource=task._get_sfn_resource(),
                    resourceType=task._get_sfn_resource_type(),
                    error=error,
                    cause=cause,
                )
            ),
        )
    )
