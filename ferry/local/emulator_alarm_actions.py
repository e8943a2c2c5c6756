"""What the emulator's alarms (``ferry.local.emulator_cloudwatch``) do on a change of state:
CloudWatch's message, published to each SNS topic of the new state's actions as
``cloudwatch.amazonaws.com`` for the alarm. The topic's policy (with ``aws:SourceArn``) and
its key's must allow it, as on AWS, and only a topic of the alarm's own region receives it."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from ferry.local.authorization import Authorizer, Check
from ferry.local.emulator_alarm_values import epoch, iso

logger = logging.getLogger(__name__)

_REGION_NAMES = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-1": "US West (N. California)",
    "us-west-2": "US West (Oregon)",
    "eu-west-1": "EU (Ireland)",
    "eu-central-1": "EU (Frankfurt)",
}


@dataclass(frozen=True)
class StateChange:
    """An alarm's change of state: where the alarm is, from what to what, why, and when."""

    account: str
    region: str
    old: str
    new: str
    reason: str
    now: float


def publish_change(
    authorizer: Authorizer | None, topic_arn: str, alarm: Any, change: StateChange
) -> None:
    """CloudWatch's message of ``change`` to the SNS topic ``topic_arn``."""
    from moto.sns.models import sns_backends

    region = change.region
    _, _, _, topic_region, topic_account, _ = topic_arn.split(":", 5)
    topic = sns_backends[topic_account][topic_region].topics.get(topic_arn)
    if topic is None or topic_region != region:
        # CloudWatch publishes to a topic of the alarm's own region only.
        logger.error("alarm %s: no topic %s in %s to publish to", alarm.name, topic_arn, region)
        return
    if authorizer is not None:
        denial = authorizer.authorize(
            "cloudwatch.amazonaws.com",
            _publish_checks(alarm, topic_arn, topic.kms_master_key_id, change),
            region,
        )
        if denial is not None:
            logger.error("alarm %s could not publish: %s", alarm.name, denial.message)
            return
    subject = f'{change.new}: "{alarm.name}" in {_REGION_NAMES.get(region, region)}'
    topic.publish(json.dumps(_message(alarm, change)), subject=subject[:100])


def _publish_checks(
    alarm: Any, topic_arn: str, key: str | None, change: StateChange
) -> list[Check]:
    """Publishing to the topic, and a data key of its key ``key`` when it has one, for the
    alarm."""
    topic_account = topic_arn.split(":")[4]
    context = {"aws:SourceArn": alarm.alarm_arn, "aws:SourceAccount": change.account}
    checks = [Check("sns:Publish", topic_arn, context, account=topic_account)]
    if key:
        key_arn = key if key.startswith("arn:") else (
            f"arn:aws:kms:{change.region}:{topic_account}:key/{key}"
        )  # fmt: skip
        checks.append(Check("kms:GenerateDataKey", key_arn, context, topic_account))
    return checks


def _message(alarm: Any, change: StateChange) -> dict[str, Any]:
    return {
        "AlarmName": alarm.name,
        "AlarmDescription": alarm.description,
        "AWSAccountId": change.account,
        "AlarmConfigurationUpdatedTimestamp": iso(epoch(alarm.configuration_updated_timestamp)),
        "NewStateValue": change.new,
        "NewStateReason": change.reason,
        "StateChangeTime": iso(change.now),
        "Region": _REGION_NAMES.get(change.region, change.region),
        "AlarmArn": alarm.alarm_arn,
        "OldStateValue": change.old,
        "OKActions": alarm.ok_actions,
        "AlarmActions": alarm.alarm_actions,
        "InsufficientDataActions": alarm.insufficient_data_actions,
        "Trigger": _trigger(alarm),
    }


def _trigger(alarm: Any) -> dict[str, Any]:
    if alarm.metric_data_queries:
        return {
            "Metrics": [
                {"Id": q.id, "Expression": q.expression}
                if q.expression
                else {"Id": q.id, "MetricStat": {"Metric": {
                    "Namespace": q.metric_stat.metric.namespace,
                    "MetricName": q.metric_stat.metric.metric_name}}}
                for q in alarm.metric_data_queries
            ],
            "ComparisonOperator": alarm.comparison_operator,
            "Threshold": alarm.threshold,
            "EvaluationPeriods": alarm.evaluation_periods,
            "TreatMissingData": alarm.treat_missing_data,
        }  # fmt: skip
    return {
        "MetricName": alarm.metric_name,
        "Namespace": alarm.namespace,
        "StatisticType": "Statistic",
        "Statistic": str(alarm.statistic or "").upper(),
        "Dimensions": [{"name": d.name, "value": d.value} for d in alarm.dimensions],
        "Period": alarm.period,
        "EvaluationPeriods": alarm.evaluation_periods,
        "ComparisonOperator": alarm.comparison_operator,
        "Threshold": alarm.threshold,
        "TreatMissingData": alarm.treat_missing_data,
    }
