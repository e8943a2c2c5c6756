"""Two drivers, one set of steps: the state machine and ``ferry replicate`` agree exactly.

For every copier path the in-process driver takes the states the definition prescribes, in
the definition's order, and so does the deployed state machine; the same config gives
replicas and SNS messages that are equal field by field (event ids and times aside).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import boto3
import pytest

from ferry import statemachine as definition
from ferry.commands.in_process import substitutions
from ferry.replicas.replica import COMMIT_CLAIM, LAST_REPLICATED, SOURCE_READ_AT
from ferry.storage import fs
from tests.e2e.test_pipeline import table_entry
from tests.helpers import Replicator, catalog_state, config_document

pytestmark = pytest.mark.e2e

DEFINITION = definition.load(substitutions())
TOP_LEVEL = set(DEFINITION["States"])
PER_TABLE = DEFINITION["States"]["Replicate tables"]["ItemProcessor"]


def prescribed_states(copier: str, fails_at: str | None = None) -> list[str]:
    """Walk the definition's per-table states from Plan as a table with this copier would."""
    states, name, path = PER_TABLE["States"], PER_TABLE["StartAt"], []
    while name:
        path.append(name)
        state = states[name]
        if name == fails_at:
            name = state["Catch"][0]["Next"]
        elif state["Type"] == "Choice":
            name = next(
                (c["Next"] for c in state["Choices"] if c.get("StringEquals") == copier),
                state["Default"],
            )
        else:
            name = None if state.get("End") else state["Next"]
    return path


def machine_states(outcome) -> list[str]:
    """The per-table states one execution of one table entered: its child execution's."""
    assert not set(outcome.entered) - TOP_LEVEL, "per-table states run in child executions"
    return outcome.child_entered


def driver_states(replicator: Replicator, table: str) -> list[str]:
    return [s for s in replicator.execution.table_states(table) if s in PER_TABLE["States"]]


def normalised(value, event_ids: set[str]):
    """``value`` with every event id replaced and Ferry's replication and read times dropped."""
    if isinstance(value, dict):
        return {
            normalised(key, event_ids): normalised(
                # The claim's time and process are the run's own; its event is compared.
                item.split("@")[0] if key == COMMIT_CLAIM else item,
                event_ids,
            )
            for key, item in value.items()
            if key not in (LAST_REPLICATED, SOURCE_READ_AT)
        }
    if isinstance(value, list | tuple):
        return type(value)(normalised(item, event_ids) for item in value)
    if isinstance(value, str):
        for event_id in event_ids:
            value = value.replace(event_id, "<event>")
        # The metastore qualifies file:///x to file:/x when it adds a partition, not when it
        # alters one: the same location.
        return value.replace("file:///", "file:/")
    return value


EVENT_ID = re.compile(r"ferry-\d{8}t\d{9}z-[0-9a-f]{8}")


def message_fields(message: dict) -> dict:
    body = {k: v for k, v in message.items() if k not in ("eventId", "startTime", "endTime")}
    return json.loads(EVENT_ID.sub("<event>", json.dumps(body)))


@pytest.mark.parametrize(
    ("table", "extra", "copier"),
    [
        ("orders", {}, "inline"),
        ("customers", {"copier-options": {"inline-threshold-mib": 0}}, "spark"),
        ("big_orders", {"replication-mode": "METADATA_MIRROR"}, "metadata"),
    ],
)
def test_both_drivers_take_the_prescribed_states_and_leave_equal_replicas_and_messages(
    run, local_runtime, sample, replica_catalog, tmp_path, consumer, table, extra, copier
):
    topic, messages = consumer
    target = fs.local_uri(tmp_path / "replica")
    location = None if copier == "metadata" else f"{target}/{table}"
    # Each driver replicates the same source into a replica database of its own.
    machine_db, driver_db = f"{sample.database}_dr", f"{sample.database}_by_cli"

    def document(replica_db: str) -> dict:
        replication = table_entry(sample, table, location, **extra)
        replication["replica-table"]["database-name"] = replica_db
        return config_document(
            local_runtime, [replication], **{"sns-event-listener": {"topic": topic}}
        )

    machine = run(document(machine_db))
    assert machine.status == "SUCCEEDED", machine
    [machine_result] = machine.results
    machine_replica = catalog_state(replica_catalog, machine_db, [table])
    machine_messages = [m["body"] for m in messages()]

    replicator = Replicator(document(driver_db))
    [outcome] = replicator.run()
    assert outcome.status == "SUCCEEDED", outcome.error
    driver_replica = catalog_state(replica_catalog, driver_db, [table])
    driver_messages = [
        json.loads(json.dumps(m["body"]).replace(f"{driver_db}.", f"{machine_db}."))
        for m in messages()
    ]

    assert machine_result["plan"]["copier"] == outcome.copier == copier
    assert driver_states(replicator, sample.database + "." + table) == prescribed_states(copier)
    assert machine_states(machine) == prescribed_states(copier)
    events = {machine_result["eventId"], outcome.event_id}
    assert normalised(driver_replica, events) == normalised(machine_replica, events)
    assert [message_fields(m) for m in driver_messages] == [
        message_fields(m) for m in machine_messages
    ]
    assert [m["type"] for m in driver_messages] == ["START", "SUCCESS"]


