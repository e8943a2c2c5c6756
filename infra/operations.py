"""Alarms that tell operators, and a dashboard of what the pipeline did.

Every alarm publishes to the operations topic; what each means is in the README, section
"Deploy to AWS" (and in each alarm's description).
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.functions import Functions
from infra.notifications import alarm_name_prefix

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


class Operations(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        topic: sns.ITopic,
        replication: sfn.StateMachine,
        housekeeping: sfn.StateMachine,
        functions: Functions,
    ):
        super().__init__(scope, construct_id)
        action = actions.SnsAction(topic)
        self.alarms: list[cloudwatch.Alarm] = []

        def alarm(name: str, metric: cloudwatch.IMetric, description: str) -> None:
            created = cloudwatch.Alarm(
                self,
                name,
                alarm_name=f"{alarm_name_prefix(environment)}{name}",
                alarm_description=description,
                metric=metric,
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            created.add_alarm_action(action)
            self.alarms.append(created)

        alarm(
            "replication-failed",
            replication.metric_failed(period=PERIOD),
            "A replication ended FAILED: a table failed (its FAILURE message and the execution "
            "name the error); the replica still points at its last complete snapshot.",
        )
        alarm(
            "replication-timed-out",
            replication.metric_timed_out(period=PERIOD),
            "A replication ran over its time limit: a copy is stuck; cancel it and run again.",
        )
        alarm(
            "housekeeping-failed",
            housekeeping.metric_failed(period=PERIOD),
            "Housekeeping failed: retired snapshots are kept until it succeeds.",
        )
        for name, function in functions.by_name.items():
            alarm(
                f"{function.node.id.lower()}-errors",
                function.metric_errors(period=PERIOD),
                f"The {name} step raised an error after its retries; its log group has the "
                "error, with the event id as the correlation id.",
            )

        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"ferry-{environment}"
        )
        self.dashboard.add_widgets(
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
                left=[per_table("TablesFailed", "Sum", "tables failed")],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Bytes replicated per table",
                left=[per_table("BytesReplicated", "Sum", "bytes")],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Files replicated per table",
                left=[per_table("FilesReplicated", "Sum", "files")],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
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
