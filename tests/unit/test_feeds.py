"""The change feeds' intake, windows, claim and close, on DynamoDB, Step Functions and Glue
(moto, in process): a burst is one window and one execution, repeats and reorderings change
nothing, a change during a run gets one follow-up, and the source catalog decides a run."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from ferry.catalog.factory import open_catalog
from ferry.catalog.hive_events import HiveEvent
from ferry.config import parse_config
from ferry.feeds import (
    ChangeFeeds,
    FeedState,
    Window,
    WindowExecutions,
    execution_name,
    glue_changes,
)
from ferry.feeds.catalog_changes import CatalogChange, hive_changes
from ferry.replicas.ledger.dynamodb_table import create_state_table
from ferry.statemachine.feed_payloads import (
    CatalogEventInput,
    ChangeWindowInput,
    CloseWindowInput,
    IntakeResult,
)
from ferry.storage.aws import AwsClients

EVENTS = Path(__file__).parents[2] / "events"
CONFIG_URI = "s3://work/configs/sales-0123456789abcdef.yml"
REGION = "us-east-1"
TABLE = "sales.orders"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 21, 8, 30, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def config_data(strategy: str = "UPSERT", **source) -> dict:
    return {
        "source-catalog": {"name": "lake", "glue": {"region": REGION, **source}},
        "replica-catalog": {"name": "dr", "glue": {"region": REGION}},
        "triggers": {"catalog-events": {"window": "PT20S"}},
        "table-replications": [
            {
                "source-table": {"database-name": "sales", "table-name": "orders"},
                "replica-table": {"database-name": "sales_dr", "table-location": "s3://dr/orders"},
                "replication-strategy": strategy,
            },
            {
                "source-table": {"database-name": "sales", "table-name-pattern": "events_.*"},
                "replica-table": {"database-name": "sales_dr", "table-location": "s3://dr/events"},
            },
        ],
    }


@pytest.fixture
def world(monkeypatch):
    """DynamoDB's state table, the change window state machine, Glue's two databases."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)  # the local runtime's, when it runs first
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        create_state_table(dynamodb, "state")
        sfn = boto3.client("stepfunctions", region_name=REGION)
        role = "arn:aws:iam::123456789012:role/window"
        machine = sfn.create_state_machine(
            name="window",
            definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
            roleArn=role,
        )["stateMachineArn"]
        glue = boto3.client("glue", region_name=REGION)
        for database in ("sales", "sales_dr"):
            glue.create_database(DatabaseInput={"Name": database})
        yield World(dynamodb, sfn, machine, glue)


class World:
    def __init__(self, dynamodb, sfn, machine, glue):
        self.dynamodb, self.sfn, self.machine, self.glue = dynamodb, sfn, machine, glue
        self.clock = Clock()
        self.state = FeedState(dynamodb, "state")
        self.data = config_data()

    def feeds(self, data: dict | None = None) -> ChangeFeeds:
        config = parse_config(data or self.data)
        return ChangeFeeds(
            self.state,
            WindowExecutions(self.sfn, self.machine),
            lambda uri: config,
            lambda catalog: open_catalog(catalog, AwsClients()),
            self.clock,
        )

    def executions(self) -> list[dict]:
        listed = self.sfn.list_executions(stateMachineArn=self.machine)["executions"]
        return sorted(listed, key=lambda e: e["name"])

    def create_table(self, database: str, name: str) -> None:
        self.glue.create_table(
            DatabaseName=database,
            TableInput={
                "Name": name,
                "StorageDescriptor": {"Location": f"s3://lake/{name}", "Columns": []},
                "PartitionKeys": [{"Name": "dt", "Type": "string"}],
            },
        )


def glue_event(kind: str = "BatchCreatePartition", table: str = "orders", **event) -> dict:
    return {
        "version": "0",
        "id": "e1",
        "detail-type": "Glue Data Catalog Table State Change",
        "source": "aws.glue",
        "account": "123456789012",
        "time": "2026-11-21T08:29:58Z",
        "region": REGION,
        "resources": [],
        "detail": {
            "databaseName": "sales",
            "tableName": table,
            "typeOfChange": kind,
            "changedPartitions": ["[2026-11-21]"],
        },
        **event,
    }


