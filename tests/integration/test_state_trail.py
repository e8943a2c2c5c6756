"""Each state's trail: its sample event (``events/<state>.json``) through its handler
(``lambdas/<state>.py``, the Lambda function's own code) gives a result that is its result
model, exactly, and holds every key the state machine selects of it.

The sample events name the documentation's buckets and tables; here they name this test's
own (the same event, with its names replaced), in the local runtime's AWS and metastores.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from pathlib import Path

import boto3
import pytest

from ferry import statemachine
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.catalog.hive_events import HiveNotificationLog
from ferry.failover import PROMOTED
from ferry.local.lambda_worker import LambdaContext
from ferry.replicas.ledger.dynamodb_table import create_state_table
from ferry.statemachine.outcomes import write_map_results
from ferry.storage import fs
from lambdas import runtime
from tests.helpers import config_document

pytestmark = pytest.mark.integration

EVENTS = Path(__file__).parents[2] / "events"
#: Each Lambda function by its module (``lambdas/<state>.py``), as the definitions name them.
FUNCTIONS = {
    handler.split(".")[1]: function for function, handler in statemachine.ALL_FUNCTIONS.items()
}
#: The bytes of the two objects ``events/s3_copy_batch.json`` copies.
BATCH_OBJECTS = {"part-00000.parquet": 1187, "part-00001.parquet": 1203}


def selected_keys(function: str) -> set[str]:
    """The keys of a function's result that some state of the definitions selects."""
    selected = set()
    for path in statemachine.DEFINITIONS:
        document = json.loads(path.read_text())
        for state in statemachine.lambda_tasks(document).values():
            if state["Parameters"]["FunctionName"] != f"${{{function}FunctionArn}}":
                continue
            for value in state.get("ResultSelector", {}).values():
                selected.update(re.findall(r"^\$\.Payload\.(\w+)", value))
    return selected


class Trail:
    """This test's world: its names, and each state's handler run at most once."""

    def __init__(self, unique, sample, local_runtime, tmp_path):
        self.database = sample.database
        self.source_uri = local_runtime.source_uri
        self.replica_uri = local_runtime.replica_uri
        self.work = f"work-{unique}"
        self.landing = f"source-{unique}"
        self.target = f"target-{unique}"
        self.results: dict[str, dict] = {}
        s3 = boto3.client("s3")
        for bucket in (self.work, self.landing, self.target):
            s3.create_bucket(Bucket=bucket)
        document = config_document(
            local_runtime,
            [
                {
                    "source-table": {"database-name": sample.database, "table-name": "orders"},
                    "replica-table": {
                        "database-name": f"{sample.database}_dr",
                        "table-location": fs.local_uri(tmp_path / "replica" / "orders"),
                    },
                }
            ],
        )
        text = json.dumps(document).encode()
        # Where the sample events' configs are: under the work location's configs/.
        for event in ("resolve_tables", "summarize"):
            fs.write_bytes(json.loads(self.raw(event))["configUri"], text)
        folder = "warehouse/sales.db/orders/dt=2026-11-21"
        for name, size in BATCH_OBJECTS.items():
            s3.put_object(Bucket=self.landing, Key=f"{folder}/{name}", Body=b"x" * size)

    def raw(self, state: str) -> str:
        """The sample event, naming this test's buckets and tables."""
        own = {
            "ferry-prod-work": self.work,
            "ferry-work": self.work,
            "s3://landing/": f"s3://{self.landing}/",
            "s3://dr-west/": f"s3://{self.target}/",
            "sales_dr.orders": f"{self.database}_dr.orders",
            "sales.orders": f"{self.database}.orders",
        }
        pattern = "|".join(re.escape(name) for name in own)
        return re.sub(
            pattern, lambda found: own[found.group()], (EVENTS / f"{state}.json").read_text()
        )

    def run(self, state: str) -> dict:
        """The handler's result for the state's sample event (once per state)."""
        if state not in self.results:
            handler = importlib.import_module(f"lambdas.{state}").handler
            # The poller polls until its function's time is nearly up: give it 2 s of it.
            request = {"timeoutSeconds": 12} if state == "catalog_poller" else {}
            self.results[state] = handler(json.loads(self.raw(state)), LambdaContext(request))
        return self.results[state]


