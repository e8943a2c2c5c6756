"""The intake of AWS Glue's Data Catalog events (an EventBridge rule's target, no definition's
state): note the changes of the tables the config selects in their windows, and start the
change window state machine for a window it opens (``ferry.feeds.intake``)."""

from __future__ import annotations

from ferry.feeds import ChangeFeeds
from ferry.statemachine.feed_payloads import CatalogEventInput, IntakeResult


def run(feeds: ChangeFeeds, payload: CatalogEventInput) -> IntakeResult:
    """The event's changes, noted; the windows opened or resumed."""
    return feeds.glue_event(payload)
