"""The failover: ``ferry failover --environment`` invokes it (RequestResponse) to check a
deployed config's replicas, then, once the failover switch has stopped the config, to keep
their baselines in the work bucket and promote them (``ferry.failover.stack_failover``). No
definition and no trigger invokes it."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry import lifecycle
from ferry.clock import utc_now
from ferry.config import load_config_uri
from ferry.failover.stack_failover import run
from ferry.payloads import FailoverInput, FailoverResult
from ferry.sides import reach_sides
from lambdas.runtime import logger, settings, steps, tracer


@logger.inject_lambda_context(clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = FailoverInput.model_validate(event)
    runs = steps()
    config = reach_sides(load_config_uri(request.config_uri, runs.config_environment), runs.aws)
    with runs.catalogs(config.replica_catalog, runs.aws) as replica:
        report = run(
            request, config, replica, settings().work_uri,
            lambda r: lifecycle.replica_of(config.replica_catalog, r, runs.aws.region), utc_now,
        )  # fmt: skip
    return FailoverResult.model_validate(
        {"failover_id": report.failover_id, "tables": [t.to_dict() for t in report.tables]}
    ).model_dump(mode="json")
