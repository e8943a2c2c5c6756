"""The failover: ``ferry failover --environment`` invokes it (RequestResponse) to check a
deployed config's replicas, then, once the failover switch has stopped the config, to keep
their baselines in the work bucket and promote them (``ferry.states.failover``). No
definition and no trigger invokes it."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.failover_payloads import FailoverInput
from ferry.states import failover
from lambdas.runtime import context as states_context
from lambdas.runtime import logger, settings, tracer


@logger.inject_lambda_context(clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = FailoverInput.model_validate(event)
    result = failover.run(states_context(), request, settings().work_uri)
    return result.model_dump(mode="json")
