"""Alarms that tell operators, and a dashboard of what the pipeline did.

Every alarm publishes to the operations topic; what each means is in the README, section
"Deploy to AWS" (and in each alarm's description).
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ferry.freshness.metrics import FRESHNESS, SERVICE, TABLES_OVER_RPO
from infra.alarms import failure_alarm
from infra.dashboard import (
    NAMESPACE,
    PERIOD,
    add_copy_budget_widgets,
    add_function_widgets,
    add_run_widgets,
)
from infra.dead_letters import depth_metric
from infra.functions import Functions, kebab
from infra.triggers import Triggers


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
        changes: sfn.StateMachine,
        functions: Functions,
        triggers: Triggers,
    ):
        super().__init__(scope, construct_id)
        self.alarms: list[cloudwatch.Alarm] = []
        self._environment = environment
        self._topic = topic
        self._alarm_runs(replication, housekeeping, changes)
        self._alarm_triggers(triggers)
        self._alarm_functions(functions, triggers)
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"ferry-{environment}"
        )
        add_run_widgets(self.dashboard, replication, changes)
        add_function_widgets(self.dashboard, functions)
        add_copy_budget_widgets(self.dashboard)

    def _alarm(self, name: str, metric: cloudwatch.IMetric, description: str) -> None:
        self.alarms.append(
            failure_alarm(
                self, name, environment=self._environment, metric=metric,
                description=description, topic=self._topic,
            )  # fmt: skip
        )

    def _alarm_runs(
        self,
        replication: sfn.StateMachine,
        housekeeping: sfn.StateMachine,
        changes: sfn.StateMachine,
    ) -> None:
        """The state machines' executions and the tables a run failed."""
        alarm = self._alarm
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
        # Every failed table of a run (Summarize's count, those no Catch took included).
        alarm(
            "tables-failed",
            cloudwatch.Metric(  # unlabelled: a labelled metric makes the alarm a math one
                namespace=NAMESPACE,
                metric_name="TablesFailed",
                dimensions_map={"service": "ferry"},
                statistic="Sum",
                period=PERIOD,
            ),
            "Tables failed in a replication (Summarize's count, tables no Catch took "
            "included): each got FAILURE and its replica still points at its last complete "
            "snapshot; ferry execute --wait or the run's Map Run name each table and error.",
        )
        alarm(
            "housekeeping-failed",
            housekeeping.metric_failed(period=PERIOD),
            "Housekeeping failed: retired snapshots are kept until it succeeds.",
        )
        # A change window whose own steps failed (its replication's failure is alarmed
        # above): the table's changes wait for the next one.
        alarm(
            "catalog-changes-failed",
            cloudwatch.MathExpression(
                # Each is published only when it happens: a period without one has no value,
                # which would leave the sum without one (FILL gives it 0).
                expression="FILL(failed, 0) + FILL(timedout, 0)",
                using_metrics={
                    "failed": changes.metric_failed(period=PERIOD),
                    "timedout": changes.metric_timed_out(period=PERIOD),
                },
                period=PERIOD,
                label="change windows failed or timed out",
            ),
            "A change window failed in its own steps (Claim changes, Close the window) or timed "
            "out: its table's changes are replicated when the next change opens a window; run "
            "the table by hand (ferry execute --table) meanwhile.",
        )

    def _alarm_triggers(self, triggers: Triggers) -> None:
        """What starts replications: the schedules and the rules."""
        alarm = self._alarm
        # What starts replications must not fail silently: a schedule whose target refused
        # it (after the schedule's retries), or dropped it, and an S3 rule that could not
        # start an execution. (A function's own errors are not alarmed on: Step Functions
        # retries them, and what is left fails the execution, which is alarmed above.)
        alarm(
            "schedule-failed",
            cloudwatch.MathExpression(
                expression="FILL(errors, 0) + FILL(dropped, 0)",
                using_metrics={
                    "errors": triggers.schedule_group.metric_target_errors(period=PERIOD),
                    "dropped": triggers.schedule_group.metric_dropped(period=PERIOD),
                },
                period=PERIOD,
                label="schedule invocations failed or dropped",
            ),
            "A schedule could not start its replication or housekeeping (EventBridge Scheduler "
            "target error or dropped invocation): that run did not happen; see the schedule "
            "group's metrics, then run it by hand (ferry execute).",
        )
        for index, rule in enumerate(triggers.rules):
            alarm(
                f"trigger-failed-{index}",
                cloudwatch.Metric(
                    namespace="AWS/Events",
                    metric_name="FailedInvocations",
                    dimensions_map={"RuleName": rule.ref},
                    statistic="Sum",
                    period=PERIOD,
                ),
                (
                    f"The catalog-events rule {rule.name} matched a Glue change but could not "
                    "invoke the CatalogEvents function (EventBridge FailedInvocations): check "
                    "the function's permission; run the table by hand (ferry execute --table)."
                )
                if _source(rule) == "aws.glue"
                else f"The S3 trigger {rule.name} matched an object but could not start the "
                "replication (EventBridge FailedInvocations): run it by hand (ferry execute).",
            )

    def _alarm_functions(self, functions: Functions, triggers: Triggers) -> None:
        """The functions a rule or a schedule starts, and what the triggers could not
        deliver."""
        alarm = self._alarm
        # The functions a rule or a schedule starts: no execution fails when they do. Each
        # failed attempt is an error; what failed its retries waits in the function's
        # dead-letter queue, and what a rule or a schedule could not deliver in the
        # triggers' one.
        for name, queue in functions.dead_letters.items():
            alarm(
                f"{kebab(name)}-errors",
                functions.by_name[name].metric_errors(period=PERIOD, statistic="Sum"),
                f"The {name} function failed (AWS/Lambda Errors; each attempt counts, Lambda "
                "retries twice): see its log group; what failed its retries is in "
                f"{queue.queue_name}.",
            )
            alarm(
                f"{kebab(name)}-dead-letters",
                depth_metric(queue),
                f"An invocation of the {name} function failed its retries: its event waits in "
                f"the queue {queue.queue_name} (AWS's record of it: the event and the error); "
                "fix the cause, then redrive it (ferry redrive).",
            )
        alarm(
            "trigger-dead-letters",
            depth_metric(triggers.dead_letters),
            "A rule or a schedule could not deliver what it started (a replication, a "
            "housekeeping run, an event of the catalog change feeds) after its retries: it "
            f"waits in the queue {triggers.dead_letters.queue_name}; fix the cause (a role, a "
            "function's permission), then redrive it (ferry redrive).",
        )


