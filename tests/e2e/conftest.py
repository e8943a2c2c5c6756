"""Fixtures of the end-to-end tests: the deployed state machine, and fail points armed in it."""

from __future__ import annotations

import json

import boto3
import pytest

from ferry.execute import ExecutionOutcome, follow, start
from ferry.local import deploy
from ferry.local.emulator_server import FAULTS_FILE


@pytest.fixture
def sfn(local_runtime):
    return boto3.client("stepfunctions", region_name="us-east-1")


@pytest.fixture
def run(pipeline, sfn, aws, write_config):
    """Replicate a config document through the deployed state machine; the outcome."""

    def execute(document: dict, name: str = "replication.yml") -> ExecutionOutcome:
        config_uri = deploy.upload_config(
            aws["s3"], pipeline.work_uri, write_config(document, name)
        )
        arn = start(
            sfn,
            pipeline.state_machine_arn,
            deploy.execution_name("test"),
            {"configUri": config_uri},
        )
        return follow(sfn, arn, poll_seconds=0.2, timeout_seconds=240)

    return execute


@pytest.fixture
def arm(local_runtime):
    """Arm fail points in the emulator's Lambdas and Spark jobs (``ferry.faults``)."""
    path = local_runtime.state_dir / "aws" / FAULTS_FILE

    def arm_faults(*faults: dict) -> None:
        path.write_text(json.dumps(list(faults)))

    yield arm_faults
    path.unlink(missing_ok=True)
