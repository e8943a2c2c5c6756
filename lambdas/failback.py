"""The failback: ``ferry failback --environment`` invokes it (RequestResponse) to plan a
deployed config's failback, or to run it: the checks and the changes, the reverse run
started on the replication state machine, then, invoked again once that run has succeeded,
the original tables restored and the replicas un-promoted (``ferry.states.failback``).
No definition and no trigger invokes it."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.failover_payloads import FailbackInput
from ferry.states import failback
from lambdas.runtime import context as states_context
from lambdas.runtime import logger, settings, tracer


@logger.inject_lambda_context(clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = FailbackInput.model_validate(event)
    result = failback.run(
        states_context(), request, settings().work_uri, settings().replication_state_machine
    )
    return result.model_dump(mode="json")
