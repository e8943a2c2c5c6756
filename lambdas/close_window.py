"""State `Close the window`: close it, unless changes came during the run (a follow-up)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.feed_payloads import CloseWindowInput
from ferry.states import close_window
from lambdas.runtime import feeds, logger, tracer


@logger.inject_lambda_context(correlation_id_path="table", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = close_window.run(feeds(), CloseWindowInput.model_validate(event))
    return result.model_dump(mode="json")
