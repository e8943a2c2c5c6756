"""The metrics AWS's services record of themselves, recorded by the emulator's services.

moto's CloudWatch stores what a client puts; the services Ferry's alarms watch (Step
Functions, Lambda, EventBridge, Scheduler) record their own metrics on AWS, which moto's do
not. The emulator's extensions count them here, in the CloudWatch of the resource's account
and region, where ``ferry.local.emulator_cloudwatch`` evaluates the alarms that read them.
"""

from __future__ import annotations


def count(
    account: str,
    region: str,
    namespace: str,
    dimensions: dict[str, str],
    values: dict[str, float],
) -> None:
    """One datum now (unit ``Count``) of each ``values`` metric, with ``dimensions``."""
    from moto.cloudwatch.models import cloudwatch_backends
    from moto.core.utils import utcnow

    now = utcnow()
    cloudwatch_backends[account][region].put_metric_data(
        namespace,
        [
            {
                "MetricName": metric,
                "Value": float(value),
                "Unit": "Count",
                "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
                "Timestamp": now,
            }
            for metric, value in values.items()
        ],
    )
