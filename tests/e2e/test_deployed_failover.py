"""``ferry failover --environment local`` through the stack deployed into the emulator: the
Failover function checks, baselines and promotes the landing config's replica under its own
role (IAM enforced), around the FailoverSwitch function; the operator's process reads no
catalog and no data.

A replica that does not exist is one line and nothing changed (the triggers stay on); the
function's role may not touch a table the deployed configs do not replicate (the emulator
denies it, and the table is left as it was).
"""

from __future__ import annotations

import json

import boto3
import pytest

from ferry.catalog.glue import GlueCatalog
from ferry.commands.deployed_switch import switch_for
from ferry.core.errors import FailoverError
from ferry.failover import PROMOTED
from ferry.failover.deployed_failover import FUNCTION_OUTPUT
from ferry.local import deploy
from ferry.replicas.replica import REPLICATION_EVENT
from ferry.statemachine.executions import start
from ferry.statemachine.failover_payloads import FailoverInput
from ferry.storage import fs
from tests.e2e import test_failover_switch
from tests.e2e.test_catalog_events import wait_for
from tests.e2e.test_failover_switch import (
    GROUP,
    LANDING,
    RULE,
    SCHEDULE,
    TABLE,
    WEST,
    denials,
    rule_state,
    schedule_state,
)

pytestmark = pytest.mark.e2e

#: The deployed landing config, its source table and buckets (``test_failover_switch``'s).
landing = test_failover_switch.landing


def replicate(sfn, pipeline) -> None:
    """One run of the deployed landing config through the pipeline, succeeded."""
    run = start(
        sfn, pipeline.state_machine_arn, deploy.execution_name("landing"),
        {"configUri": pipeline.outputs["ConfigUriLandingDr"]},
    )  # fmt: skip
    wait_for(
        lambda: sfn.describe_execution(executionArn=run)["status"] != "RUNNING", "the run", 240
    )
    assert sfn.describe_execution(executionArn=run)["status"] == "SUCCEEDED"


@pytest.fixture
def ferry(local_runtime, pipeline, monkeypatch, capsys):
    """``ferry COMMAND LANDING --environment local --json``: (exit code, JSON or stderr)."""
    from ferry.commands.cli import main

    monkeypatch.setenv("FERRY_EVENTS_TOPIC_ARN", pipeline.topic_arn)

    def run(command: str, *more: str) -> tuple[int, object]:
        capsys.readouterr()
        code = main(
            [command, str(LANDING), "--environment", "local", "--home",
             str(local_runtime.state_dir), "--json", *more]
        )  # fmt: skip
        captured = capsys.readouterr()
        return code, json.loads(captured.out) if code == 0 else captured.err

    return run


def test_a_replica_that_does_not_exist_is_one_line_and_nothing_changes(
    pipeline, local_runtime, landing, ferry
):
    west = boto3.client("glue", region_name=WEST)
    try:
        west.delete_table(DatabaseName="landing_dr", Name="orders")
    except west.exceptions.EntityNotFoundException:
        pass

    code, error = ferry("failover")

    assert code != 0
    [line] = error.strip().splitlines()
    assert "landing.orders: its replica landing_dr.orders does not exist" in line
    # Checked before the switch: the triggers are on.
    assert (rule_state(), schedule_state()) == ("ENABLED", "ENABLED")


