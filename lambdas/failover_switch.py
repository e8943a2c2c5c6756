"""The failover switch: ``ferry failover`` and ``ferry failback`` invoke it (RequestResponse)
to turn one config's rules and schedules off or on, stop or wait for its running executions
and release its tables' claims (``ferry.failover.stack_switch``). No definition and no
trigger invokes it."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field

from ferry.failover.stack_switch import StackClients
from ferry.statemachine.failover_payloads import FailoverSwitchInput
from ferry.states import failover_switch
from ferry.storage.aws import AwsClients
from lambdas.runtime import logger, tracer


class SwitchSettings(BaseModel):
    """The function's environment (set by ``infra/failover.py``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    #: The replication and change window state machines, comma-separated: their runs.
    state_machines: str = Field(alias="FERRY_FAILOVER_STATE_MACHINES")
    schedule_group: str = Field(alias="FERRY_SCHEDULE_GROUP")
    state_table: str | None = Field(default=None, alias="FERRY_STATE_TABLE")


@cache
def stack() -> StackClients:
    settings = SwitchSettings.model_validate(dict(os.environ))
    aws = AwsClients()
    return StackClients(
        events=aws.client("events"),
        scheduler=aws.client("scheduler"),
        stepfunctions=aws.client("stepfunctions"),
        dynamodb=aws.client("dynamodb"),
        state_machines=tuple(arn for arn in settings.state_machines.split(",") if arn),
        state_table=settings.state_table,
        schedule_group=settings.schedule_group,
    )


@logger.inject_lambda_context(clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = failover_switch.run(stack(), FailoverSwitchInput.model_validate(event))
    return result.model_dump(mode="json")
