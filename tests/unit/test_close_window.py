"""State `Close the window` (``ferry/states/close_window.py``): a window closes when nothing
came during its run, and asks for a follow-up when changes did. DynamoDB, Step Functions and
Glue in moto (the change feeds' own world, ``tests/unit/test_feeds.py``)."""

from __future__ import annotations

from ferry.statemachine.feed_payloads import ChangeWindowInput, CloseWindowInput
from ferry.states import close_window
from tests.unit import test_feeds as feeds

world = feeds.world


def close(world, claimed: int) -> bool:
    payload = CloseWindowInput(config_uri=feeds.CONFIG_URI, table=feeds.TABLE, claimed=claimed)
    return close_window.run(world.feeds(), payload).more


def claimed_changes(world) -> int:
    payload = ChangeWindowInput(config_uri=feeds.CONFIG_URI, table=feeds.TABLE, window_seconds=20)
    return world.feeds().claim(payload).changes


def test_a_window_closes_when_nothing_came_during_its_run(world):
    world.create_table("sales", "orders")
    feeds.deliver(world.feeds(), feeds.glue_event())

    assert close(world, claimed_changes(world)) is False
    assert world.state.window(feeds.CONFIG_URI, feeds.TABLE) is None


def test_changes_during_the_run_keep_the_window_open_for_a_follow_up(world):
    world.create_table("sales", "orders")
    feeds.deliver(world.feeds(), feeds.glue_event())
    first = claimed_changes(world)
    feeds.deliver(world.feeds(), feeds.glue_event(time="2026-11-21T08:31:00Z"))

    assert close(world, first) is True
    assert world.state.window(feeds.CONFIG_URI, feeds.TABLE) is not None
    assert len(world.executions()) == 1  # the window's own execution follows up
