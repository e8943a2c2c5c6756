"""State `Resolve tables`: validate the config and list its tables, each with an event id."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.replication_payloads import ResolveTablesInput
from ferry.states import resolve_tables
from lambdas.runtime import context as states_context
from lambdas.runtime import logger, settings, tracer


@logger.inject_lambda_context(correlation_id_path="configUri", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    payload = ResolveTablesInput.model_validate(event)
    result = resolve_tables.run(states_context(), payload, settings().max_concurrency)
    return result.model_dump(mode="json")
