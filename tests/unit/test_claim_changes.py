"""State `Claim changes` of the change window (``ferry/states/claim_changes.py``): a window's
changes are claimed once; a table created and dropped within it needs no run. DynamoDB, Step
Functions and Glue in moto (the change feeds' own world, ``tests/unit/test_feeds.py``)."""

from __future__ import annotations

from ferry.statemachine.feed_payloads import ChangeWindowInput
from ferry.states import claim_changes
from tests.unit import test_feeds as feeds

world = feeds.world


def claim(world):
    return claim_changes.run(
        world.feeds(),
        ChangeWindowInput(config_uri=feeds.CONFIG_URI, table=feeds.TABLE, window_seconds=20),
    )


def test_a_windows_changes_are_claimed_once_for_one_run(world):
    world.create_table("sales", "orders")
    for _ in range(3):
        feeds.deliver(world.feeds(), feeds.glue_event())

    claimed = claim(world)

    assert (claimed.run, claimed.tables, claimed.changes) == (True, [feeds.TABLE], 3)
    assert claimed.trigger["catalogEvents"]["kinds"] == ["BatchCreatePartition"]


def test_a_table_created_and_dropped_within_the_window_needs_no_run(world):
    feeds.deliver(world.feeds(), feeds.glue_event("CreateTable"))
    feeds.deliver(world.feeds(), feeds.glue_event("DeleteTable"))

    claimed = claim(world)

    assert (claimed.run, claimed.tables) == (False, [])
    assert claimed.reason == "dropped at the source; the config does not propagate deletes"
