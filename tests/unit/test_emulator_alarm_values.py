"""The values the emulator's alarms read (``ferry.local.emulator_alarm_values``): a period's
statistic, metric math with CloudWatch's missing values, and CloudWatch's timestamps."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

import pytest

from ferry.local.emulator_alarm_values import (
    UnsupportedAlarm,
    epoch,
    evaluate_expression,
    iso,
    reduce_statistic,
)

VALUES = [4.0, 1.0, 3.0, 2.0]


@pytest.mark.parametrize(
    ("statistic", "expected"),
    [
        ("Sum", 10.0),
        ("Average", 2.5),
        ("Minimum", 1.0),
        ("Maximum", 4.0),
        ("SampleCount", 4.0),
        ("p50", 2.0),
        ("p99", 4.0),
    ],
)
def test_a_period_reduces_to_its_statistic(statistic, expected):
    assert reduce_statistic(VALUES, statistic) == expected


def test_a_period_without_datapoints_has_no_value_and_an_unknown_statistic_is_named():
    assert reduce_statistic([], "Sum") is None
    with pytest.raises(UnsupportedAlarm, match="the statistic IQM"):
        reduce_statistic(VALUES, "IQM")


def test_metric_math_has_no_value_where_a_query_has_none_unless_filled():
    assert evaluate_expression("errors + throttles * 2", {"errors": 1.0, "throttles": 3.0}) == 7.0
    assert evaluate_expression("errors + throttles", {"errors": 1.0, "throttles": None}) is None
    assert evaluate_expression("errors + FILL(throttles, 0)", {"errors": 1.0, "throttles": None}) == 1.0
    assert evaluate_expression("-errors", {"errors": 2.0}) == -2.0
    assert math.isnan(evaluate_expression("errors / zero", {"errors": 1.0, "zero": 0.0}))


@pytest.mark.parametrize("expression", ["errors +", "RATE(errors)", "unknown * 2"])
def test_an_expression_the_emulator_does_not_evaluate_is_named(expression):
    with pytest.raises(UnsupportedAlarm, match=re.escape(f"the expression {expression}")):
        evaluate_expression(expression, {"errors": 1.0})


def test_timestamps_read_as_cloudwatch_writes_them():
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()
    assert iso(moment) == "2026-01-02T03:04:05.000+0000"
    assert epoch("2026-01-02T03:04:05Z") == moment
    assert epoch(datetime(2026, 1, 2, 3, 4, 5)) == moment
    assert epoch(str(moment)) == moment
