"""The freshness check's state module (``ferry/states/freshness_check.py``): every table of a
config measured from the real metastores, its RPO published to the emulator's CloudWatch in
one request."""

from __future__ import annotations

import boto3
import pytest

from ferry.statemachine.check_payloads import FreshnessCheckInput
from ferry.states import freshness_check
from tests.state_runs import StateRun

pytestmark = pytest.mark.integration


def test_each_table_of_the_config_is_measured_and_its_rpo_published(
    local_runtime, sample, tmp_path
):
    run = StateRun(local_runtime, sample, tmp_path, rpo="PT1H")

    result = freshness_check.run(run.context, FreshnessCheckInput(config_uris=[str(run.config)]))

    assert (result.tables, result.requests, result.skipped) == (1, 1, None)
    listed = boto3.client("cloudwatch").list_metrics(
        Namespace="Ferry",
        MetricName="RpoSeconds",
        Dimensions=[{"Name": "table", "Value": f"{sample.database}.orders"}],
    )["Metrics"]
    assert len(listed) == 1