@pytest.fixture
def trail(unique, sample, local_runtime, tmp_path, monkeypatch):
    state_table = f"ferry-state-{unique}"
    create_state_table(boto3.client("dynamodb"), state_table)
    world = Trail(unique, sample, local_runtime, tmp_path)
    monkeypatch.setenv("FERRY_WORK_URI", f"s3://{world.work}")
    monkeypatch.setenv("FERRY_STATE_TABLE", state_table)
    # A copy budget of two slots, one kept for critical tables (the sample's is normal).
    monkeypatch.setenv("FERRY_COPY_SLOTS", "2")
    monkeypatch.setenv("FERRY_CRITICAL_RESERVED_SLOTS", "1")
    # The change window state machine the feeds start (here one that only waits).
    waiting = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 60, "End": True}}}
    changes = boto3.client("stepfunctions").create_state_machine(
        name=f"changes-{unique}",
        definition=json.dumps(waiting),
        roleArn="arn:aws:iam::123456789012:role/changes",
    )["stateMachineArn"]
    monkeypatch.setenv("FERRY_CHANGES_STATE_MACHINE_ARN", changes)
    # The failover switch's: the runs it looks at, its schedules' group.
    monkeypatch.setenv("FERRY_FAILOVER_STATE_MACHINES", changes)
    monkeypatch.setenv("FERRY_SCHEDULE_GROUP", f"ferry-trail-{unique}")
    # Failback's reverse run starts there (the sample's changes nothing: it starts none).
    monkeypatch.setenv("FERRY_REPLICATION_STATE_MACHINE_ARN", changes)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    for cached in (runtime.settings, runtime.context, runtime.feeds):
        cached.cache_clear()
    yield world
    for cached in (runtime.settings, runtime.context, runtime.feeds):
        cached.cache_clear()


def before(trail: Trail, state: str) -> None:
    """What the state machine runs before the state, for the sample event's event id."""
    if state in (
        "copy_slot", "inline_copy", "commit", "notify_success", "abort", "housekeeping",
        "failover", "failback",
    ):  # fmt: skip
        trail.run("plan")
    if state in ("commit", "notify_success", "abort", "housekeeping", "failover", "failback"):
        trail.run("inline_copy")
    if state in ("notify_success", "housekeeping", "failover", "failback"):
        trail.run("commit")
    if state == "failback":
        trail.run("failover")
    if state == "housekeeping":
        trail.run("notify_success")
    if state == "failover_switch":
        # The sample event's config has a rule and a schedule (of the trail's own group).
        boto3.client("events").put_rule(
            Name="ferry-prod-sales-s3-0", EventPattern=json.dumps({"source": ["aws.s3"]})
        )
        scheduler = boto3.client("scheduler")
        group = os.environ["FERRY_SCHEDULE_GROUP"]
        scheduler.create_schedule_group(Name=group)
        scheduler.create_schedule(
            Name="ferry-prod-sales", GroupName=group, ScheduleExpression="cron(0 3 * * ? *)",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target={"Arn": os.environ["FERRY_FAILOVER_STATE_MACHINES"],
                    "RoleArn": "arn:aws:iam::123456789012:role/schedules"},
        )  # fmt: skip
        importlib.import_module("lambdas.failover_switch").stack.cache_clear()
    if state == "summarize":
        # The Map over the tables wrote one table that succeeded and one whose iteration
        # failed where no Catch took it, at the key the sample event names.
        table = json.loads(trail.raw("plan"))
        success = {
            **table,
            "notified": {"status": "SUCCEEDED", "sourceTable": table["sourceTable"]},
        }
        children = [
            {"index": 0, "input": table, "status": "SUCCEEDED", "start": "t0", "stop": "t1",
             "output": success},
            {"index": 1, "input": {**table, "eventId": "ferry-20261121t083000000z-0f0f0f0f"},
             "status": "FAILED", "start": "t0", "stop": "t1", "error": "States.DataLimitExceeded",
             "cause": "the state's output is larger than 256 KiB"},
        ]  # fmt: skip
        details = json.loads(trail.raw("summarize"))["results"]
        written = write_map_results("Replicate tables", details["Bucket"], "results", children)
        manifest = written["ResultWriterDetails"]
        fs.write_bytes(
            fs.object_uri(details["Bucket"], details["Key"]),
            fs.read_bytes(fs.object_uri(manifest["Bucket"], manifest["Key"])),
        )


@pytest.mark.parametrize("state", sorted(FUNCTIONS))
def test_the_sample_event_through_the_handler_gives_the_result_model(trail, state):
    function = FUNCTIONS[state]
    before(trail, state)
    result = trail.run(state)
    model = statemachine.PAYLOADS[function][1]
    assert set(result) == {field.alias or name for name, field in model.model_fields.items()}
    assert model.model_validate(result).model_dump(mode="json") == result
    assert json.loads(json.dumps(result)) == result
    missing = selected_keys(function) - set(result)
    assert not missing, f"the definition selects {sorted(missing)} of {state}'s result"
    check_outcome(trail, state, result)


