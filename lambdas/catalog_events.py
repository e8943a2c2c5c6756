"""The intake of AWS Glue's Data Catalog events: an EventBridge rule's target (``ferry.feeds``).

Notes the changes of the tables the config selects in their windows, and starts the change
window state machine for a window it opens.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.feed_payloads import CatalogEventInput
from ferry.states import catalog_events
from lambdas.runtime import feeds, logger, metrics, tracer


@logger.inject_lambda_context(correlation_id_path="configUri", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = catalog_events.run(feeds(), CatalogEventInput.model_validate(event))
    metrics.add_metric(name="CatalogChangesIgnored", unit=MetricUnit.Count, value=result.ignored)
    metrics.add_metric(name="ChangeWindowsOpened", unit=MetricUnit.Count, value=len(result.opened))
    metrics.add_metric(
        name="ChangeWindowsResumed", unit=MetricUnit.Count, value=len(result.resumed)
    )
    return result.model_dump(mode="json")
