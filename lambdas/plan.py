"""State `Plan`: tell consumers START, read both catalogs, write the manifest and the plan."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.check_payloads import CatalogCheckInput
from ferry.statemachine.replication_payloads import PlanInput
from ferry.states import catalog_check, plan
from lambdas.runtime import context as states_context
from lambdas.runtime import logger, tracer


@logger.inject_lambda_context(correlation_id_path="eventId", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("check") == "catalogs":  # `ferry doctor`: do the metastores answer from here?
        checked = catalog_check.run(states_context(), CatalogCheckInput.model_validate(event))
        return checked.model_dump(mode="json")
    return plan.run(states_context(), PlanInput.model_validate(event)).model_dump(mode="json")
