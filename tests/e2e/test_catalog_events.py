"""Catalog change feeds end to end on the local runtime: a real change in the source catalog
(a partition added through the metastore's Thrift API; Glue's ``BatchCreatePartition``)
reaches the replica through the deployed pipeline — the poller or Glue's event, the change
window state machine, the replication state machine — with no marker and no schedule of the
config's own. A burst is one run; a table created and dropped within the window is none; a
change during a run gets one follow-up."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from ferry.catalog.glue import GlueCatalog
from ferry.catalog.hive_events import HiveNotificationLog
from ferry.commands.local import run_local_trigger
from ferry.core.model import Partition, StorageDescriptor
from ferry.feeds import FeedState
from ferry.local import deploy
from ferry.local.samples import (
    ORDER_COLUMNS,
    PARQUET,
    create_sample_tables,
    last_days,
    order_rows,
    write_parquet,
)
from ferry.storage import fs
from tests.conftest import NOW
from tests.helpers import config_document

pytestmark = pytest.mark.e2e


def wait_for(
    condition: Callable[[], bool],
    what: str,
    seconds: float = 180,
    explain: Callable[[], str] = lambda: "",
) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:.0f} s: {what}\n{explain()}")
        time.sleep(0.25)


def add_partitions(catalog, table, days: list[str]) -> None:
    """What a writer does: each day's file, then the partitions, in one catalog call."""
    partitions = []
    for day in days:
        location = fs.join(table.location, f"dt={day}")
        write_parquet(location, "part-00000.parquet", order_rows(day))
        storage = StorageDescriptor(location=location, columns=ORDER_COLUMNS, **PARQUET)
        partitions.append(Partition((day,), storage))
    catalog.add_partitions(table, partitions)


class Runs:
    """The replication runs the change window started for a table, and the windows' own."""

    def __init__(self, pipeline, sfn):
        self.pipeline, self.sfn = pipeline, sfn
        self.windows_machine = pipeline.outputs["CatalogChangesStateMachineArn"]
        self.before = self._arns(pipeline.state_machine_arn)
        self.windows_before = self._arns(self.windows_machine)

    def _arns(self, machine: str) -> set[str]:
        return {e["executionArn"] for e in self._list(machine)}

    def _list(self, machine: str) -> list[dict]:
        found, token = [], None
        while True:
            page = self.sfn.list_executions(
                stateMachineArn=machine, **({"nextToken": token} if token else {})
            )
            found += page["executions"]
            token = page.get("nextToken")
            if not token:
                return found

    def of(self, table: str) -> list[dict]:
        """The runs started since, for ``table`` by a catalog change: their inputs, oldest first."""
        runs = []
        for execution in self._list(self.pipeline.state_machine_arn):
            if execution["executionArn"] in self.before:
                continue
            described = self.sfn.describe_execution(executionArn=execution["executionArn"])
            given = json.loads(described["input"])
            if given.get("tables") == [table] and "catalogEvents" in given.get("trigger", {}):
                runs.append(described)
        return sorted(runs, key=lambda d: d["startDate"])

    def windows(self) -> list[dict]:
        return [
            e
            for e in self._list(self.windows_machine)
            if e["executionArn"] not in self.windows_before
        ]

    def explain(self) -> str:
        """What each window's execution did: its states' results and failures."""
        lines = []
        for window in self.windows():
            lines.append(f"{window['name']}: {window['status']}")
            history = self.sfn.get_execution_history(
                executionArn=window["executionArn"], maxResults=1000
            )["events"]
            for event in history:
                details = (
                    event.get("taskSucceededEventDetails")
                    or event.get("taskFailedEventDetails")
                    or event.get("executionFailedEventDetails")
                    or {}
                )
                if details:
                    lines.append(f"  {event['type']}: {json.dumps(details, default=str)[:600]}")
        return "\n".join(lines)

    def settled(self) -> bool:
        """Every window's execution and every run it started has ended."""
        running = [e for e in self.windows() if e["status"] == "RUNNING"]
        return not running