def deliver(feeds: ChangeFeeds, event: dict) -> IntakeResult:
    return feeds.glue_event(CatalogEventInput(config_uri=CONFIG_URI, event=event))


# -- what the feeds say -----------------------------------------------------------------------


def test_the_sample_event_is_one_change_of_one_table():
    sample = json.loads((EVENTS / "catalog_events.json").read_text())["event"]
    origin, changes = glue_changes(sample)
    assert (origin.account, origin.region) == ("123456789012", "us-east-1")
    assert changes == [
        CatalogChange(
            "sales", "orders", "BatchCreatePartition", datetime(2026, 11, 21, 8, 30, tzinfo=UTC)
        )
    ]


def test_a_database_event_names_its_tables_and_a_database_alone_names_none():
    event = {
        "source": "aws.glue",
        "detail-type": "Glue Data Catalog Database State Change",
        "detail": {
            "databaseName": "sales",
            "typeOfChange": "BatchDeleteTable",
            "changedTables": ["orders", "events_eu"],
        },
    }
    assert [c.qualified_name for c in glue_changes(event)[1]] == ["sales.orders", "sales.events_eu"]
    event["detail"] |= {"typeOfChange": "CreateDatabase", "changedTables": []}
    assert glue_changes(event)[1] == []
    assert glue_changes({"source": "aws.glue", "detail-type": "Glue Job State Change"})[1] == []


def test_hive_events_of_tables_are_changes_and_database_events_are_not():
    at = datetime(2026, 11, 21, tzinfo=UTC)
    events = [
        HiveEvent(1, at, "CREATE_DATABASE", "sales", None),
        HiveEvent(2, at, "ADD_PARTITION", "sales", "orders", (("2026-11-21",),)),
        HiveEvent(3, at, "DROP_DATABASE", "sales", None),
    ]
    assert hive_changes(events) == [CatalogChange("sales", "orders", "ADD_PARTITION", at)]


# -- merging ----------------------------------------------------------------------------------


def test_a_burst_of_changes_is_one_window_and_one_execution(world):
    feeds = world.feeds()
    results = [deliver(feeds, glue_event()) for _ in range(100)]
    assert [r.opened for r in results] == [["sales.orders"]] + [[]] * 99
    (execution,) = world.executions()
    assert json.loads(
        world.sfn.describe_execution(executionArn=execution["executionArn"])["input"]
    ) == {"configUri": CONFIG_URI, "table": TABLE, "windowSeconds": 20}
    window = world.state.window(CONFIG_URI, TABLE)
    assert (window.changes, window.execution) == (100, execution["name"])
    assert window.first_change == datetime(2026, 11, 21, 8, 29, 58, tzinfo=UTC)


def test_changes_of_tables_the_config_does_not_select_are_counted_and_ignored(world):
    feeds = world.feeds()
    assert deliver(feeds, glue_event(table="customers")) == IntakeResult(
        tables=[], opened=[], ignored=1
    )
    pattern = deliver(feeds, glue_event(table="events_eu"))
    assert pattern.opened == ["sales.events_eu"]
    other_account = deliver(
        world.feeds(config_data(**{"catalog-id": "210987654321"})), glue_event()
    )
    assert (other_account.tables, other_account.ignored) == ([], 1)
    other_region = deliver(feeds, glue_event(region="eu-west-1"))
    assert (other_region.tables, other_region.ignored) == ([], 1)
    (execution,) = world.executions()
    assert execution["name"].startswith("sales-events_eu-")


def test_an_event_delivered_twice_or_late_changes_nothing_but_the_count(world):
    feeds = world.feeds()
    first, second = glue_event(time="2026-11-21T08:29:58Z"), glue_event(time="2026-11-21T08:29:50Z")
    for event in (first, first, second):  # a repeat, then an earlier change delivered late
        deliver(feeds, event)
    assert len(world.executions()) == 1
    assert world.state.window(CONFIG_URI, TABLE).changes == 3


