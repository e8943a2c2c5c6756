"""The AWS emulator's EMR Serverless: ``startJobRun.sync`` runs the job with spark-submit.

moto 5.2 has no Step Functions integration for EMR Serverless. Here a
``arn:aws:states:::emr-serverless:startJobRun.sync`` task records the job run in moto's EMR
Serverless backend, runs the job's entry point with ``spark-submit`` in local mode on a
thread, and the state polls the run until it ends, as Step Functions does on AWS; a failed
run fails the task with ``States.TaskFailed``.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any

from ferry import faults
from ferry.spark_job import spark_submit

_TERMINAL_JOB_STATES = {"SUCCESS", "FAILED", "CANCELLED"}
_FAILED_JOB_STATES = {"FAILED", "CANCELLED"}


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


def run_spark_job(
    job_driver: dict[str, Any], log_path: Path, fault_file: faults.FaultFile | None = None
) -> tuple[bool, str]:
    """Run the job's entry point with spark-submit in local mode; (succeeded, details)."""
    submit = job_driver.get("sparkSubmit") or {}
    entry_point = str(submit.get("entryPoint", ""))
    if entry_point.startswith("file://"):
        entry_point = entry_point.removeprefix("file://")
    elif entry_point.startswith("s3://"):
        entry_point = _download(entry_point, log_path.parent)
    arguments = [str(argument) for argument in submit.get("entryPointArguments") or []]
    environment = None
    if fault_file is not None and os.path.exists(fault_file.path):
        # The job's own fail points, for failure drills of the Spark copier.
        with open(fault_file.path) as handle:
            environment = {"FERRY_FAULTS": handle.read()}
    return spark_submit(entry_point, arguments, log_path, environment=environment)


def _download(uri: str, folder: Path) -> str:
    import boto3

    bucket, _, key = uri.removeprefix("s3://").partition("/")
    target = folder / Path(key).name
    folder.mkdir(parents=True, exist_ok=True)
    boto3.client("s3", endpoint_url=_own_endpoint()).download_file(bucket, key, str(target))
    return str(target)


def _own_endpoint() -> str:
    from moto.settings import moto_server_port

    return f"http://127.0.0.1:{moto_server_port()}"


def install(state_dir: Path, fault_file: faults.FaultFile | None = None) -> None:
    """Serve ``emr-serverless:startJobRun.sync`` tasks; job logs go under ``state_dir/spark``."""
    from moto.emrserverless.models import emrserverless_backends
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
        StatesErrorName,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import (
        state_task_factory,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_factory as factory,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import (
        ResourceCondition,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (  # noqa: E501
        StateTaskServiceCallback,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

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
            return {
                "ApplicationId", "ExecutionRoleArn", "Name", "JobDriver", "ClientToken",
                "ConfigurationOverrides", "Tags", "ExecutionTimeoutMinutes",
            }  # fmt: skip

        def _backend(self, runtime: Any) -> Any:
            return emrserverless_backends[runtime.account][runtime.region]

        def _eval_service_task(
            self, env, resource_runtime_part, normalised_parameters, state_credentials
        ):  # noqa: E501
            request = api_parameters(normalised_parameters)
            backend = self._backend(resource_runtime_part)
            job_run = backend.start_job_run(
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
            log_path = state_dir / "spark" / f"{job_run.id}.log"

            def run() -> None:
                succeeded, details = run_spark_job(
                    request.get("jobDriver") or {}, log_path, fault_file
                )
                job_run.state = "SUCCESS" if succeeded else "FAILED"
                job_run.state_details = details or None

            threading.Thread(target=run, name=f"emr-job-{job_run.id}", daemon=True).start()
            env.stack.append(
                {
                    "ApplicationId": job_run.application_id,
                    "JobRunId": job_run.id,
                    "Arn": job_run.arn,
                }
            )

        def _build_sync_resolver(
            self, env, resource_runtime_part, normalised_parameters, state_credentials
        ):  # noqa: E501
            started = env.stack.pop()
            backend = self._backend(resource_runtime_part)

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
                    raise FailureEventException(
                        FailureEvent(
                            env=env,
                            error_name=StatesErrorName(typ=StatesErrorNameType.StatesTaskFailed),
                            event_type=HistoryEventType.TaskFailed,
                            event_details=EventDetails(
                                taskFailedEventDetails=TaskFailedEventDetails(
                                    resource=self._get_sfn_resource(),
                                    resourceType=self._get_sfn_resource_type(),
                                    error=StatesErrorNameType.StatesTaskFailed.to_name(),
                                    cause=to_json_str(output),
                                )
                            ),
                        )
                    )
                return output

            return resolve

    moto_factory = factory.state_task_service_for

    def state_task_service_for(service_name: str) -> Any:
        if service_name == "emr-serverless":
            return StateTaskServiceEmrServerless()
        return moto_factory(service_name)

    # The task factory imported the function by name: replace it where it is looked up.
    factory.state_task_service_for = state_task_service_for
    state_task_factory.state_task_service_for = state_task_service_for
