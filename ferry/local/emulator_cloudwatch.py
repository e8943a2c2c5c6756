"""The AWS emulator's CloudWatch evaluates alarms, as CloudWatch does (moto stores them only).

Every few seconds (``TICK_SECONDS``), and before each ``DescribeAlarms`` so that a reader
sees the current state, each alarm of moto's CloudWatch is evaluated from the datapoints
moto holds (what the emulated services record: ``AWS/Lambda``, ``AWS/Events``,
``AWS/Scheduler``, ``AWS/States``… and whatever ``PutMetricData`` sent), in any namespace:

- its metric's datapoints (same namespace, name and dimensions) in each of the last
  ``EvaluationPeriods`` periods of ``Period`` seconds, ending now, reduced by its
  ``Statistic`` (``Sum``, ``Average``, ``Minimum``, ``Maximum``, ``SampleCount``) or
  ``ExtendedStatistic`` (``p95``…);
- an alarm on a metric math expression (``Metrics``): each ``MetricStat`` so, then the
  expression (``+ - * /``, numbers, the queries' ids and ``FILL(id, number)``); as in
  CloudWatch, arithmetic on a query with no datapoint in a period has no value there unless
  ``FILL`` gives it one (so an alarm adding two sparse metrics must fill them);
- SQS's ``ApproximateNumberOfMessagesVisible`` (and ``…NotVisible``), which SQS publishes
  on its own: sampled from moto's queues at each evaluation;
- ``ComparisonOperator`` against ``Threshold``, ``DatapointsToAlarm`` of the periods
  (``EvaluationPeriods`` when unset), ``TreatMissingData`` (``missing``: no data at all is
  ``INSUFFICIENT_DATA``; ``notBreaching``, ``breaching``, ``ignore``).

On a change of state the alarm's state, reason and reason data are set
(``SetAlarmState``), and its actions of the new state (``AlarmActions``, ``OKActions``,
``InsufficientDataActions``: SNS topics) receive CloudWatch's message, published as
``cloudwatch.amazonaws.com`` for the alarm: the topic's policy (with ``aws:SourceArn``) and
its key's must allow it, as on AWS (``ferry.local.emulator_alarm_actions``; the statistics
and the metric math are ``ferry.local.emulator_alarm_values``). CloudWatch evaluates each
minute, on whole periods, and waits for late data; the emulator evaluates the periods ending
now, so that an alarm turns within seconds of what breaches it, and back once it no longer
does.
"""

from __future__ import annotations

import json
import logging
import operator
import threading
import time
from collections import deque
from typing import Any

from ferry.local.authorization import Authorizer
from ferry.local.emulator_alarm_actions import StateChange, publish_change
from ferry.local.emulator_alarm_values import (
    UnsupportedAlarm,
    dimension_name,
    dimension_value,
    epoch,
    evaluate_expression,
    iso,
    reduce_statistic,
)
from ferry.local.ticker import Ticker

logger = logging.getLogger(__name__)

#: How often every alarm is evaluated.
TICK_SECONDS = 2.0
#: How long datapoints (and SQS's metrics, sampled from the queues) are kept for evaluation.
SAMPLES_KEPT_SECONDS = 6 * 3600
_SQS_METRICS = {
    "ApproximateNumberOfMessagesVisible": "messages",
    "ApproximateNumberOfMessagesNotVisible": "not_visible",
}
_COMPARE = {
    "GreaterThanOrEqualToThreshold": operator.ge,
    "GreaterThanThreshold": operator.gt,
    "LessThanThreshold": operator.lt,
    "LessThanOrEqualToThreshold": operator.le,
}