def test_an_unchanged_table_and_a_failure_take_the_same_states_in_both_drivers(
    run, local_runtime, sample, tmp_path, unique
):
    target = fs.local_uri(tmp_path / "replica")
    entry = table_entry(sample, "orders", f"{target}/orders")
    entry["source-table"]["partition-filter"] = "dt > '2999-01-01'"
    document = config_document(local_runtime, [entry])
    assert run(document).status == "SUCCEEDED"
    unchanged = run(document)
    replicator = Replicator(document)
    [outcome] = replicator.run()
    assert outcome.status == "UNCHANGED"
    orders = f"{sample.database}.orders"
    assert (
        machine_states(unchanged) == driver_states(replicator, orders) == prescribed_states("none")
    )

    broken = config_document(
        local_runtime, [table_entry(sample, "orders", f"s3://no-such-bucket-{unique}/orders")]
    )
    failed = run(broken)
    replicator = Replicator(broken)
    [outcome] = replicator.run()
    assert failed.error == outcome.error_type == "TargetNotWritableError"
    expected = prescribed_states("inline", fails_at="Inline copy")
    assert machine_states(failed) == driver_states(replicator, orders) == expected


def test_s3_to_s3_takes_the_server_side_path_in_both_drivers(run, cross_region):
    west, sample = cross_region.west, cross_region.sample
    options = {"copier-options": {"s3-batch-files": 2}}
    machine = run(cross_region.document(**options))
    assert machine.status == "SUCCEEDED", machine
    [machine_result] = machine.results
    machine_replica = catalog_state(west, f"{sample.database}_dr", ["orders"])
    replicator = Replicator(cross_region.document(f"{sample.database}_by_cli", **options))
    [outcome] = replicator.run()
    assert machine_result["plan"]["copier"] == outcome.copier == "s3"
    orders = f"{sample.database}.orders"
    assert machine_states(machine) == driver_states(replicator, orders) == prescribed_states("s3")
    events = {machine_result["eventId"], outcome.event_id}
    driver_replica = catalog_state(west, f"{sample.database}_by_cli", ["orders"])
    assert normalised(driver_replica, events) == normalised(machine_replica, events)


def test_ferry_replicate_runs_spark_on_emr_serverless_when_the_config_names_an_application(
    pipeline, local_runtime, sample, replica_catalog, tmp_path, write_config
):
    # The emulator's EMR Serverless records a job run and reports it succeeded without
    # running anything: Commit then finds no copy record and refuses. That is the point —
    # a copy that claims success without copying can never be committed.
    emr = boto3.client("emr-serverless", region_name="us-east-1")
    target = fs.local_uri(tmp_path / "replica")
    document = config_document(
        local_runtime,
        [
            table_entry(
                sample,
                "orders",
                f"{target}/orders",
                **{"copier-options": {"inline-threshold-mib": 0}},
            )
        ],
        **{
            "emr-serverless": {
                "application-id": pipeline.spark_application_id,
                "execution-role-arn": "arn:aws:iam::123456789012:role/ferry-local-role",
                "entry-point": "s3://ferry-local-work/assets/copy_files.py",
                "region": "us-east-1",
            }
        },
    )
    config = str(write_config(document))
    local = subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", "replicate", config, "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert local.returncode == 2 and "give --work-uri s3://" in local.stderr

    result = subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", "replicate", config, "--json",
         "--work-uri", f"{pipeline.work_uri}/cli", "--home", str(tmp_path / "home")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    [table] = json.loads(result.stdout)["tables"]
    assert result.returncode == 1
    assert table["copier"] is None and table["error_type"] == "CopyIncompleteError"
    assert table["states"] == [
        "Plan",
        "Choose copier",
        "Claim copy slot",
        "Copy slot granted?",
        "Spark copy",
        "Commit",
        "Commit failed",
        "Abort table",
    ]
    runs = emr.list_job_runs(applicationId=pipeline.spark_application_id)["jobRuns"]
    [run] = [r for r in runs if r["name"] == table["event_id"]]
    job = emr.get_job_run(applicationId=pipeline.spark_application_id, jobRunId=run["id"])
    arguments = job["jobRun"]["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    assert arguments[:2] == [
        "--manifest",
        f"{pipeline.work_uri}/cli/runs/{table['event_id']}/manifest.json",
    ]
    assert replica_catalog.get_database(f"{sample.database}_dr") is None
    assert fs.list_files(target) == []