def check_outcome(trail: Trail, state: str, result: dict) -> None:
    """What the state did, beyond the shape of its result."""
    orders, replica = f"{trail.database}.orders", f"{trail.database}_dr.orders"
    if state == "resolve_tables":
        items = json.loads(
            fs.read_bytes(fs.object_uri(result["tablesBucket"], result["tablesKey"]))
        )
        assert [item["sourceTable"] for item in items] == [orders] and result["count"] == 1
    elif state == "plan":
        assert (result["copier"], result["files"], result["partitionsToAdd"]) == ("inline", 3, 3)
        assert (result["sourceTable"], result["replicaTable"]) == (orders, replica)
        assert fs.exists(result["planUri"]) and fs.exists(result["manifestUri"])
    elif state == "copy_slot":
        # A normal table takes the slot not kept for critical tables; nothing waits.
        assert (result["granted"], result["slot"], result["priority"]) == (True, 1, "normal")
        assert (result["queuedCritical"], result["queuedNormal"], result["queuedBulk"]) == (0, 0, 0)
        [holder] = runtime.context().budget.slots.holders()
        assert (holder.slot, holder.event_id) == (1, trail.results["plan"]["eventId"])
        assert holder.owner == json.loads(trail.raw("copy_slot"))["execution"]
    elif state == "inline_copy":
        assert result["files"] == trail.results["plan"]["files"] == 3
        assert result["bytes"] == trail.results["plan"]["bytes"]
    elif state == "commit":
        assert (result["partitionsAdded"], result["partitionsAltered"]) == (3, 0)
    elif state == "notify_success":
        assert (result["status"], result["sourceTable"], result["files"]) == (
            "SUCCEEDED",
            orders,
            3,
        )
    elif state == "abort":
        assert (result["status"], result["error"]) == ("FAILED", "TargetNotWritableError")
        # The inline copy before it wrote the snapshot: kept for a resume (ferry.lifecycle.attempts).
        assert not result["snapshotRemoved"] and fs.list_files(result["snapshot"])
        assert "kept for a resume until" in result["cause"]
    elif state == "s3_copy_batch":
        assert result == {"files": 2, "bytes": sum(BATCH_OBJECTS.values()), "resumed": 0}
        listed = boto3.client("s3").list_objects_v2(Bucket=trail.target)["Contents"]
        assert sorted(o["Size"] for o in listed) == sorted(BATCH_OBJECTS.values())
    elif state == "catalog_events":
        # The trail's config replicates from a Hive metastore: Glue's event is not its source's.
        assert result == {"tables": [], "opened": [], "ignored": 1, "resumed": []}
    elif state == "catalog_poller":
        # A first poll: no position yet, so it replays the log the source keeps, in which the
        # sample's orders were created and filled.
        with HiveMetastoreCatalog("onprem", [trail.source_uri]) as catalog:
            current = HiveNotificationLog(catalog).current_event_id()
        assert result["replayed"] and result["events"] > 0
        assert result["opened"] == [f"{trail.database}.orders"]
        assert result["position"] is not None and 0 < result["position"] <= current
    elif state == "claim_changes":
        assert (result["run"], result["reason"], result["tables"]) == (False, "no changes", [])
    elif state == "close_window":
        assert result == {"more": False}
    elif state == "freshness_check":
        # The trail's orders, never replicated and without an RPO: measured, not over it; its
        # metrics in one PutMetricData request.
        assert result == {"tables": 1, "overRpo": [], "requests": 1, "skipped": None}
    elif state == "failover_switch":
        # Its rule and schedule turned off; no run of its config, no lock of its table.
        group = os.environ["FERRY_SCHEDULE_GROUP"]
        assert result == {
            "triggers": ["rule ferry-prod-sales-s3-0", f"schedule {group}/ferry-prod-sales"],
            "stoppedRuns": [], "awaitedRuns": [], "releasedClaims": 0, "notes": [],
        }  # fmt: skip
        assert boto3.client("events").describe_rule(Name="ferry-prod-sales-s3-0")["State"] == (
            "DISABLED"
        )
        schedule = boto3.client("scheduler").get_schedule(Name="ferry-prod-sales", GroupName=group)
        assert schedule["State"] == "DISABLED"
        assert schedule["ScheduleExpression"] == "cron(0 3 * * ? *)"  # the rest kept
    elif state == "failover":
        # The replica the commit wrote, promoted by the sample's failover, its baseline (its
        # three partitions) kept in the work location's failover/.
        [table] = result["tables"]
        assert (table["replicaTable"], table["failoverId"]) == (replica, result["failoverId"])
        assert (table["partitions"], table["alreadyPromoted"]) == (3, False)
        assert table["baselineUri"].startswith(f"s3://{trail.work}/failover/")
        assert fs.exists(table["baselineUri"])
        with HiveMetastoreCatalog("dr", [trail.replica_uri]) as catalog:
            promoted = catalog.get_table(f"{trail.database}_dr", "orders").parameters
        assert promoted[PROMOTED] == table["promoted"]
    elif state == "failback":
        # Nothing changed in DR since the sample's failover: nothing to copy home, no reverse
        # run; the original table restored and the replica un-promoted at once.
        assert (result["status"], result["executionArn"], result["reverseConfig"]) == (
            "DONE", None, None,
        )  # fmt: skip
        [table] = result["tables"]
        assert (table["source_table"], table["status"]) == (orders, "FAILED_BACK")
        with HiveMetastoreCatalog("dr", [trail.replica_uri]) as catalog:
            kept = catalog.get_table(f"{trail.database}_dr", "orders").parameters
        assert PROMOTED not in kept
    elif state == "summarize":
        assert (result["succeeded"], result["failed"]) == (1, 1)
        assert result["error"] == "StepFunctionsError"
    elif state == "housekeeping":
        assert (result["dryRun"], result["vacuum"], result["deleted"]) == (False, True, 0)
        assert fs.exists(result["reportUri"])
