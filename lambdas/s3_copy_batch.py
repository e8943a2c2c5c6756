"""State `Copy batch`: server-side copy of one batch of the manifest (S3 to S3)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.payloads import CopyBatchInput
from lambdas.runtime import logger, steps, tracer


@logger.inject_lambda_context(correlation_id_path="eventId", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return steps().copy_batch(CopyBatchInput.model_validate(event)).model_dump(mode="json")
