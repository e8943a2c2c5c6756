"""What the emulator needs beyond moto, installed into moto's server process.

moto 5.2 executes state machines, but three pieces of the pipeline have no emulation:

- **Lambda** invocations need Docker. Here a function whose handler names a module of this
  project (``lambdas.plan.handler``) runs in-process, with a Lambda-like context; an
  exception becomes the error payload Lambda returns (``errorType``, ``errorMessage``), so
  Step Functions' ``Retry``/``Catch`` see the same error names as on AWS.
- **EMR Serverless** ``startJobRun.sync`` is unsupported. Here it records the job run in
  moto's EMR Serverless backend, runs the job's entry point with ``spark-submit`` in local
  mode, and the state polls the run until it ends, as Step Functions does on AWS.
- **EventBridge** rules cannot target Step Functions. Here such a target starts an
  execution, with the rule's input transformer applied.

Every patch is small and named; moto is pinned exactly because they touch its internals.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import threading
import time
import traceback
import uuid
from copy import copy
from pathlib import Path
from typing import Any

from ferry import faults
from ferry.spark_job import spark_submit

logger = logging.getLogger(__name__)

#: Handlers of these packages run in-process; anything else keeps moto's behaviour.
IN_PROCESS_PACKAGES = ("lambdas.",)

_TERMINAL_JOB_STATES = {"SUCCESS", "FAILED", "CANCELLED"}
_FAILED_JOB_STATES = {"FAILED", "CANCELLED"}


#: Faults the tests arm for the in-process Lambdas (``ferry.faults``), by writing this file
#: in the emulator's state folder.
FAULTS_FILE = "faults.json"
_fault_file: faults.FaultFile | None = None


def install(state_dir: Path) -> None:
    """Patch moto (in this process) and switch on state machine execution."""
    global _fault_file
    from moto.core.config import default_user_config

    default_user_config["stepfunctions"]["execute_state_machine"] = True
    _fault_file = faults.FaultFile(state_dir / FAULTS_FILE)
    _install_in_process_lambda()
    _install_emr_serverless(state_dir)
    _install_eventbridge_to_step_functions()


# -- Lambda ------------------------------------------------------------------------------------


class LambdaContext:
    """The attributes of AWS's Lambda context object that handlers and Powertools read."""

    def __init__(self, function: Any):
        self.function_name = function.function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = function.function_arn
        self.memory_limit_in_mb = int(function.memory_size or 128)
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function.function_name}"
        self.log_stream_name = self.aws_request_id
        self._deadline = time.monotonic() + float(function.timeout or 900)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def invoke_in_process(function: Any, event: Any) -> tuple[str, bool, str]:
    """Run the function's handler here; (payload, errored, logs) as moto expects."""
    module_name, _, attribute = function.handler.rpartition(".")
    if isinstance(event, str | bytes):
        event = json.loads(event or "{}")
    try:
        if _fault_file is not None:
            _fault_file.refresh()
        handler = getattr(importlib.import_module(module_name), attribute)
        result = handler(event, LambdaContext(function))
        return json.dumps(result), False, ""
    except Exception as error:  # Lambda reports the error; it does not crash the service
        name = error.error_name if isinstance(error, faults.InjectedFault) else type(error).__name__
        logger.info("%s failed: %s: %s", function.function_name, name, error)
        payload = {
            "errorMessage": str(error),
            "errorType": name,
            "stackTrace": traceback.format_exception(error),
        }
        return json.dumps(payload), True, ""


def _install_in_process_lambda() -> None:
    from moto.awslambda.models import LambdaFunction

    docker_invoke = LambdaFunction._invoke_lambda

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        if str(self.handler).startswith(IN_PROCESS_PACKAGES):
            return invoke_in_process(self, event)
        return docker_invoke(self, event)

    LambdaFunction._invoke_lambda = _invoke_lambda


# -- EMR Serverless ----------------------------------------------------------------------------


def _lower_first(value: Any, keep: frozenset[str] = frozenset({"Tags"})) -> Any:
    """Step Functions' PascalCase parameters as the EMR Serverless API's camelCase."""
    if isinstance(value, dict):
        return {
            key[:1].lower() + key[1:]: (item if key in keep else _lower_first(item))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_lower_first(item) for item in value]
    return value


def run_spark_job(job_driver: dict[str, Any], log_path: Path) -> tuple[bool, str]:
    """Run the job's entry point with spark-submit in local mode; (succeeded, details)."""
    submit = job_driver.get("sparkSubmit") or {}
    entry_point = str(submit.get("entryPoint", ""))
    if entry_point.startswith("file://"):
        entry_point = entry_point.removeprefix("file://")
    elif entry_point.startswith("s3://"):
        entry_point = _download(entry_point, log_path.parent)
    arguments = [str(argument) for argument in submit.get("entryPointArguments") or []]
    environment = None
    if _fault_file is not None and os.path.exists(_fault_file.path):
        # The job's own fail points (``spark.*``), for failure drills of the Spark copier.
        with open(_fault_file.path) as handle:
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


def _install_emr_serverless(state_dir: Path) -> None:
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
            request = _lower_first(normalised_parameters)
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
                succeeded, details = run_spark_job(request.get("jobDriver") or {}, log_path)
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


# -- EventBridge → Step Functions ----------------------------------------------------------------


def _install_eventbridge_to_step_functions() -> None:
    from moto.events.models import EventTemplateParser, Rule
    from moto.stepfunctions.responses import get_backend
    from moto.utilities.arns import parse_arn

    moto_send = Rule.send_to_targets

    def send_to_targets(self: Any, event: dict[str, Any], transform_input: bool = True) -> None:
        targets = [t for t in self.targets if parse_arn(t["Arn"]).service == "states"]
        if targets and self.event_pattern.matches_event(event):
            for target in targets:
                try:
                    _start_execution(target, event)
                except Exception:  # moto's S3 notifier swallows errors silently: say it
                    logger.exception("rule %s could not start %s", self.name, target["Arn"])
        others = [t for t in self.targets if t not in targets]
        if others:
            rule = copy(self)
            rule.targets = others
            moto_send(rule, event, transform_input)

    def _start_execution(target: dict[str, Any], event: dict[str, Any]) -> None:
        arn = parse_arn(target["Arn"])
        if "InputTransformer" in target:
            # moto passes S3's events untransformed; AWS applies the transformer to them too.
            transformer = target["InputTransformer"]
            # moto's S3 events lack the ingestion time its own template parser requires.
            event = {"ingestion-time": event.get("time"), **event}
            body = EventTemplateParser.parse(
                input_template=transformer.get("InputTemplate"),
                input_paths_map=transformer.get("InputPathsMap", {}),
                event=event,
            )
        elif "Input" in target:
            body = json.loads(target["Input"])
        else:
            body = event
        name = f"event-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        # The backend that executes state machines (moto keeps two; this picks as its API does).
        backend = get_backend(arn.account, arn.region)
        execution = backend.start_execution(target["Arn"], name, json.dumps(body))
        logger.info("event %s started %s", event.get("id"), execution.execution_arn)

    Rule.send_to_targets = send_to_targets


# -- the server ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    """``python -m ferry.local.extensions --port N --state-dir DIR``: the extended server."""
    import argparse

    parser = argparse.ArgumentParser(prog="ferry-aws-emulator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    install(args.state_dir)
    from moto.server import main as moto_server

    moto_server(["-H", args.host, "-p", str(args.port)])


if __name__ == "__main__":
    main()
