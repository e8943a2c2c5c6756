"""The catalog change feeds' payloads (``ferry.feeds``): the change window definition's
states (``CHANGES_FUNCTIONS``) and the two functions that start it (``FEED_FUNCTIONS``: AWS
Glue's events' intake and the Hive poller)."""

from __future__ import annotations

from typing import Any

from ferry.statemachine.payloads import Input, Result

# -- the intake and the poller ----------------------------------------------------------------


class CatalogEventInput(Input):
    """An EventBridge rule's input to the intake: the config, and AWS Glue's event whole
    (``events/catalog_events.json``; the rule's template is ``ferry.feeds.trigger_events``')."""

    config_uri: str
    event: dict[str, Any]


class PollInput(Input):
    """A schedule's input to the Hive poller (``events/catalog_poller.json``)."""

    config_uri: str


class IntakeResult(Result):
    """What the intake did with a batch of changes: the tables whose windows it noted, those
    it opened (an execution started), and the changes of tables the config does not select."""

    tables: list[str]
    opened: list[str]
    ignored: int
    #: The tables whose window was open with no execution running: each got another.
    resumed: list[str] = []


class PollResult(Result):
    """What a poll did: events read, the position it reached, and the intake's counts."""

    events: int
    position: int | None
    tables: list[str]
    opened: list[str]
    ignored: int
    #: The log was cleaned past the last position: every table in scope was handed over.
    gap: bool
    polls: int
    #: There was no position: the log was read from the oldest event it keeps.
    replayed: bool = False
    #: The tables whose window was open with no execution running: each got another.
    resumed: list[str] = []


# -- the change window ------------------------------------------------------------------------


class ChangeWindowInput(Input):
    """The change window state machine's input: one table's window (``events/
    claim_changes.json``)."""

    config_uri: str
    table: str
    window_seconds: int


class ClaimResult(Result):
    """Whether the claimed changes need a run, and the run's ``tables`` and ``trigger``."""

    run: bool
    reason: str
    changes: int
    tables: list[str]
    trigger: dict[str, Any]


class CloseWindowInput(Input):
    config_uri: str
    table: str
    claimed: int


class CloseWindowResult(Result):
    """``more``: changes came during the run; the window stays open for one follow-up."""

    more: bool
