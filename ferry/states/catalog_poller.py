"""The Hive poller (a schedule's target, no definition's state): read the source metastore's
notification log for up to ``seconds`` and hand the changes of the tables the config
selects over, as the Glue intake does (``ferry.feeds.intake``)."""

from __future__ import annotations

from ferry.feeds import ChangeFeeds
from ferry.statemachine.feed_payloads import PollInput, PollResult


def run(feeds: ChangeFeeds, payload: PollInput, seconds: float) -> PollResult:
    """The log read from where the poller stands; the windows opened or resumed."""
    return feeds.poll(payload, seconds)