def _source(rule: events.CfnRule) -> str | None:
    """The event source a rule's pattern names (``aws.s3``, ``aws.glue``)."""
    pattern = rule.event_pattern
    sources = pattern.get("source", []) if isinstance(pattern, dict) else []
    return sources[0] if sources else None


def watch_freshness(
    operations: Operations, *, environment: str, topic: sns.ITopic, check_minutes: int
) -> cloudwatch.Alarm:
    """The ``rpo-breached`` alarm and the dashboard's freshness widgets.

    The freshness check publishes ``TablesOverRpo`` every ``check_minutes``: the alarm's
    period is the check's, so each period holds one check (its most, ``Maximum``). No data
    (the check did not run) is not a breach: the check's own failures are alarmed on
    (``freshness-check-errors``, ``trigger-dead-letters``).
    """
    period = Duration.minutes(check_minutes)
    over_rpo = cloudwatch.Metric(  # unlabelled: a labelled metric makes the alarm a math one
        namespace=NAMESPACE,
        metric_name=TABLES_OVER_RPO,
        dimensions_map={"service": SERVICE},
        statistic="Maximum",
        period=period,
    )
    alarm = failure_alarm(
        operations, "rpo-breached", environment=environment, metric=over_rpo,
        description="A replicated table is further behind its source than its RPO (the "
        "freshness check's TablesOverRpo): see the dashboard's freshness per table, worst "
        "first, and ferry status; its replication has stopped or fails (the replication-failed "
        "and tables-failed alarms name the error), or is too slow for the RPO.",
        topic=topic,
    )  # fmt: skip
    operations.alarms.append(alarm)
    operations.dashboard.add_widgets(
        cloudwatch.GraphWidget(
            title="Freshness per table (s), worst first",
            left=[
                cloudwatch.MathExpression(
                    # Metrics Insights: one line per table, the 20 furthest behind first
                    # ("table" quoted: an identifier that is a SQL keyword must be).
                    expression=(
                        f'SELECT MAX({FRESHNESS}) FROM SCHEMA("{NAMESPACE}", service, "table") '
                        'GROUP BY "table" ORDER BY MAX() DESC LIMIT 20'
                    ),
                    label="freshness",
                    period=period,
                )
            ],
            legend_position=cloudwatch.LegendPosition.RIGHT,
            width=16,
        ),
        cloudwatch.GraphWidget(
            title="Tables past their RPO",
            left=[over_rpo.with_(label="tables over RPO")],
            left_annotations=[cloudwatch.HorizontalAnnotation(value=1, label="rpo-breached alarm")],
            width=8,
        ),
    )
    return alarm
