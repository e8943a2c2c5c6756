"""State `Copy batch`: server-side copy of one batch of the manifest (S3 to S3)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.replication_payloads import CopyBatchInput
from ferry.states import s3_copy_batch
from lambdas.runtime import context as states_context
from lambdas.runtime import logger, tracer


@logger.inject_lambda_context(correlation_id_path="eventId", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = s3_copy_batch.run(states_context(), CopyBatchInput.model_validate(event))
    return result.model_dump(mode="json")