def test_failover_through_the_stack_baselines_and_promotes_under_the_functions_role(
    pipeline, local_runtime, landing, sfn, ferry
):
    replicate(sfn, pipeline)
    west = GlueCatalog("dr", boto3.client("glue", region_name=WEST))
    work = f"s3://{pipeline.outputs['WorkBucketName']}"
    seen = len(denials(local_runtime))
    try:
        code, failed_over = ferry("failover")
        assert code == 0, failed_over
        assert failed_over["switch"]["triggers"] == [f"rule {RULE}", f"schedule {GROUP}/{SCHEDULE}"]
        assert (rule_state(), schedule_state()) == ("DISABLED", "DISABLED")
        [table] = failed_over["tables"]
        assert (table["source_table"], table["replica_table"]) == (TABLE, "landing_dr.orders")
        replica = west.get_table("landing_dr", "orders")
        assert replica.parameters[PROMOTED] == table["promoted"]
        assert table["promoted"].startswith(failed_over["failoverId"] + "@")
        # The baseline is in the stack's work bucket (where failback finds it), with the
        # replica's partitions as they were.
        assert table["baseline_uri"].startswith(f"{work}/failover/")
        baseline = json.loads(fs.read_bytes(table["baseline_uri"]))
        assert baseline["failover_id"] == failed_over["failoverId"]
        assert len(baseline["partitions"]) == table["partitions"] == 2
        # Everything under the functions' roles was allowed.
        assert denials(local_runtime)[seen:] == []

        # Again: the table keeps its failover id, its promotion and its baseline.
        code, again = ferry("failover")
        assert code == 0, again
        [kept] = again["tables"]
        assert kept["already_promoted"] is True
        assert (kept["failover_id"], kept["promoted"], kept["baseline_uri"]) == (
            table["failover_id"], table["promoted"], table["baseline_uri"],
        )  # fmt: skip

        # Failback (nothing changed in DR) finds the baseline in the stack's work bucket.
        code, failed_back = ferry("failback")
        assert code == 0, failed_back
        assert [t["status"] for t in failed_back["tables"]] == ["FAILED_BACK"]
        assert (rule_state(), schedule_state()) == ("ENABLED", "ENABLED")
        assert PROMOTED not in west.get_table("landing_dr", "orders").parameters
    finally:
        switch_for("local", home=local_runtime.state_dir).resume(landing, [TABLE])


def test_a_work_uri_other_than_the_stacks_is_one_line(
    pipeline, local_runtime, landing, ferry, tmp_path
):
    code, error = ferry("failover", "--work-uri", tmp_path.as_uri())

    assert code != 0
    [line] = error.strip().splitlines()
    assert f"--work-uri {tmp_path.as_uri()}: with --environment local the work area is" in line
    assert (rule_state(), schedule_state()) == ("ENABLED", "ENABLED")


def test_the_functions_role_may_not_touch_a_table_no_deployed_config_replicates(
    pipeline, local_runtime, landing, unique
):
    """A config the stack does not deploy, naming another table of the replica database
    (put where the role may read it: the work bucket's failover/): the function is denied
    that table, which is left as it was."""
    west = boto3.client("glue", region_name=WEST)
    other = f"other_{unique}"
    if not _exists(west):
        west.create_database(DatabaseInput={"Name": "landing_dr"})
    west.create_table(
        DatabaseName="landing_dr",
        TableInput={
            "Name": other,
            "Parameters": {REPLICATION_EVENT: "ferry-20260101t000000000z-00000000"},
            "StorageDescriptor": {"Location": f"s3://ferry-demo-dr-west/{other}"},
        },
    )
    text = LANDING.read_text().replace("table-name: orders", f"table-name: {other}")
    uri = f"s3://{pipeline.outputs['WorkBucketName']}/failover/{other}.yml"
    fs.write_bytes(uri, text.encode())
    switch = switch_for("local", home=local_runtime.state_dir)
    request = FailoverInput(
        action="promote", config_uri=uri, tables=[f"landing.{other}"],
        failover_id="ferry-20260101t000000000z-0f0f0f0f",
    )  # fmt: skip
    seen = len(denials(local_runtime))
    try:
        with pytest.raises(FailoverError) as refused:
            switch.call(FUNCTION_OUTPUT, "failover function", request.model_dump(mode="json"))

        assert f"landing_dr.{other}" in str(refused.value)
        assert "\n" not in str(refused.value)
        found = [d for d in denials(local_runtime)[seen:] if f"landing_dr/{other}" in d["resource"]]
        assert found and all("-failover" in d["caller"] for d in found)
        assert {d["action"] for d in found} <= {"glue:GetTable", "glue:UpdateTable"}
        # The table was not promoted.
        table = west.get_table(DatabaseName="landing_dr", Name=other)["Table"]
        assert PROMOTED not in table.get("Parameters", {})
    finally:
        west.delete_table(DatabaseName="landing_dr", Name=other)


def _exists(glue) -> bool:
    try:
        glue.get_database(Name="landing_dr")
    except glue.exceptions.EntityNotFoundException:
        return False
    return True
