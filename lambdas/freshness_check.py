"""The freshness check: a schedule starts it every few minutes (``freshness-check-rate``); it
reads the catalogs and the state store of every config the environment deploys and
publishes each table's ``Freshness`` and the environment's ``TablesOverRpo``
(``ferry.freshness.metrics``). It copies nothing and starts nothing."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.core.errors import SecretNotFilledError
from ferry.statemachine.check_payloads import FreshnessCheckInput, FreshnessCheckResult
from ferry.states import freshness_check
from lambdas.runtime import context as states_context
from lambdas.runtime import logger, tracer


@logger.inject_lambda_context(clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    payload = FreshnessCheckInput.model_validate(event)
    try:
        shared = states_context()
    except SecretNotFilledError as error:
        # A first deploy starts the schedule before anyone filled the secret: no catalog
        # can be read yet, and no table was replicated either. Nothing to tell anyone; a
        # replication started now would fail with the same line, and alarm.
        logger.warning("freshness not measured: %s", error)
        return FreshnessCheckResult(
            tables=0, over_rpo=[], requests=0, skipped=str(error)
        ).model_dump(mode="json")
    return freshness_check.run(shared, payload).model_dump(mode="json")
