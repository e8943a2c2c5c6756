"""One alarm: a count of failures that turns it to ALARM, published to an operations topic.

Every alarm of a deployment is of this shape (``infra/operations.py``, and the forwarding
stacks of other regions, ``infra/triggers.py``): at least one failure in five minutes is
ALARM, no data is OK, and the topic of the alarm's own region is told (CloudWatch publishes
alarms to a topic of its region only).
"""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.notifications import alarm_name_prefix


def failure_alarm(
    scope: Construct, name: str, *, environment: str, metric: cloudwatch.IMetric,
    description: str, topic: sns.ITopic,
) -> cloudwatch.Alarm:  # fmt: skip
    """The alarm ``ferry-<environment>-<name>`` on ``metric`` (≥ 1), told to ``topic``."""
    created = cloudwatch.Alarm(
        scope,
        name,
        alarm_name=f"{alarm_name_prefix(environment)}{name}",
        alarm_description=description,
        metric=metric,
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    created.add_alarm_action(actions.SnsAction(topic))
    return created
