"""The deployed state machines as the definitions make them: each bounds its executions
(TimeoutSeconds), a replica's lock lasts as long as a replication may run, and a change
window whose close fails past its retries is closed after another wait, not left open."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import boto3
import pytest

from ferry import statemachine
from ferry.feeds import FeedState
from ferry.local import deploy
from ferry.statemachine.executions import follow, start
from tests.helpers import config_document

pytestmark = pytest.mark.e2e


def test_the_deployed_state_machines_carry_their_timeouts(pipeline, sfn):
    for output, path in (
        ("ReplicationStateMachineArn", statemachine.DEFINITION_PATH),
        ("HousekeepingStateMachineArn", statemachine.HOUSEKEEPING_PATH),
        ("CatalogChangesStateMachineArn", statemachine.CHANGES_PATH),
    ):
        described = sfn.describe_state_machine(stateMachineArn=pipeline.outputs[output])
        deployed = json.loads(described["definition"])["TimeoutSeconds"]
        assert deployed == json.loads(path.read_text())["TimeoutSeconds"], output
    assert statemachine.timeout_seconds(statemachine.DEFINITION_PATH) == 24 * 3600


def test_a_replica_lock_lasts_as_long_as_a_replication_may_run(pipeline):
    awslambda = boto3.client("lambda", region_name="us-east-1")
    plan = awslambda.get_function_configuration(FunctionName="ferry-local-plan")
    lease = plan["Environment"]["Variables"]["FERRY_LOCK_LEASE"]
    assert lease == f"PT{statemachine.timeout_seconds()}S" == "PT86400S"


def test_a_window_whose_close_fails_past_its_retries_is_closed_after_another_wait(
    pipeline, sfn, aws, local_runtime, write_config, arm, unique, tmp_path
):
    config = write_config(
        config_document(
            local_runtime,
            [
                {
                    "source-table": {"database-name": f"db_{unique}", "table-name": "orders"},
                    "replica-table": {
                        "database-name": f"db_{unique}_dr",
                        "table-location": (tmp_path / "replica").as_uri(),
                    },
                }
            ],
        ),
        f"window-{unique}.yml",
    )
    config_uri = deploy.upload_config(aws["s3"], pipeline.work_uri, config)
    # A change of a table the config does not select: the claim needs no run, then closes.
    table = f"elsewhere_{unique}.orders"
    state = FeedState(boto3.client("dynamodb", region_name="us-east-1"), pipeline.state_table)
    state.note(config_uri, table, 1, None, ["UpdateTable"], datetime.now(UTC))
    # The first close and its three retries fail with a transient error.
    arm({"point": "window.close", "error": "CatalogUnreachableError", "times": 4})
    arn = start(
        sfn,
        pipeline.outputs["CatalogChangesStateMachineArn"],
        deploy.execution_name("window"),
        {"configUri": config_uri, "table": table, "windowSeconds": 1},
    )
    outcome = follow(sfn, arn, poll_seconds=0.2, timeout_seconds=120)
    history = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    failures = [
        e["taskFailedEventDetails"]["error"] for e in history if "taskFailedEventDetails" in e
    ]
    assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause, failures)
    assert failures == ["CatalogUnreachableError"] * 4
    entered = [
        e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e
    ]
    assert entered.count("Close the window") == 2
    assert "Wait to close again" in entered
    assert state.window(config_uri, table) is None  # closed, not left open