def hive_feed_config(local_runtime, database: str, replica_location: str) -> dict:
    return config_document(
        local_runtime,
        [
            {
                "source-table": {"database-name": database, "table-name": "orders"},
                "replica-table": {
                    "database-name": f"{database}_dr",
                    "table-location": replica_location,
                },
            }
        ],
        triggers={"catalog-events": {"window": "PT1S", "poll-interval": "PT1S"}},
    )


def has_partition(catalog, database: str, day: str) -> bool:
    replica = catalog.get_table(database, "orders")
    return replica is not None and (day,) in catalog.list_partition_values(replica)


def test_a_partition_added_through_thrift_reaches_the_replica_through_the_poller(
    pipeline, sfn, local_runtime, aws, sample, source_catalog, replica_catalog, write_config,
    catalog_triggers, tmp_path,
):  # fmt: skip
    replica_db = f"{sample.database}_dr"
    config = write_config(
        hive_feed_config(local_runtime, sample.database, (tmp_path / "replica" / "orders").as_uri())
    )
    uri = deploy.upload_config(aws["s3"], pipeline.work_uri, config)
    state = FeedState(boto3.client("dynamodb"), pipeline.state_table)
    runs = Runs(pipeline, sfn)
    # A change made before the trigger is installed: the poller has no position yet, so it
    # replays the log and replicates it too.
    add_partitions(source_catalog, sample.orders, ["2026-11-30"])
    assert run_local_trigger(config, local_runtime.state_dir) == 0
    wait_for(lambda: state.position(uri) is not None, "the poller's first poll")
    wait_for(
        lambda: has_partition(replica_catalog, replica_db, "2026-11-30"),
        "the partition added before the trigger, in the replica metastore",
        explain=runs.explain,
    )

    day = "2026-12-01"
    add_partitions(source_catalog, sample.orders, [day])
    wait_for(
        lambda: has_partition(replica_catalog, replica_db, day),
        "the new partition in the replica metastore",
        explain=runs.explain,
    )
    wait_for(runs.settled, "the change window's execution to end")
    table = f"{sample.database}.orders"
    *_, run = runs.of(table)
    assert run["status"] == "SUCCEEDED"
    trigger = json.loads(run["input"])["trigger"]
    assert "ADD_PARTITION" in trigger["catalogEvents"]["kinds"]
    replica = replica_catalog.get_table(replica_db, "orders")
    (partition,) = [p for p in replica_catalog.list_partitions(replica) if p.values == (day,)]
    source_file = fs.join(sample.orders.location, f"dt={day}", "part-00000.parquet")
    assert fs.read_bytes(fs.join(partition.location, "part-00000.parquet")) == fs.read_bytes(
        source_file
    )
    assert state.position(uri) >= 1


