"""State `Housekeeping`: delete superseded snapshots past their grace period; vacuum if asked."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.housekeeping_payloads import HousekeepingInput
from ferry.states import housekeeping
from lambdas.runtime import context as states_context
from lambdas.runtime import logger, metrics, tracer


@logger.inject_lambda_context(correlation_id_path="configUri", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = housekeeping.run(states_context(), HousekeepingInput.model_validate(event))
    metrics.add_metric(name="SnapshotsDeleted", unit=MetricUnit.Count, value=result.deleted)
    metrics.add_metric(name="SnapshotsKept", unit=MetricUnit.Count, value=result.kept)
    return result.model_dump(mode="json")
