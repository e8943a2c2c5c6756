"""State `Commit`: check every batch was copied, then point the replica catalog at it."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.replication_payloads import PlannedRun
from ferry.states import commit
from lambdas.runtime import context as states_context
from lambdas.runtime import logger, tracer


@logger.inject_lambda_context(correlation_id_path="eventId", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return commit.run(states_context(), PlannedRun.model_validate(event)).model_dump(mode="json")
