"""The failback (``ferry failback --environment`` invokes it; no definition's state): plan a
deployed config's failback, or run it: the checks and the changes, the reverse run started on
the replication state machine, then, invoked again once that run has succeeded, the
original tables restored and the replicas un-promoted (``ferry.failover.stack_failback``)."""

from __future__ import annotations

from ferry.core.errors import ConfigError
from ferry.failover.config_failback import reverse_ledger_forgetter
from ferry.failover.stack_failback import StackReverse, record_folder
from ferry.failover.stack_failback import run as fail_back
from ferry.lifecycle import replica_state
from ferry.statemachine.failover_payloads import FailbackInput, FailbackResult
from ferry.states.context import StateContext


def run(
    context: StateContext, request: FailbackInput, work_uri: str, machine: str | None
) -> FailbackResult:
    """The request's step of the failback; the reverse run starts on ``machine``."""
    if not machine:
        raise ConfigError("FERRY_REPLICATION_STATE_MACHINE_ARN: the reverse run starts there")
    config = context.load(request.config_uri)
    reverse = StackReverse(context.aws.client("stepfunctions"), machine, record_folder(work_uri))
    with (
        context.open(config.replica_catalog) as replica,
        context.open(config.source_catalog) as source,
    ):
        return fail_back(
            request, config, source, replica, work_uri,
            lambda r: replica_state.replica_of(config.replica_catalog, r, context.aws.region),
            reverse, reverse_ledger_forgetter(context.state, config, context.aws.region),
        )  # fmt: skip
