"""The AWS emulator's EMR Serverless: ``startJobRun.sync`` runs the job as EMR runs it.

moto 5.2 has no Step Functions integration for EMR Serverless. Here a
``arn:aws:states:::emr-serverless:startJobRun.sync`` task is authorized for the execution's
role as on AWS (``emr-serverless:StartJobRun`` on the application, ``iam:PassRole`` of the
job role to EMR Serverless, the managed rule ``.sync`` needs, ``GetJobRun``), records the job
run in moto's EMR Serverless backend and runs it on a thread, and the state polls the run
until it ends; a failed run fails the task with ``States.TaskFailed``
(``ferry.local.emulator_emr_sync_task``).

The job runs from what the job run names, as on EMR Serverless
(``ferry.local.emulator_emr_job_runner``): its entry point and the packed environment of
``spark.archives`` are downloaded from S3, the environment unpacked as ``./environment``, and
the driver and the executors run ``spark.emr-serverless.*Env``
(``PYSPARK_PYTHON=./environment/bin/python``): the archive's own interpreter and packages,
and pyspark and py4j as the release provides them, nothing of this machine's virtual
environment. The archive's ``bin/python`` names the release's interpreter
(``/usr/bin/python3.12``); here it is pointed at this machine's Python of the same version.
The job runs with the credentials of its execution role (which must trust
``emr-serverless.amazonaws.com``), so its requests are authorized as that role's.

What is patched in moto: the applications accept the release labels of the AWS runtimes for
Apache Spark, and Step Functions' service tasks of ``emr-serverless`` are the one above.
"""

from __future__ import annotations

import re
from typing import Any

from ferry.local.authorization import Authorizer
from ferry.local.emulator_emr_job_runner import JobRunner
from ferry.local.emulator_emr_sync_task import task_service_class

#: Release labels of the AWS runtimes for Apache Spark (``emr-spark-8.0.0``), which moto 5.2
#: predates: it knows only ``emr-X.Y.0`` labels and refuses these as unknown.
SPARK_RUNTIME_LABEL = re.compile(r"emr-spark-\d+\.\d+\.\d+")


def install(authorizer: Authorizer, runner: JobRunner) -> None:
    """Serve ``emr-serverless:startJobRun.sync`` tasks; job logs go under ``state_dir/spark``."""
    _accept_spark_runtime_labels()
    _serve_sync_tasks(task_service_class(authorizer, runner))


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


def _serve_sync_tasks(task_service: type) -> None:
    """Step Functions' service tasks of ``emr-serverless`` are ``task_service``'s."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import (
        state_task_factory,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_factory as factory,
    )

    moto_factory = factory.state_task_service_for

    def state_task_service_for(service_name: str) -> Any:
        if service_name == "emr-serverless":
            return task_service()
        return moto_factory(service_name)

    # The task factory imported the function by name: replace it where it is looked up.
    factory.state_task_service_for = state_task_service_for
    state_task_factory.state_task_service_for = state_task_service_for