class AlarmEvaluator:
    """Evaluates the emulator's alarms, from a thread of the emulator's process."""

    def __init__(self, authorizer: Authorizer | None):
        self.authorizer = authorizer
        self._lock = threading.RLock()
        self._samples: dict[tuple[str, str, str, str], deque[tuple[float, float]]] = {}
        self._points: dict[tuple[Any, ...], deque[tuple[float, float]]] = {}
        self._indexed: dict[tuple[str, str], int] = {}
        self._told: set[str] = set()
        self._clock = Ticker("alarms", TICK_SECONDS, self.evaluate_all)

    def start(self) -> None:
        self._clock.start()

    def stop(self) -> None:
        self._clock.stop()

    def evaluate_all(self, now: float | None = None) -> None:
        """Evaluate every alarm of every account and region at ``now`` (epoch seconds)."""
        from moto.cloudwatch.models import cloudwatch_backends

        moment = time.time() if now is None else now
        with self._lock:
            self._sample_queues(moment)
            for account, regions in list(cloudwatch_backends.items()):
                for region, backend in list(regions.items()):
                    self._index(backend, account, region, moment)
                    for alarm in list(backend.alarms.values()):
                        if alarm.rule is None:  # composite alarms are not evaluated
                            self.evaluate(alarm, backend, account, region, moment)

    # -- one alarm ------------------------------------------------------------------------

    def evaluate(self, alarm: Any, backend: Any, account: str, region: str, now: float) -> None:
        periods = int(alarm.evaluation_periods or 1)
        try:
            values = [self._value(alarm, backend, account, region, now, i) for i in range(periods)]
        except UnsupportedAlarm as unsupported:
            self._tell_once(alarm.alarm_arn, f"alarm {alarm.name} is not evaluated: {unsupported}")
            return
        compare = _COMPARE.get(alarm.comparison_operator)
        if compare is None:
            self._tell_once(alarm.alarm_arn, f"{alarm.comparison_operator} is not evaluated")
            return
        threshold = float(alarm.threshold)
        present = [v for v in values if v is not None]
        breaching = sum(1 for v in present if compare(v, threshold))
        if (alarm.treat_missing_data or "missing") == "breaching":
            breaching += len(values) - len(present)
        state = _state(alarm, breaching, bool(present))
        if state is None or state == alarm.state_value:
            return
        shown = [round(v, 3) for v in present]
        symbol = alarm.comparison_operator.replace("Threshold", "")
        reason = (
            f"Threshold Crossed: {breaching} out of the last {periods} datapoints "
            f"{shown} were {symbol} the threshold ({threshold})"
            if state == "ALARM"
            else f"Threshold Crossed: no {periods} datapoints breaching; {shown}"
        )
        old = alarm.state_value
        data = _reason_data(alarm, values, threshold, now)
        backend.set_alarm_state(alarm.name, reason, json.dumps(data), state)
        logger.warning("alarm %s: %s -> %s (%s)", alarm.name, old, state, reason)
        actions = {
            "ALARM": alarm.alarm_actions,
            "OK": alarm.ok_actions,
            "INSUFFICIENT_DATA": alarm.insufficient_data_actions,
        }[state]
        if alarm.actions_enabled:
            change = StateChange(account, region, old, state, reason, now)
            for action in actions or []:
                self._notify(action, alarm, change)

    def _value(
        self, alarm: Any, backend: Any, account: str, region: str, now: float, index: int
    ) -> float | None:
        """The alarm's value in the ``index``-th period back from ``now`` (None: no data)."""
        if alarm.metric_data_queries:
            return self._expression(alarm, backend, account, region, now, index)
        period = int(alarm.period or 60)
        statistic = alarm.extended_statistic or alarm.statistic
        dimensions = {d.name: d.value for d in alarm.dimensions}
        return self._statistic(
            backend, account, region, alarm.namespace, alarm.metric_name, dimensions,
            statistic, now - (index + 1) * period, now - index * period,
        )  # fmt: skip

    def _expression(
        self, alarm: Any, backend: Any, account: str, region: str, now: float, index: int
    ) -> float | None:
        values: dict[str, float | None] = {}
        expression = None
        for query in alarm.metric_data_queries:
            if query.metric_stat is not None:
                stat = query.metric_stat
                period = int(stat.period or alarm.period or 60)
                dimensions = {
                    dimension_name(d): dimension_value(d) for d in stat.metric.dimensions or []
                }
                values[query.id] = self._statistic(
                    backend, account, region, stat.metric.namespace, stat.metric.metric_name,
                    dimensions, stat.stat, now - (index + 1) * period, now - index * period,
                )  # fmt: skip
            elif query.expression and str(query.return_data).lower() != "false":
                expression = query.expression
        if expression is None:  # one metric returned as it is
            returned = [q.id for q in alarm.metric_data_queries if q.metric_stat is not None]
            return values.get(returned[0]) if returned else None
        return evaluate_expression(expression, values)

    def _statistic(
        self, backend: Any, account: str, region: str, namespace: str, name: str,
        dimensions: dict[str, str], statistic: str, start: float, end: float,
    ) -> float | None:  # fmt: skip
        if namespace == "AWS/SQS" and name in _SQS_METRICS:
            key = (account, region, dimensions.get("QueueName", ""), name)
            samples = [v for t, v in self._samples.get(key, ()) if start <= t <= end]
            return reduce_statistic(samples, statistic)
        key = (account, region, namespace, name, frozenset(dimensions.items()))
        found = [v for t, v in self._points.get(key, ()) if start < t <= end]
        return reduce_statistic(found, statistic)

    def _index(self, backend: Any, account: str, region: str, now: float) -> None:
        """The datapoints moto stored since the last pass, by metric (moto's list only grows:
        each is read once, and kept ``SAMPLES_KEPT_SECONDS``)."""
        data = backend.metric_data
        done = self._indexed.get((account, region), 0)
        if done > len(data):  # moto's state was reset
            done = 0
            self._points = {k: v for k, v in self._points.items() if k[:2] != (account, region)}
        fresh = data[done:]  # a copy: the services append while this reads
        for datum in fresh:
            dimensions = frozenset((d.name, d.value) for d in datum.dimensions)
            key = (account, region, datum.namespace, datum.name, dimensions)
            points = self._points.setdefault(key, deque())
            moment = epoch(datum.timestamp)
            if hasattr(datum, "value"):
                points.append((moment, float(datum.value)))
            else:  # statistic sets: their sum and count stand for their samples
                count = int(datum.sample_count)
                points.extend([(moment, float(datum.sum_stat) / max(count, 1))] * count)
        self._indexed[(account, region)] = done + len(fresh)
        for points in self._points.values():
            while points and points[0][0] < now - SAMPLES_KEPT_SECONDS:
                points.popleft()

    def _sample_queues(self, now: float) -> None:
        """SQS publishes its queues' depths itself: sample moto's queues."""
        from moto.sqs.models import sqs_backends

        for account, regions in list(sqs_backends.items()):
            for region, backend in list(regions.items()):
                for name, queue in list(backend.queues.items()):
                    for metric, attribute in _SQS_METRICS.items():
                        value = (
                            queue.approximate_number_of_messages
                            if attribute == "messages"
                            else queue.approximate_number_of_messages_not_visible
                        )
                        samples = self._samples.setdefault((account, region, name, metric), deque())
                        samples.append((now, float(value)))
                        while samples and samples[0][0] < now - SAMPLES_KEPT_SECONDS:
                            samples.popleft()

    # -- actions --------------------------------------------------------------------------

    def _notify(self, action: str, alarm: Any, change: StateChange) -> None:
        """CloudWatch's message of the change to the SNS topic ``action``."""
        if action.split(":")[2] != "sns":
            self._tell_once(f"{alarm.alarm_arn}#{action}", f"action {action} is not emulated")
            return
        publish_change(self.authorizer, action, alarm, change)

    def _tell_once(self, key: str, what: str) -> None:
        if key not in self._told:
            self._told.add(key)
            logger.info("%s", what)


