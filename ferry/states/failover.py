"""The failover (``ferry failover --environment`` invokes it; no definition's state): check a
deployed config's replicas, then, once the failover switch has stopped the config, keep
their baselines in the work location and promote them (``ferry.failover.stack_failover``)."""

from __future__ import annotations

from ferry.failover.stack_failover import run as fail_over
from ferry.lifecycle import replica_state
from ferry.statemachine.failover_payloads import FailoverInput, FailoverResult
from ferry.states.context import StateContext


def run(context: StateContext, request: FailoverInput, work_uri: str) -> FailoverResult:
    """The request's step of the failover, on the config's replica catalog."""
    config = context.load(request.config_uri)
    with context.open(config.replica_catalog) as replica:
        report = fail_over(
            request, config, replica, work_uri,
            lambda r: replica_state.replica_of(config.replica_catalog, r, context.aws.region),
            context.clock,
        )  # fmt: skip
    return FailoverResult.model_validate(
        {"failover_id": report.failover_id, "tables": [t.to_dict() for t in report.tables]}
    )
