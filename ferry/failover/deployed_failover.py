"""``ferry failover --environment``: the failover through the deployed stack.

Three invocations, each under its function's own least-privilege role, none with the
operator's access to the catalogs or the data:

1. the Failover function checks the replicas (``check``): one that does not exist, or that
   Ferry never replicated, is one line and nothing has changed;
2. the FailoverSwitch function stops the config's triggers and runs and releases its claims
   (``ferry.failover.deployed``);
3. the Failover function keeps each replica's baseline in the stack's work bucket and
   promotes it (``promote``; ``ferry.failover.stack_failover``).

Each step is idempotent, so the command runs again after any failure: a table already
promoted keeps its failover id and baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from ferry.config import ReplicationConfig
from ferry.failover.config_failover import FailoverReport, TableFailover
from ferry.failover.deployed import DeployedSwitch
from ferry.statemachine.failover_payloads import FailoverInput, FailoverResult

#: The stack output naming the function.
FUNCTION_OUTPUT = "FailoverFunctionArn"


def fail_over(
    switch: DeployedSwitch,
    config: ReplicationConfig,
    tables: Sequence[str],
    failover_id: str,
    *,
    cancel_runs: bool = False,
    wait: timedelta = timedelta(0),
) -> FailoverReport:
    """Fail the config's ``tables`` (source names; all when none) over through the stack."""
    uri = switch.request("suspend", config, tables).config_uri
    request = FailoverInput(
        action="check", config_uri=uri, tables=list(tables), failover_id=failover_id
    )
    _ask(switch, request)
    suspended = switch.suspend(config, tables, cancel_runs=cancel_runs, wait=wait)
    promoted = _ask(switch, request.model_copy(update={"action": "promote"}))
    return FailoverReport(
        promoted.failover_id,
        [TableFailover(**t.model_dump(by_alias=False)) for t in promoted.tables],
        suspended,
    )


def _ask(switch: DeployedSwitch, request: FailoverInput) -> FailoverResult:
    answer = switch.call(FUNCTION_OUTPUT, "failover function", request.model_dump(mode="json"))
    return FailoverResult.model_validate(answer)