def _state(alarm: Any, breaching: int, any_present: bool) -> str | None:
    """The alarm's state from its breaching periods and whether any period has data; None
    when missing data leaves it as it is (``TreatMissingData`` ``ignore``)."""
    needed = int(alarm.datapoints_to_alarm or alarm.evaluation_periods or 1)
    treat = alarm.treat_missing_data or "missing"
    if breaching >= needed:
        return "ALARM"
    if not any_present and treat == "missing":
        return "INSUFFICIENT_DATA"
    if not any_present and treat == "ignore":
        return None
    return "OK"


def _reason_data(
    alarm: Any, values: list[float | None], threshold: float, now: float
) -> dict[str, Any]:
    """The ``StateReasonData`` of an evaluation: its query, datapoints and threshold."""
    return {
        "version": "1.0",
        "queryDate": iso(now),
        "statistic": alarm.statistic,
        "period": alarm.period,
        "recentDatapoints": [round(v, 3) for v in values if v is not None],
        "threshold": threshold,
        "evaluatedDatapoints": [
            {"timestamp": iso(now - (i + 1) * int(alarm.period or 60)), "value": v}
            for i, v in enumerate(values)
            if v is not None
        ],
    }


def install(authorizer: Authorizer | None = None) -> AlarmEvaluator:
    """Evaluate the alarms every ``TICK_SECONDS`` and on each ``DescribeAlarms``; the caller
    stops the returned evaluator."""
    from moto.cloudwatch.models import CloudWatchBackend

    evaluator = AlarmEvaluator(authorizer)
    readers = (
        "describe_alarms",
        "get_alarms_by_action_prefix",
        "get_alarms_by_alarm_name_prefix",
        "get_alarms_by_alarm_names",
        "get_alarms_by_state_value",
    )
    for reader in readers:
        original = getattr(CloudWatchBackend, reader)

        def read(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            try:
                evaluator.evaluate_all()
            except Exception:  # a reader gets the stored states whatever happens
                logger.exception("the alarms' evaluation failed")
            return _original(self, *args, **kwargs)

        setattr(CloudWatchBackend, reader, read)
    evaluator.start()
    return evaluator