def test_an_intake_that_stopped_before_starting_the_execution_is_completed_by_the_next(world):
    feeds = world.feeds()
    # The first change was noted, then the intake died before StartExecution.
    world.state.note(CONFIG_URI, TABLE, 1, None, {"UpdateTable"}, world.clock())
    assert world.executions() == []
    deliver(feeds, glue_event())
    deliver(feeds, glue_event())
    (execution,) = world.executions()
    assert world.state.window(CONFIG_URI, TABLE).execution == execution["name"]


def test_a_window_whose_execution_ended_without_closing_is_resumed_by_the_next_intake(world):
    feeds = world.feeds()
    deliver(feeds, glue_event())
    (stopped,) = world.executions()
    world.sfn.stop_execution(executionArn=stopped["executionArn"])
    world.clock.now += timedelta(seconds=30)
    assert deliver(feeds, glue_event(table="customers")).resumed == []  # within its wait
    assert len(world.executions()) == 1
    # Past its wait and a minute: any intake of the config resumes it, even one of a table
    # the config does not select (no change of the window's own table may ever come).
    world.clock.now += timedelta(minutes=1)
    assert deliver(feeds, glue_event(table="customers")).resumed == [TABLE]
    window = world.state.window(CONFIG_URI, TABLE)
    restart = next(e for e in world.executions() if e["name"] != stopped["name"])
    assert (window.execution, window.restarts) == (restart["name"], 1)
    described = world.sfn.describe_execution(executionArn=restart["executionArn"])
    assert json.loads(described["input"]) == {
        "configUri": CONFIG_URI, "table": TABLE, "windowSeconds": 0,  # it claims at once
    }  # fmt: skip
    # Its restart ends too without closing: another, with a name of its own.
    world.sfn.stop_execution(executionArn=restart["executionArn"])
    assert deliver(feeds, glue_event()).resumed == [TABLE]
    assert len({e["name"] for e in world.executions()}) == 3
    assert world.state.window(CONFIG_URI, TABLE).restarts == 2


def test_a_running_execution_or_a_window_taken_meanwhile_is_not_resumed(world):
    feeds = world.feeds()
    deliver(feeds, glue_event())
    world.clock.now += timedelta(hours=2)  # a long run: its execution is still running
    assert deliver(feeds, glue_event()).resumed == []
    (execution,) = world.executions()
    world.sfn.stop_execution(executionArn=execution["executionArn"])
    stale = world.state.window(CONFIG_URI, TABLE)
    # Another intake resumed it first: this one's conditional write fails, and starts nothing.
    assert world.state.restarted(stale, "another") is True
    assert world.state.restarted(stale, "mine") is False
    assert world.state.window(CONFIG_URI, TABLE).execution == "another"


def test_execution_names_stay_within_step_functions_rules_for_the_longest_names():
    # Glue allows 255 characters in a database's and a table's name, Unicode included.
    opened = datetime(2026, 11, 21, 8, 30, 0, 123456, tzinfo=UTC)
    uri = "s3://cdk-hnb659fds-assets-123456789012-us-east-1/" + "a" * 64 + ".yml"
    names = set()
    for table in ("d" * 255 + "." + "t" * 255, "ventes.commandes_été" * 10, "sales.orders"):
        window = Window(uri, table, opened, 1)
        for restart in (0, 1, 9, 10**6):
            name = execution_name(window, restart)
            assert len(name) <= 80 and re.fullmatch(r"[A-Za-z0-9_-]+", name), name
            assert name == execution_name(Window(uri, table, opened, 7), restart)  # the same
            names.add(name)
    assert len(names) == 12  # each window and restart its own
    # Two configs' windows of one table are two executions, whatever the names' length.
    long = "d" * 255 + "." + "t" * 255
    assert execution_name(Window(uri, long, opened, 1)) != execution_name(
        Window(uri.replace("a", "b"), long, opened, 1)
    )


# -- claim and close --------------------------------------------------------------------------


