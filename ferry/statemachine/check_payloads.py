"""The checks' payloads: ``ferry doctor``'s checks through the deployed functions (the Plan
function's catalogs, the CatalogPoller's notification log) and the freshness check's schedule
(``CHECK_FUNCTIONS``)."""

from __future__ import annotations

from pydantic import Field

from ferry.statemachine.payloads import Input, Result

# -- ferry doctor's checks --------------------------------------------------------------------


class CatalogCheckInput(Input):
    """``ferry doctor`` invokes the Plan function with ``{"check": "catalogs", …}``."""

    check: str
    config_uri: str


class CatalogAnswer(Result):
    catalog: str
    ok: bool
    detail: str


class CatalogCheckResult(Result):
    catalogs: list[CatalogAnswer]


class NotificationLogCheckResult(Result):
    """``ferry doctor`` invokes the CatalogPoller function with ``{"check":
    "notification-log", …}`` (input: ``CatalogCheckInput``): does the source metastore write
    its notification log, and is it not behind what the poller read?"""

    metastore: str
    #: The newest event id of the log (0: it never held one).
    current: int
    #: The last event id the poller handed over (None: it never polled).
    position: int | None
    ok: bool
    detail: str


# -- the freshness check (a schedule's, outside the definitions) ------------------------------


class FreshnessCheckInput(Input):
    """The freshness check's schedule input: every config the environment deploys
    (``events/freshness_check.json``)."""

    config_uris: list[str] = Field(min_length=1)


class FreshnessCheckResult(Result):
    """How many tables were measured, those past their RPO, and the PutMetricData requests."""

    tables: int
    over_rpo: list[str]
    requests: int
    #: Why nothing was measured, when the environment is not set up yet (its secret unfilled).
    skipped: str | None = None
