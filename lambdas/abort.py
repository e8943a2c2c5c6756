"""State `Abort table`: remove what nothing references, publish FAILURE, name the error."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.freshness.metrics import FRESHNESS
from ferry.statemachine.replication_payloads import AbortInput
from ferry.states import abort
from lambdas.runtime import context as states_context
from lambdas.runtime import logger, metrics, tracer


@logger.inject_lambda_context(correlation_id_path="eventId", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    payload = AbortInput.model_validate(event)
    result = abort.run(states_context(), payload)
    metrics.add_dimension(name="table", value=result.source_table)
    metrics.add_metric(name="TablesFailed", unit=MetricUnit.Count, value=1)
    # Its freshness now, without waiting for the periodic check (ferry.freshness.metrics).
    behind = abort.failed_table_freshness(states_context(), result, payload.config_uri)
    if behind is not None:
        metrics.add_metric(name=FRESHNESS, unit=MetricUnit.Seconds, value=behind)
    return result.model_dump(mode="json")