def claim(feeds: ChangeFeeds):
    return feeds.claim(ChangeWindowInput(config_uri=CONFIG_URI, table=TABLE, window_seconds=20))


def close(feeds: ChangeFeeds, claimed: int) -> bool:
    return feeds.close(CloseWindowInput(config_uri=CONFIG_URI, table=TABLE, claimed=claimed)).more


def test_a_claimed_window_runs_the_table_and_closes_when_nothing_came_meanwhile(world):
    world.create_table("sales", "orders")
    feeds = world.feeds()
    for _ in range(3):
        deliver(feeds, glue_event())
    claimed = claim(feeds)
    assert (claimed.run, claimed.tables, claimed.changes) == (True, [TABLE], 3)
    assert claimed.trigger == {
        "catalogEvents": {
            "changes": 3,
            "kinds": ["BatchCreatePartition"],
            "windowOpened": "2026-11-21T08:30:00+00:00",
        },
        "time": "2026-11-21T08:29:58+00:00",
    }
    assert close(feeds, claimed.changes) is False
    assert world.state.window(CONFIG_URI, TABLE) is None
    # The next change opens a new window, with an execution of its own.
    world.clock.now += timedelta(minutes=1)
    assert deliver(feeds, glue_event()).opened == [TABLE]
    assert len(world.executions()) == 2


def test_changes_during_the_run_get_one_follow_up_that_claims_them_all(world):
    world.create_table("sales", "orders")
    feeds = world.feeds()
    deliver(feeds, glue_event())
    first = claim(feeds)
    for _ in range(5):  # while the table replicates
        deliver(feeds, glue_event(time="2026-11-21T08:31:00Z"))
    assert len(world.executions()) == 1  # no queue: the window's execution follows up
    assert close(feeds, first.changes) is True
    follow_up = claim(feeds)
    assert (follow_up.run, follow_up.changes, follow_up.trigger["catalogEvents"]["changes"]) == (
        True,
        6,
        5,
    )
    assert follow_up.trigger["time"] == "2026-11-21T08:31:00+00:00"
    assert close(feeds, follow_up.changes) is False


def test_a_table_created_and_dropped_within_the_window_needs_no_run(world):
    feeds = world.feeds()
    deliver(feeds, glue_event("CreateTable"))
    deliver(feeds, glue_event("DeleteTable"))
    claimed = claim(feeds)
    assert (claimed.run, claimed.tables) == (False, [])
    assert claimed.reason == "dropped at the source; the config does not propagate deletes"
    assert close(feeds, claimed.changes) is False


def test_a_dropped_table_is_a_run_only_where_deletes_propagate_and_a_replica_exists(world):
    feeds = world.feeds(config_data("PROPAGATE_DELETES"))
    deliver(feeds, glue_event("DeleteTable"))
    assert claim(feeds).reason == "dropped at the source, and no replica exists"
    world.create_table("sales_dr", "orders")
    deliver(feeds, glue_event("DeleteTable"))
    claimed = claim(feeds)
    assert (claimed.run, claimed.tables) == (True, [TABLE])


def test_a_closed_window_claims_nothing(world):
    claimed = claim(world.feeds())
    assert (claimed.run, claimed.changes, claimed.reason) == (False, 0, "no changes")
    assert close(world.feeds(), 0) is False


# -- positions --------------------------------------------------------------------------------


def test_a_position_moves_only_from_what_its_writer_read(world):
    state, now = world.state, world.clock()
    assert state.position(CONFIG_URI) is None
    assert state.advance(CONFIG_URI, None, 10, now) is True
    assert state.advance(CONFIG_URI, None, 12, now) is False  # another poller started first
    assert state.advance(CONFIG_URI, 10, 15, now) is True
    assert state.advance(CONFIG_URI, 10, 11, now) is False  # read 10, but it moved to 15
    # Each config has its own position: another with the same file name (another team's
    # folder, uploaded as another object), or this one edited, has none of its own yet.
    assert state.position("s3://work/configs/sales-fedcba9876543210.yml") is None
