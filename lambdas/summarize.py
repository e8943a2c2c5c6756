"""State `Summarize`: read the tables' outcomes, abort a table no Catch took, count them and
name the first failure."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.payloads import SummarizeInput
from lambdas.runtime import logger, steps, tracer


@logger.inject_lambda_context(correlation_id_path="configUri", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return steps().summarize(SummarizeInput.model_validate(event)).model_dump(mode="json")
