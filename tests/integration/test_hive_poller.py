"""The Hive poller on the source metastore's real notification log: changes of the tables a
config selects become one window per table, a poller killed between handing over and
advancing hands the same events over again without a second run, a poller that finds no
position replays the log, a window whose execution is gone is resumed, and a log that lost
its events compares every selected table in full.

The state table and the change window state machine are the local runtime's emulator's
(the machine here only waits, so that its executions stay running while the test looks)."""

from __future__ import annotations

import json
from datetime import timedelta

import boto3
import pytest

from ferry.catalog.factory import open_catalog
from ferry.catalog.hive_events import HiveNotificationLog
from ferry.config import parse_config
from ferry.core import faults
from ferry.core.model import Partition
from ferry.feeds import ChangeFeeds, FeedState, WindowExecutions
from ferry.feeds.intake import FULL_COMPARISON
from ferry.replicas.ledger.dynamodb_table import create_state_table
from ferry.statemachine.feed_payloads import PollInput
from ferry.storage.aws import AwsClients
from tests.helpers import config_document

pytestmark = pytest.mark.integration


@pytest.fixture
def feeds_world(local_runtime, sample, unique, tmp_path):
    dynamodb = boto3.client("dynamodb")
    create_state_table(dynamodb, f"state-{unique}")
    sfn = boto3.client("stepfunctions")
    machine = sfn.create_state_machine(
        name=f"window-{unique}",
        definition=json.dumps(
            {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 600, "End": True}}}
        ),
        roleArn="arn:aws:iam::123456789012:role/window",
    )["stateMachineArn"]
    document = config_document(
        local_runtime,
        [
            {
                "source-table": {"database-name": sample.database, "table-name": "orders"},
                "replica-table": {
                    "database-name": f"{sample.database}_dr",
                    "table-location": (tmp_path / "replica").as_uri(),
                },
            }
        ],
        triggers={"catalog-events": {"window": "PT1S", "poll-interval": "PT1S"}},
    )
    config = parse_config(document)
    state = FeedState(dynamodb, f"state-{unique}")
    feeds = ChangeFeeds(
        state,
        WindowExecutions(sfn, machine),
        lambda uri: config,
        lambda catalog: open_catalog(catalog, AwsClients()),
        sleep=lambda seconds: None,
    )
    uri = f"s3://work/configs/{unique}-0123456789abcdef.yml"
    yield Feeds(feeds, state, uri, sfn, machine)
    for execution in sfn.list_executions(stateMachineArn=machine, statusFilter="RUNNING")[
        "executions"
    ]:
        sfn.stop_execution(executionArn=execution["executionArn"])


class Feeds:
    def __init__(self, feeds, state, uri, sfn, machine):
        self.feeds, self.state, self.uri, self.sfn, self.machine = feeds, state, uri, sfn, machine

    def poll(self):
        return self.feeds.poll(PollInput(config_uri=self.uri), seconds=0)

    def start_at(self, event_id: int) -> None:
        """A position, as a poller that had read the log up to ``event_id`` leaves it."""
        self.state.advance(self.uri, self.state.position(self.uri), event_id, self.feeds.clock())

    def lose_position(self) -> None:
        """The state table loses the position (a new table, a restored backup, a wipe)."""
        self.state.client.delete_item(
            TableName=self.state.table_name,
            Key={"pk": {"S": f"feed#{self.uri}"}, "sk": {"S": "position"}},
        )

    def executions(self) -> list[dict]:
        return self.sfn.list_executions(stateMachineArn=self.machine)["executions"]


def add_days(catalog, sample, days) -> None:
    """One ``add_partitions`` call (one ADD_PARTITION event) per day."""
    for day in days:
        location = f"{sample.orders.location}/dt={day}"
        catalog.add_partitions(
            sample.orders, [Partition((day,), sample.orders.storage.with_location(location))]
        )


def test_a_poll_with_no_position_replays_the_log_from_its_oldest_event(
    feeds_world, source_catalog, sample
):
    # The sample's tables were created and filled before any poll: the log keeps them.
    log = HiveNotificationLog(source_catalog)
    result = feeds_world.poll()
    table = f"{sample.database}.orders"
    assert result.replayed and result.position == log.current_event_id()
    assert (result.tables, result.opened) == ([table], [table])
    assert log.oldest_event_id() <= result.position - result.events + 1
    (execution,) = feeds_world.executions()
    assert feeds_world.state.window(feeds_world.uri, table).execution == execution["name"]
    # The position is kept: the next poll reads nothing more.
    again = feeds_world.poll()
    assert (again.replayed, again.events, again.opened) == (False, 0, [])


