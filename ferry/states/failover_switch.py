"""The failover switch (``ferry failover`` and ``ferry failback`` invoke it; no definition's
state): turn one config's rules and schedules off or on, stop or wait for its running
executions and release its tables' claims (``ferry.failover.stack_switch``)."""

from __future__ import annotations

from dataclasses import asdict

from ferry.failover.stack_switch import StackClients, switch
from ferry.statemachine.failover_payloads import FailoverSwitchInput, FailoverSwitchResult


def run(stack: StackClients, payload: FailoverSwitchInput) -> FailoverSwitchResult:
    """The switch turned; what it changed."""
    return FailoverSwitchResult.model_validate(asdict(switch(payload, stack)))
