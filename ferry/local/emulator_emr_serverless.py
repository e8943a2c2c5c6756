"""The AWS emulator's EMR Serverless: ``startJobRun.sync`` runs the job as EMR runs it.

moto 5.2 has no Step Functions integration for EMR Serverless. Here a
``arn:aws:states:::emr-serverless:startJobRun.sync`` task is authorized for the execution's
role as on AWS (``emr-serverless:StartJobRun`` on the application, ``iam:PassRole`` of the
job role to EMR Serverless, the managed rule ``.sync`` needs, ``GetJobRun``), records the job
run in moto's EMR Serverless backend and runs it on a thread, and the state polls the run
until it ends; a failed run fails the task with ``States.TaskFailed``.

The job runs from what the job run names, as on EMR Serverless: its entry point and the
packed environment of ``spark.archives`` are downloaded from S3, the environment unpacked
as ``./environment``, and the driver and the executors run ``spark.emr-serverless.*Env``
(``PYSPARK_PYTHON=./environment/bin/python``): the archive's own interpreter and packages,
and pyspark and py4j as the release provides them, nothing of this machine's virtual
environment. The archive's ``bin/python`` names the release's interpreter
(``/usr/bin/python3.12``); here it is pointed at this machine's Python of the same version.
The job runs with the credentials of its execution role (which must trust
``emr-serverless.amazonaws.com``), so its requests are authorized as that role's.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tarfile
import threading
import uuid
from pathlib import Path
from typing import Any

from ferry.copying.spark_job import spark_submit
from ferry.core import faults
from ferry.core.errors import LocalRuntimeError
from ferry.local.authorization import Authorizer, Caller, Check

_TERMINAL_JOB_STATES = {"SUCCESS", "FAILED", "CANCELLED"}
_FAILED_JOB_STATES = {"FAILED", "CANCELLED"}
#: The rule Step Functions manages to learn that a ``.sync`` job run ended.
SYNC_RULE = "StepFunctionsGetEventsForEMRServerlessJobRule"
ENVIRONMENT_PREFIX = ("spark.emr-serverless.driverEnv.", "spark.emr-serverless.executorEnv.")


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


def submit_settings(parameters: str) -> dict[str, str]:
    """``--conf name=value`` pairs of ``sparkSubmitParameters``."""
    words = shlex.split(parameters or "")
    settings = {}
    for index, word in enumerate(words):
        if word == "--conf" and index + 1 < len(words):
            name, _, value = words[index + 1].partition("=")
            settings[name] = value
    return settings


class JobRunner:
    """Runs a job run's entry point as EMR Serverless would, with its role's credentials."""

    def __init__(self, state_dir: Path, endpoint: str, fault_file: faults.FaultFile | None):
        self.state_dir = state_dir
        self.endpoint = endpoint
        self.fault_file = fault_file
        self._lock = threading.Lock()

    def run(
        self, job_id: str, job_driver: dict[str, Any], region: str, credentials: dict[str, str]
    ) -> tuple[bool, str]:
        submit = job_driver.get("sparkSubmit") or {}
        folder = self.state_dir / "spark" / job_id
        folder.mkdir(parents=True, exist_ok=True)
        log_path = self.state_dir / "spark" / f"{job_id}.log"
        try:
            entry_point = self._fetch(str(submit.get("entryPoint", "")), folder)
            settings = submit_settings(str(submit.get("sparkSubmitParameters") or ""))
            environment = self._environment(settings, folder, region, credentials)
        except Exception as error:  # noqa: BLE001 - EMR reports a job that cannot start
            return False, f"the job could not start: {error}"
        arguments = [str(argument) for argument in submit.get("entryPointArguments") or []]
        if self.fault_file is not None and os.path.exists(self.fault_file.path):
            # The job's own fail points, for failure drills of the Spark copier.
            with open(self.fault_file.path) as handle:
                environment["FERRY_FAULTS"] = handle.read()
        return spark_submit(
            entry_point, arguments, log_path, environment=environment, cwd=folder, inherit=False
        )

    def _environment(
        self, settings: dict[str, str], folder: Path, region: str, credentials: dict[str, str]
    ) -> dict[str, str]:
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8",
            "JAVA_HOME": os.environ.get("JAVA_HOME", ""),
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            "AWS_ENDPOINT_URL": self.endpoint,
            # The release's Spark, pyspark and py4j, and nothing else of this machine's.
            "SPARK_HOME": str(Path(_pyspark_file()).parent),
            "PYTHONPATH": str(self._release_packages()),
            **credentials,
        }
        environment = {k: v for k, v in environment.items() if v}
        for name, value in settings.items():
            for prefix in ENVIRONMENT_PREFIX:
                if name.startswith(prefix):
                    environment[name.removeprefix(prefix)] = value
        archives = settings.get("spark.archives")
        if archives:
            for archive in archives.split(","):
                uri, _, alias = archive.partition("#")
                self._unpack(uri, folder / (alias or Path(uri).name))
        return environment

    def _fetch(self, uri: str, folder: Path) -> str:
        if uri.startswith("file://"):
            return uri.removeprefix("file://")
        if not uri.startswith("s3://"):
            return uri
        import boto3

        bucket, _, key = uri.removeprefix("s3://").partition("/")
        target = folder / Path(key).name
        boto3.client("s3", endpoint_url=self.endpoint).download_file(bucket, key, str(target))
        return str(target)

    def _unpack(self, uri: str, destination: Path) -> None:
        """The archive unpacked at ``destination`` (cached by the archive's S3 object)."""
        import boto3

        bucket, _, key = uri.removeprefix("s3://").partition("/")
        s3 = boto3.client("s3", endpoint_url=self.endpoint)
        tag = s3.head_object(Bucket=bucket, Key=key)["ETag"].strip('"')
        cached = self.state_dir / "spark" / "environments" / tag
        with self._lock:
            if not cached.exists():
                building = cached.with_name(f".{tag}.{uuid.uuid4().hex[:8]}")
                building.mkdir(parents=True)
                archive = building.with_suffix(".tgz")
                s3.download_file(bucket, key, str(archive))
                with tarfile.open(archive) as packed:
                    packed.extractall(building, filter="tar")
                archive.unlink()
                _interpreter_here(building)
                building.rename(cached)
        if destination.is_symlink() or destination.exists():
            destination.unlink()
        destination.symlink_to(cached)

    def _release_packages(self) -> Path:
        """A folder of pyspark and py4j alone, as EMR's image provides them to the job."""
        folder = self.state_dir / "spark" / "release-packages"
        if not folder.exists():
            import py4j
            import pyspark

            building = folder.with_name(f".release-packages.{uuid.uuid4().hex[:8]}")
            building.mkdir(parents=True)
            for module in (pyspark, py4j):
                package = Path(module.__file__).parent
                (building / package.name).symlink_to(package)
            try:
                building.rename(folder)
            except OSError:
                shutil.rmtree(building, ignore_errors=True)
        return folder


def _pyspark_file() -> str:
    import pyspark

    return pyspark.__file__


def _interpreter_here(environment: Path) -> None:
    """Point the packed environment's interpreter at this machine's Python of its version.

    venv-pack keeps ``bin/python3.X`` as a link to the release's ``/usr/bin/python3.X``;
    Python finds the environment's packages from the link's own place, wherever it points.
    """
    for link in (environment / "bin").glob("python3.*"):
        if link.is_symlink() and not link.exists():
            version = link.name.removeprefix("python")
            here = Path(getattr(sys, "_base_executable", sys.executable))
            if here.name != f"python{version}":
                candidates = [here.with_name(f"python{version}")]
            else:
                candidates = [here]
            found = next((c for c in candidates if c.exists()), None)
            if found is None:
                raise LocalRuntimeError(f"no Python {version} on this machine for {link}")
            link.unlink()
            link.symlink_to(found)


#: Release labels of the AWS runtimes for Apache Spark (``emr-spark-8.0.0``), which moto 5.2
#: predates: it knows only ``emr-X.Y.0`` labels and refuses these as unknown.
SPARK_RUNTIME_LABEL = re.compile(r"emr-spark-\d+\.\d+\.\d+")


def _accept_spark_runtime_labels() -> None:
    from moto.emrserverless.models import EMRServerlessBackend

    create = EMRServerlessBackend.create_application

    def create_application(self: Any, name: str, release_label: str, *args: Any, **kw: Any) -> Any:
        if not SPARK_RUNTIME_LABEL.fullmatch(release_label):
            return create(self, name, release_label, *args, **kw)
        application = create(self, name, "emr-7.0.0", *args, **kw)
        application.release_label = release_label
        return application

    EMRServerlessBackend.create_application = create_application


def install(authorizer: Authorizer, runner: JobRunner) -> None:
    """Serve ``emr-serverless:startJobRun.sync`` tasks; job logs go under ``state_dir/spark``."""
    from moto.emrserverless.models import emrserverless_backends

    _accept_spark_runtime_labels()
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
        CustomErrorName,
    )
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

        def _authorize(
            self, env: Any, state_credentials: Any, runtime: Any, checks: list[Check]
        ) -> None:
            """Fail the task as Step Functions does when the execution's role may not."""
            role_arn = state_credentials.role_arn
            caller = Caller(
                role_arn,
                f"arn:aws:sts::{runtime.account}:assumed-role/{role_arn.rsplit('/', 1)[-1]}"
                "/step-functions",
                runtime.account,
            )
            denial = authorizer.authorize(caller, checks, runtime.region)
            if denial is None:
                return
            name = "EMRServerless.AccessDeniedException"  # as Step Functions names it
            raise self._failed(env, CustomErrorName(name), name, denial.message)

        def _failed(self, env: Any, error_name: Any, error: str, cause: str) -> Exception:
            """The task's failure, as Step Functions reports a failed service task."""
            return FailureEventException(
                FailureEvent(
                    env=env,
                    error_name=error_name,
                    event_type=HistoryEventType.TaskFailed,
                    event_details=EventDetails(
                        taskFailedEventDetails=TaskFailedEventDetails(
                            resource=self._get_sfn_resource(),
                            resourceType=self._get_sfn_resource_type(),
                            error=error,
                            cause=cause,
                        )
                    ),
                )
            )

        def _eval_service_task(
            self, env, resource_runtime_part, normalised_parameters, state_credentials
        ):  # noqa: E501
            request = api_parameters(normalised_parameters)
            runtime = resource_runtime_part
            application = (
                f"arn:aws:emr-serverless:{runtime.region}:{runtime.account}:"
                f"/applications/{request['applicationId']}"
            )
            self._authorize(
                env,
                state_credentials,
                runtime,
                [
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
                ],
            )
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

            def run() -> None:
                try:
                    credentials = authorizer.assume(
                        request["executionRoleArn"],
                        "emr-serverless.amazonaws.com",
                        f"emr-job-{job_run.id}",
                        runtime.region,
                        source_arn=application,
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
                    failed = StatesErrorNameType.StatesTaskFailed
                    raise self._failed(
                        env, StatesErrorName(typ=failed), failed.to_name(), to_json_str(output)
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