def test_a_change_is_handed_over_although_the_position_was_lost_before_the_poll(
    feeds_world, source_catalog, sample
):
    log = HiveNotificationLog(source_catalog)
    feeds_world.start_at(log.current_event_id())
    add_days(source_catalog, sample, ["2027-03-01"])
    feeds_world.lose_position()  # between the change and the poll that would read it
    result = feeds_world.poll()
    table = f"{sample.database}.orders"
    assert result.replayed and table in result.opened
    assert "ADD_PARTITION" in feeds_world.state.window(feeds_world.uri, table).kinds
    assert result.position == log.current_event_id()


def test_a_window_whose_execution_is_gone_is_resumed_by_the_next_poll(
    feeds_world, source_catalog, sample
):
    feeds_world.start_at(HiveNotificationLog(source_catalog).current_event_id())
    table = f"{sample.database}.orders"
    # A window left open with an execution that no longer exists (the emulated AWS came
    # back without it), and no change of its table to come.
    long_ago = feeds_world.feeds.clock() - timedelta(hours=1)
    window = feeds_world.state.note(feeds_world.uri, table, 1, None, {"ADD_PARTITION"}, long_ago)
    feeds_world.state.started(window, "lost-execution")
    result = feeds_world.poll()
    assert (result.events, result.resumed) == (0, [table])
    (execution,) = feeds_world.executions()
    assert execution["status"] == "RUNNING"
    assert feeds_world.state.window(feeds_world.uri, table).execution == execution["name"]
    assert feeds_world.poll().resumed == []  # it runs now


def test_a_burst_of_partitions_is_one_window_of_its_table(feeds_world, source_catalog, sample):
    feeds_world.start_at(HiveNotificationLog(source_catalog).current_event_id())
    days = [f"2027-01-{day:02d}" for day in range(1, 21)]
    add_days(source_catalog, sample, days)
    # A change of a table the config does not select: read, counted, ignored.
    source_catalog.alter_table(sample.customers)

    result = feeds_world.poll()
    table = f"{sample.database}.orders"
    assert (result.events, result.tables, result.opened, result.ignored) == (
        21,
        [table],
        [table],
        1,
    )
    assert result.position == HiveNotificationLog(source_catalog).current_event_id()
    window = feeds_world.state.window(feeds_world.uri, table)
    assert (window.changes, window.kinds) == (20, frozenset({"ADD_PARTITION"}))
    (execution,) = feeds_world.executions()
    assert window.execution == execution["name"]
    # Nothing new: the next poll reads nothing and starts nothing.
    assert feeds_world.poll().events == 0
    assert len(feeds_world.executions()) == 1


def test_a_poller_killed_after_handing_over_hands_over_again_and_converges(
    feeds_world, source_catalog, sample
):
    feeds_world.start_at(HiveNotificationLog(source_catalog).current_event_id())
    before = feeds_world.state.position(feeds_world.uri)
    add_days(source_catalog, sample, ["2027-02-01", "2027-02-02"])
    with faults.armed(faults.Fault("poller.handed-over")), pytest.raises(faults.InjectedFault):
        feeds_world.poll()
    table = f"{sample.database}.orders"
    assert feeds_world.state.position(feeds_world.uri) == before  # not advanced
    assert feeds_world.state.window(feeds_world.uri, table).changes == 2

    again = feeds_world.poll()
    assert again.events == 2 and again.opened == []  # the same events, the same window
    assert feeds_world.state.window(feeds_world.uri, table).changes == 4
    assert len(feeds_world.executions()) == 1
    assert feeds_world.state.position(feeds_world.uri) == before + 2


def test_a_log_that_lost_the_events_after_the_position_compares_every_table(
    feeds_world, source_catalog, sample, caplog
):
    current = HiveNotificationLog(source_catalog).current_event_id()
    # A position the log does not reach: the log was started anew (or cleaned past it).
    feeds_world.state.advance(feeds_world.uri, None, current + 1000, feeds_world.feeds.clock())
    result = feeds_world.poll()
    table = f"{sample.database}.orders"
    assert (result.gap, result.tables, result.opened) == (True, [table], [table])
    assert feeds_world.state.window(feeds_world.uri, table).kinds == frozenset({FULL_COMPARISON})
    assert feeds_world.state.position(feeds_world.uri) == current
    assert "compared in full" in caplog.text