def test_two_configs_of_one_file_name_on_one_metastore_each_replicate_their_own_changes(
    pipeline, sfn, local_runtime, aws, sample, source_catalog, replica_catalog,
    catalog_triggers, tmp_path,
):  # fmt: skip
    # Two teams, two folders, one file name, one source metastore, a table each.
    other = create_sample_tables(
        source_catalog, f"{sample.database}_b", local_runtime.warehouse, last_days(NOW.date(), 1)
    )
    teams = {"teamA": sample, "teamB": other}
    configs = {}
    for team, tables in teams.items():
        path = tmp_path / team / "feeds.yml"
        path.parent.mkdir()
        location = (tmp_path / "replica" / team).as_uri()
        path.write_text(json.dumps(hive_feed_config(local_runtime, tables.database, location)))
        configs[team] = path
    state = FeedState(boto3.client("dynamodb"), pipeline.state_table)
    runs = Runs(pipeline, sfn)
    uris = {team: deploy.config_uri(pipeline.work_uri, path) for team, path in configs.items()}
    assert uris["teamA"] != uris["teamB"]
    log = HiveNotificationLog(source_catalog)

    def replicated(team: str, day: str) -> None:
        database = f"{teams[team].database}_dr"
        wait_for(
            lambda: has_partition(replica_catalog, database, day),
            f"{team}'s partition {day} in its replica",
            seconds=300,
            explain=runs.explain,
        )

    # Team A's poller runs first and reads past a change of each team's table: a position
    # the two shared would be past team B's change before team B's poller ever read it.
    assert run_local_trigger(configs["teamA"], local_runtime.state_dir) == 0
    wait_for(lambda: state.position(uris["teamA"]) is not None, "team A's first poll")
    add_partitions(source_catalog, sample.orders, ["2026-12-02"])
    add_partitions(source_catalog, other.orders, ["2026-12-03"])
    current = log.current_event_id()
    wait_for(lambda: state.position(uris["teamA"]) >= current, "team A's poller past both")
    assert run_local_trigger(configs["teamB"], local_runtime.state_dir) == 0
    replicated("teamA", "2026-12-02")
    replicated("teamB", "2026-12-03")

    # Both polling: a change of each table at once, each replicated by its own config.
    add_partitions(source_catalog, sample.orders, ["2026-12-04"])
    add_partitions(source_catalog, other.orders, ["2026-12-05"])
    replicated("teamA", "2026-12-04")
    replicated("teamB", "2026-12-05")
    assert {state.position(uri) for uri in uris.values()} == {log.current_event_id()}
    wait_for(runs.settled, "the change windows' executions to end", seconds=300)


def test_a_window_whose_execution_was_lost_is_resumed_by_the_poller_and_replicated(
    pipeline, sfn, local_runtime, aws, sample, source_catalog, replica_catalog, write_config,
    catalog_triggers, tmp_path,
):  # fmt: skip
    replica_db = f"{sample.database}_dr"
    config = write_config(
        hive_feed_config(local_runtime, sample.database, (tmp_path / "replica" / "orders").as_uri())
    )
    uri = deploy.config_uri(pipeline.work_uri, config)
    state = FeedState(boto3.client("dynamodb"), pipeline.state_table)
    runs = Runs(pipeline, sfn)
    # What a runtime that lost its executions leaves: the change was read (the position is
    # past it) and noted in its table's window, whose execution no longer exists.
    add_partitions(source_catalog, sample.orders, ["2026-12-06"])
    now = datetime.now(UTC)
    state.advance(uri, None, HiveNotificationLog(source_catalog).current_event_id(), now)
    table = f"{sample.database}.orders"
    window = state.note(uri, table, 1, None, {"ADD_PARTITION"}, now - timedelta(hours=1))
    state.started(window, "an-execution-that-is-gone")

    assert run_local_trigger(config, local_runtime.state_dir) == 0
    wait_for(
        lambda: has_partition(replica_catalog, replica_db, "2026-12-06"),
        "the window's partition in the replica metastore",
        explain=runs.explain,
    )
    wait_for(runs.settled, "the resumed window's execution to end")
    assert state.window(uri, table) is None  # closed
    (resumed,) = runs.windows()
    assert resumed["name"].endswith("-r1") and resumed["status"] == "SUCCEEDED"


@pytest.fixture
def glue_world(aws, unique, bucket):
    source_bucket = f"src-{unique}"
    aws["s3"].create_bucket(Bucket=source_bucket)
    glue = GlueCatalog("landing", aws["glue"])
    sample = create_sample_tables(
        glue, f"events_{unique}", f"s3://{source_bucket}/warehouse", last_days(NOW.date(), 2)
    )
    return glue, sample


