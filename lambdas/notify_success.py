"""State `Notify success`: publish SUCCESS to consumers and record the table's metrics."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.freshness.metrics import FRESHNESS
from ferry.statemachine.replication_payloads import PlannedRun
from ferry.states import notify_success
from lambdas.runtime import NAMESPACE, SERVICE, logger, metrics, tracer
from lambdas.runtime import context as states_context


@logger.inject_lambda_context(correlation_id_path="eventId", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = notify_success.run(states_context(), PlannedRun.model_validate(event))
    metrics.add_dimension(name="table", value=result.source_table)
    metrics.add_metric(name="FilesReplicated", unit=MetricUnit.Count, value=result.files)
    metrics.add_metric(name="BytesReplicated", unit=MetricUnit.Bytes, value=result.bytes)
    metrics.add_metric(name="PartitionsReplicated", unit=MetricUnit.Count, value=result.partitions)
    metrics.add_metric(
        name="IcebergSnapshotsReplicated", unit=MetricUnit.Count, value=result.iceberg_snapshots
    )
    metrics.add_metric(
        name="ReplicationSeconds", unit=MetricUnit.Seconds, value=result.duration_seconds
    )
    metrics.add_metric(
        name="ReplicationLagSeconds", unit=MetricUnit.Seconds, value=result.lag_seconds
    )
    # The replica now holds what the source held when Plan read it: it is in sync, without
    # waiting for the periodic check (ferry.freshness.metrics).
    metrics.add_metric(name=FRESHNESS, unit=MetricUnit.Seconds, value=0)
    if result.status == "SUCCEEDED":
        # The change → replica lag by the table's priority (the copy budget's dashboard).
        with single_metric(
            name="ReplicationLag", unit=MetricUnit.Seconds, value=result.lag_seconds,
            namespace=NAMESPACE, default_dimensions={"service": SERVICE},
        ) as metric:  # fmt: skip
            metric.add_dimension(name="Priority", value=result.priority)
    return result.model_dump(mode="json")
