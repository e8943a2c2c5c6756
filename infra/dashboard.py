"""The operations dashboard's widgets: executions, tables, bytes, lags, the change feeds, the
functions' errors and the copy budget, from the metrics the functions publish (EMF)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_stepfunctions as sfn

from infra.functions import Functions

NAMESPACE = "Ferry"
PERIOD = Duration.minutes(5)


def per_table(metric: str, statistic: str, label: str) -> cloudwatch.MathExpression:
    """A line per replicated table of one of the metrics the functions publish (EMF)."""
    return cloudwatch.MathExpression(
        expression=(
            f"SEARCH('{{{NAMESPACE},service,table}} MetricName=\"{metric}\"', "
            f"'{statistic}', {int(PERIOD.to_seconds())})"
        ),
        label=label,
        period=PERIOD,
    )


def feed_metric(metric: str, label: str) -> cloudwatch.Metric:
    """A count the functions publish with no table dimension (EMF: the change feeds',
    Summarize's), per period."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=metric,
        dimensions_map={"service": "ferry"},
        statistic="Sum",
        period=PERIOD,
        label=label,
    )


def add_run_widgets(
    dashboard: cloudwatch.Dashboard, replication: sfn.StateMachine, changes: sfn.StateMachine
) -> None:
    """The dashboard's executions, tables, bytes, files, durations, lags and change feeds."""
    tables_failed = feed_metric("TablesFailed", "tables failed, all tables")
    dashboard.add_widgets(
        cloudwatch.GraphWidget(
            title="Executions",
            left=[
                replication.metric_started(period=PERIOD, label="started"),
                replication.metric_succeeded(period=PERIOD, label="succeeded"),
                replication.metric_failed(period=PERIOD, label="failed"),
                replication.metric_timed_out(period=PERIOD, label="timed out"),
            ],
            width=12,
        ),
        cloudwatch.GraphWidget(
            title="Tables failed",
            left=[per_table("TablesFailed", "Sum", "tables failed"), tables_failed],
            width=12,
        ),
    )
    dashboard.add_widgets(
        cloudwatch.GraphWidget(
            title="Bytes replicated per table",
            left=[per_table("BytesReplicated", "Sum", "bytes")],
            width=12,
        ),
        cloudwatch.GraphWidget(
            title="Files replicated per table",
            left=[
                per_table("FilesReplicated", "Sum", "files"),
                per_table("IcebergSnapshotsReplicated", "Sum", "Iceberg snapshots"),
            ],
            width=12,
        ),
    )
    dashboard.add_widgets(
        cloudwatch.GraphWidget(
            title="Copy duration per table (s)",
            left=[per_table("ReplicationSeconds", "Maximum", "seconds")],
            width=12,
        ),
        cloudwatch.GraphWidget(
            title="Replication lag per table (s): trigger to replica visible",
            left=[per_table("ReplicationLagSeconds", "Maximum", "lag")],
            width=12,
        ),
    )
    dashboard.add_widgets(
        cloudwatch.GraphWidget(
            title="Replication lag, all tables (s): p50 and p95",
            left=[
                per_table("ReplicationLagSeconds", "p50", "p50"),
                per_table("ReplicationLagSeconds", "p95", "p95"),
            ],
            width=12,
        ),
        cloudwatch.GraphWidget(
            title="Catalog change feeds: changes, windows, runs",
            left=[
                feed_metric("ChangeWindowsOpened", "windows opened"),
                feed_metric("CatalogChangesIgnored", "changes of tables no config selects"),
                feed_metric("NotificationEventsRead", "notification log events read"),
                feed_metric("NotificationLogGaps", "notification log gaps"),
                changes.metric_started(period=PERIOD, label="change windows"),
                changes.metric_failed(period=PERIOD, label="change windows failed"),
            ],
            width=12,
        ),
    )


def add_function_widgets(dashboard: cloudwatch.Dashboard, functions: Functions) -> None:
    """Every function's errors, retried attempts included."""
    dashboard.add_widgets(
        cloudwatch.GraphWidget(
            title="Function errors (each attempt, retried ones included)",
            left=[
                function.metric_errors(period=PERIOD, label=name)
                for name, function in functions.by_name.items()
            ],
            width=24,
        )
    )


# -- the copy budget (``ferry.copying.budget``): its line and each priority's lag ------------------

#: The priorities the copy budget's metrics carry (``ferry.config.Priority``).
PRIORITIES = ("critical", "normal", "bulk")


def by_priority(metric: str, statistic: str, priority: str) -> cloudwatch.Metric:
    """One priority's series of a metric the functions publish with a Priority dimension."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=metric,
        dimensions_map={"service": "ferry", "Priority": priority},
        statistic=statistic,
        period=PERIOD,
        label=f"{priority} ({statistic})",
    )


def add_copy_budget_widgets(dashboard: cloudwatch.Dashboard) -> None:
    """How many copies wait for a slot, how long they waited, and each priority's change →
    replica lag: bulk's backlog should never show in critical's lag."""
    dashboard.add_widgets(
        cloudwatch.GraphWidget(
            title="Copies waiting for a slot, by priority",
            left=[by_priority("CopyQueueDepth", "Maximum", p) for p in PRIORITIES],
            width=8,
        ),
        cloudwatch.GraphWidget(
            title="Wait for a copy slot by priority (s)",
            left=[by_priority("CopySlotWait", "Maximum", p) for p in PRIORITIES],
            width=8,
        ),
        cloudwatch.GraphWidget(
            title="Change to replica lag by priority (s): p95",
            left=[by_priority("ReplicationLag", "p95", p) for p in PRIORITIES],
            width=8,
        ),
    )
