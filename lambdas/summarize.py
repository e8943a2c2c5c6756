"""State `Summarize`: read the tables' outcomes, abort a table no Catch took, count them and
name the first failure; publish how many tables failed."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.replication_payloads import SummarizeInput
from ferry.states import summarize
from lambdas.runtime import context as states_context
from lambdas.runtime import logger, metrics, tracer


@logger.inject_lambda_context(correlation_id_path="configUri", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = summarize.run(states_context(), SummarizeInput.model_validate(event))
    # Every failed table of the run, those no Catch took (which Summarize aborted itself)
    # among them, with no table dimension: the alarm's metric (infra/operations.py). Abort
    # publishes the same name per table.
    metrics.add_metric(name="TablesFailed", unit=MetricUnit.Count, value=result.failed)
    return result.model_dump(mode="json")
