"""The Hive poller: reads the source metastore's notification log, started every minute by a
schedule, and hands the changes of the tables the config selects over (``ferry.feeds``).

It polls for up to ``ferry.feeds.trigger_events.POLL_SECONDS``, and never past the function's own
time.
``ferry doctor`` invokes it with ``{"check": "notification-log", …}``: then it only reads
where the metastore's log is and where the poller stands (``ferry.feeds.feed_checks``).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from ferry.feeds.feed_checks import NOTIFICATION_LOG, check_notification_log
from ferry.feeds.trigger_events import POLL_SECONDS
from ferry.statemachine.feed_payloads import PollInput
from ferry.states import catalog_poller
from lambdas.runtime import feeds, logger, metrics, tracer

#: Left of the function's time when the poll stops: enough to return and record metrics.
MARGIN_SECONDS = 10


@logger.inject_lambda_context(correlation_id_path="configUri", clear_state=True, log_event=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("check") == NOTIFICATION_LOG:  # `ferry doctor`: is the log written?
        return check_notification_log(feeds(), event).model_dump(mode="json")
    remaining = context.get_remaining_time_in_millis() / 1000 - MARGIN_SECONDS
    seconds = max(0.0, min(POLL_SECONDS, remaining))
    result = catalog_poller.run(feeds(), PollInput.model_validate(event), seconds)
    metrics.add_metric(name="NotificationEventsRead", unit=MetricUnit.Count, value=result.events)
    metrics.add_metric(name="CatalogChangesIgnored", unit=MetricUnit.Count, value=result.ignored)
    metrics.add_metric(name="ChangeWindowsOpened", unit=MetricUnit.Count, value=len(result.opened))
    metrics.add_metric(
        name="ChangeWindowsResumed", unit=MetricUnit.Count, value=len(result.resumed)
    )
    metrics.add_metric(name="NotificationLogGaps", unit=MetricUnit.Count, value=int(result.gap))
    return result.model_dump(mode="json")
