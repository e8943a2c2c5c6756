"""The freshness check (a schedule's target, no definition's state): read the catalogs and
the state store of every config the environment deploys, publish each table's ``Freshness``
and the environment's ``TablesOverRpo`` (``ferry.freshness.metrics``). It copies nothing and
starts nothing."""

from __future__ import annotations

from ferry.freshness.metrics import check_freshness
from ferry.statemachine.check_payloads import FreshnessCheckInput, FreshnessCheckResult
from ferry.states.context import StateContext


def run(context: StateContext, payload: FreshnessCheckInput) -> FreshnessCheckResult:
    """Every config measured and published; how many tables, which are over their RPO."""
    result = check_freshness(
        payload.config_uris,
        context.measure_freshness,
        context.aws.client("cloudwatch"),
        context.clock,
    )
    return FreshnessCheckResult(
        tables=result.tables, over_rpo=result.over_rpo, requests=result.requests
    )
