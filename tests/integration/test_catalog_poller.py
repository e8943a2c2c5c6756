"""The Hive poller's state module (``ferry/states/catalog_poller.py``): a change in the real
source metastore's notification log, read from where the poller stands, opens its table's
window, with one execution; the state table and the state machine are the emulator's."""

from __future__ import annotations

import pytest

from ferry.catalog.hive_events import HiveNotificationLog
from ferry.statemachine.feed_payloads import PollInput
from ferry.states import catalog_poller
from tests.integration import test_hive_poller as poller

pytestmark = pytest.mark.integration

feeds_world = poller.feeds_world


def test_a_change_after_the_position_opens_its_tables_window(feeds_world, source_catalog, sample):
    log = HiveNotificationLog(source_catalog)
    feeds_world.start_at(log.current_event_id())
    poller.add_days(source_catalog, sample, ["2027-04-01"])

    result = catalog_poller.run(feeds_world.feeds, PollInput(config_uri=feeds_world.uri), 0)

    table = f"{sample.database}.orders"
    assert (result.replayed, result.opened, result.tables) == (False, [table], [table])
    assert result.events >= 1 and result.position == log.current_event_id()
    assert "ADD_PARTITION" in feeds_world.state.window(feeds_world.uri, table).kinds
    assert len(feeds_world.executions()) == 1
