"""State `Close the window` of the change window: close it, unless changes came during the
run (then a follow-up window is opened; ``ferry.feeds.intake``)."""

from __future__ import annotations

from ferry.feeds import ChangeFeeds
from ferry.statemachine.feed_payloads import CloseWindowInput, CloseWindowResult


def run(feeds: ChangeFeeds, payload: CloseWindowInput) -> CloseWindowResult:
    """The window closed, or followed up."""
    return feeds.close(payload)
