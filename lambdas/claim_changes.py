"""State `Claim changes` of the change window: take a table's changes; does it need a run?"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.feed_payloads import ChangeWindowInput
from ferry.states import claim_changes
from lambdas.runtime import feeds, logger, tracer


@logger.inject_lambda_context(correlation_id_path="table", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = claim_changes.run(feeds(), ChangeWindowInput.model_validate(event))
    return result.model_dump(mode="json")
