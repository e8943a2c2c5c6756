"""State `Claim copy slot`: take one of the environment's copy slots, or wait in line; publish
the line's depth by priority and, once granted, how long the table waited."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.statemachine.replication_payloads import CopySlotInput
from ferry.states import copy_slot
from lambdas.runtime import NAMESPACE, SERVICE, logger, tracer
from lambdas.runtime import context as states_context


@logger.inject_lambda_context(correlation_id_path="eventId", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = copy_slot.run(states_context(), CopySlotInput.model_validate(event))
    queued = {
        "critical": result.queued_critical,
        "normal": result.queued_normal,
        "bulk": result.queued_bulk,
    }
    for priority, depth in queued.items():
        publish("CopyQueueDepth", MetricUnit.Count, depth, priority)
    if result.granted:
        publish("CopySlotWait", MetricUnit.Seconds, result.waited_seconds, result.priority)
    return result.model_dump(mode="json")


def publish(name: str, unit: MetricUnit, value: float, priority: str) -> None:
    """One metric with the Priority dimension (EMF: a log line CloudWatch turns into it)."""
    with single_metric(
        name=name, unit=unit, value=value, namespace=NAMESPACE,
        default_dimensions={"service": SERVICE},
    ) as metric:  # fmt: skip
        metric.add_dimension(name="Priority", value=priority)
