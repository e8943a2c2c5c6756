"""``ferry doctor``'s checks of the Spark copy: is its EMR Serverless application there, on the
release the stack deploys; are its entry point and packed environment in S3; and, when asked,
does a tiny job run on the application succeed."""

from __future__ import annotations

import re
import time
from typing import Any

from ferry.commands.doctor_findings import FAILED, OK, SKIPPED, Deployment, Finding, guarded
from ferry.core.errors import DeploymentError
from ferry.storage.aws import AwsClients


def check_spark(
    aws: AwsClients,
    settings: Any,
    deployment: Deployment | None,
    *,
    run_job: bool,
    local: bool,
) -> list[Finding]:
    """The application and the job's code; a job run when ``run_job`` (not in the local
    runtime, which runs only the jobs the state machine starts)."""
    if deployment is None:
        return [Finding("spark", SKIPPED, "not deployed yet")]
    findings = [guarded("spark application", lambda: _application(aws, settings, deployment))]
    findings.append(guarded("spark job's code", lambda: spark_code(aws, settings, deployment)))
    if run_job and not local:
        findings.append(guarded("spark job", lambda: run_spark_job(aws, settings, deployment)))
    elif run_job:
        findings.append(
            Finding(
                "spark job",
                SKIPPED,
                "the local runtime runs Spark jobs the state machine starts, not others",
            )
        )
    return findings


def _application(aws: AwsClients, settings: Any, deployment: Deployment) -> Finding:
    from infra.bundling import EMR_RELEASE_LABEL

    application_id = deployment.outputs.get("SparkApplicationId")
    emr = aws.client("emr-serverless", settings.region)
    found = emr.get_application(applicationId=application_id)["application"]
    label = found.get("releaseLabel")
    if label != EMR_RELEASE_LABEL or found.get("state") == "TERMINATED":
        return Finding(
            "spark application",
            FAILED,
            f"{application_id} is {found.get('state')} on {label}, not {EMR_RELEASE_LABEL}",
            "deploy the stack again",
        )
    return Finding("spark application", OK, f"{application_id} on {label} ({found.get('state')})")


def spark_code(aws: AwsClients, settings: Any, deployment: Deployment) -> Finding:
    """The entry point and the packed environment the state machine names exist in S3."""
    definition = _definition(aws, settings, deployment)
    entry_point, archive = spark_code_of(definition)
    missing = []
    for uri in (entry_point, archive):
        bucket, _, key = uri.removeprefix("s3://").partition("/")
        try:
            aws.client("s3", settings.region).head_object(Bucket=bucket, Key=key)
        except aws.client("s3").exceptions.ClientError:
            missing.append(uri)
    if missing:
        return Finding(
            "spark job's code",
            FAILED,
            f"missing: {', '.join(missing)}",
            "deploy the stack again (cdk deploy publishes the assets)",
        )
    return Finding("spark job's code", OK, f"{entry_point} and {archive}")


def run_spark_job(aws: AwsClients, settings: Any, deployment: Deployment) -> Finding:
    """A tiny job run (the copy job's --help) on the application, polled to its end."""
    definition = _definition(aws, settings, deployment)
    entry_point, _ = spark_code_of(definition)
    emr = aws.client("emr-serverless", settings.region)
    application_id = deployment.outputs["SparkApplicationId"]
    started = emr.start_job_run(
        applicationId=application_id,
        executionRoleArn=job_role_of(definition),
        name="ferry-doctor",
        jobDriver={
            "sparkSubmit": {
                "entryPoint": entry_point,
                "entryPointArguments": ["--help"],
                "sparkSubmitParameters": spark_submit_parameters_of(definition),
            }
        },
    )
    while True:
        run = emr.get_job_run(applicationId=application_id, jobRunId=started["jobRunId"])["jobRun"]
        if run["state"] in ("SUCCESS", "FAILED", "CANCELLED"):
            break
        time.sleep(10)
    if run["state"] != "SUCCESS":
        return Finding(
            "spark job",
            FAILED,
            f"job run {started['jobRunId']} {run['state']}: {run.get('stateDetails')}",
            "its logs are under the work bucket's spark-logs/",
        )
    return Finding("spark job", OK, f"job run {started['jobRunId']} succeeded")


def _definition(aws: AwsClients, settings: Any, deployment: Deployment) -> str:
    """The deployed replication state machine's definition."""
    return aws.client("stepfunctions", settings.region).describe_state_machine(
        stateMachineArn=deployment.outputs["ReplicationStateMachineArn"]
    )["definition"]


def spark_code_of(definition: str) -> tuple[str, str]:
    """The Spark copy's entry point and packed environment, as the state machine names them."""
    entry = re.search(r'"EntryPoint"\s*:\s*"(s3://[^"]+)"', definition)
    archive = re.search(r"spark\.archives=(s3://[^#\s\"]+)", definition)
    if entry is None or archive is None:
        raise DeploymentError("the state machine names no Spark entry point or archive")
    return entry.group(1), archive.group(1)


def spark_submit_parameters_of(definition: str) -> str:
    found = re.search(r'"SparkSubmitParameters"\s*:\s*"([^"]*)"', definition)
    return found.group(1) if found else ""


def job_role_of(definition: str) -> str:
    found = re.search(r'"ExecutionRoleArn"\s*:\s*"([^"]+)"', definition)
    if found is None:
        raise DeploymentError("the state machine names no Spark job role")
    return found.group(1)
