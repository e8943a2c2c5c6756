"""State `Claim changes` of the change window (``catalog_changes.asl.json``): take the
table's changes noted in its window; does it need a run? (``ferry.feeds.intake``)"""

from __future__ import annotations

from ferry.feeds import ChangeFeeds
from ferry.statemachine.feed_payloads import ChangeWindowInput, ClaimResult


def run(feeds: ChangeFeeds, payload: ChangeWindowInput) -> ClaimResult:
    """The window's changes, claimed; whether the replication runs."""
    return feeds.claim(payload)