def glue_config(sample, bucket: str, window: str) -> dict:
    return {
        "source-catalog": {"name": "landing", "glue": {"region": "us-east-1"}},
        "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
        "triggers": {"catalog-events": {"window": window}},
        "table-replications": [
            {
                "source-table": {"database-name": sample.database, "table-name": "orders"},
                "replica-table": {
                    "database-name": f"{sample.database}_dr",
                    "table-location": f"s3://{bucket}/orders",
                },
            },
            {
                "source-table": {"database-name": sample.database, "table-name-pattern": "tmp_.*"},
                "replica-table": {
                    "database-name": f"{sample.database}_dr",
                    "table-location": f"s3://{bucket}/tmp",
                },
            },
        ],
    }


def test_a_burst_of_glue_partitions_is_one_run_and_a_table_created_and_dropped_is_none(
    pipeline, sfn, local_runtime, aws, glue_world, bucket, write_config, catalog_triggers
):
    glue, sample = glue_world
    config = write_config(glue_config(sample, bucket, "PT4S"))
    runs = Runs(pipeline, sfn)
    assert run_local_trigger(config, local_runtime.state_dir) == 0

    days = [f"2027-01-{d:02d}" for d in range(1, 31)] + [f"2027-02-{d:02d}" for d in range(1, 21)]
    for start in range(0, len(days), 5):  # 10 BatchCreatePartition calls of 5
        add_partitions(glue, sample.orders, days[start : start + 5])
    # A table that lives shorter than the window: its events open a window, and no run.
    glue.create_table(replace(sample.customers, name="tmp_scratch"))
    glue.drop_table(sample.database, "tmp_scratch")

    replica_db = f"{sample.database}_dr"

    def all_there() -> bool:
        replica = glue.get_table(replica_db, "orders")
        return replica is not None and len(glue.list_partition_values(replica)) == 52

    wait_for(
        all_there, "the 50 new partitions and the 2 first in the replica", explain=runs.explain
    )
    wait_for(runs.settled, "the change windows' executions to end")
    (run,) = runs.of(f"{sample.database}.orders")
    assert run["status"] == "SUCCEEDED"
    assert json.loads(run["input"])["trigger"]["catalogEvents"]["changes"] >= 10
    assert runs.of(f"{sample.database}.tmp_scratch") == []
    windows = runs.windows()
    assert len(windows) == 2 and {w["status"] for w in windows} == {"SUCCEEDED"}
    assert glue.get_table(replica_db, "tmp_scratch") is None


def test_a_change_during_a_run_is_replicated_by_one_follow_up(
    pipeline, sfn, local_runtime, aws, glue_world, bucket, write_config, catalog_triggers, arm
):
    glue, sample = glue_world
    config = write_config(glue_config(sample, bucket, "PT1S"))
    runs = Runs(pipeline, sfn)
    assert run_local_trigger(config, local_runtime.state_dir) == 0
    table = f"{sample.database}.orders"
    # The first run holds in Plan, after its listing, long enough for two more changes.
    arm({"point": "plan.planned", "action": "hang", "seconds": 6})
    add_partitions(glue, sample.orders, ["2027-03-01"])
    wait_for(lambda: len(runs.of(table)) == 1, "the first run to start")
    time.sleep(1.0)  # it is planning (or planned): what comes now is not in this run
    add_partitions(glue, sample.orders, ["2027-03-02"])
    add_partitions(glue, sample.orders, ["2027-03-03"])

    replica_db = f"{sample.database}_dr"

    def has(day: str) -> bool:
        replica = glue.get_table(replica_db, "orders")
        return replica is not None and (day,) in glue.list_partition_values(replica)

    wait_for(lambda: has("2027-03-03") and has("2027-03-02"), "the follow-up's partitions")
    wait_for(runs.settled, "the change window's execution to end")
    first, follow_up = runs.of(table)
    assert (first["status"], follow_up["status"]) == ("SUCCEEDED", "SUCCEEDED")
    assert json.loads(follow_up["input"])["trigger"]["catalogEvents"]["changes"] == 2
    (window,) = runs.windows()
    assert window["status"] == "SUCCEEDED"
