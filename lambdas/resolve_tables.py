"""State `Resolve tables`: validate the config and list its tables, each with an event id."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.payloads import ResolveTablesInput
from lambdas.runtime import logger, settings, steps, tracer


@logger.inject_lambda_context(correlation_id_path="configUri", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    payload = ResolveTablesInput.model_validate(event)
    return steps().resolve_tables(payload, settings().max_concurrency).model_dump(mode="json")
