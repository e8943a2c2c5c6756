"""The failback: ``ferry failback --environment`` invokes it (RequestResponse) to plan a
deployed config's failback, or to run it: the checks and the changes, the reverse run
started on the replication state machine, then, invoked again once that run has succeeded,
the original tables restored and the replicas un-promoted (``ferry.failover.stack_failback``).
No definition and no trigger invokes it."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry import lifecycle
from ferry.config import load_config_uri
from ferry.errors import ConfigError
from ferry.failover.failback import reverse_ledger_forgetter
from ferry.failover.stack_failback import StackReverse, record_folder, run
from ferry.payloads import FailbackInput
from ferry.sides import reach_sides
from lambdas.runtime import logger, settings, steps, tracer


@logger.inject_lambda_context(clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = FailbackInput.model_validate(event)
    runs = steps()
    machine = settings().replication_state_machine
    if not machine:
        raise ConfigError("FERRY_REPLICATION_STATE_MACHINE_ARN: the reverse run starts there")
    config = reach_sides(load_config_uri(request.config_uri, runs.config_environment), runs.aws)
    work = settings().work_uri
    reverse = StackReverse(runs.aws.client("stepfunctions"), machine, record_folder(work))
    with (
        runs.catalogs(config.replica_catalog, runs.aws) as replica,
        runs.catalogs(config.source_catalog, runs.aws) as source,
    ):
        result = run(
            request, config, source, replica, work,
            lambda r: lifecycle.replica_of(config.replica_catalog, r, runs.aws.region),
            reverse, reverse_ledger_forgetter(runs.state, config, runs.aws.region),
        )  # fmt: skip
    return result.model_dump(mode="json")
