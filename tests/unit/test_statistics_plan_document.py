"""The statistics and keys a plan holds survive the plan document's JSON exactly."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from pydantic import TypeAdapter

from ferry.core.statistics import Constraints, ForeignKey, PrimaryKey
from ferry.planning.statistics_records import (
    PartitionStatistics,
    StatisticsPlan,
    StatisticsRecord,
    statistics_counts,
)
from ferry.planning.table_plan import ReplicationPlan
from tests.unit.test_column_statistics import EVERY_KIND, IDS

#: Values JSON or a float would bend: a decimal's trailing zero (its scale), a float that is
#: no short decimal, a decimal with a positive exponent, a sketch with text of every kind.
AWKWARD = [
    replace(EVERY_KIND[2], low=0.1 + 0.2, high=1e300),
    replace(EVERY_KIND[5], low=Decimal("-0.10"), high=Decimal("1E+2")),
    replace(EVERY_KIND[1], sketch="FM\x00\x01é☃", analyzed_at=datetime(2026, 11, 27, tzinfo=UTC)),
]


@pytest.mark.parametrize("statistics", EVERY_KIND + AWKWARD, ids=IDS + ["float", "decimal", "sketch"])
def test_every_kind_of_statistics_round_trips_through_the_plans_json(statistics):
    planned = StatisticsPlan(
        table=(StatisticsRecord.of(statistics),),
        partitions=(PartitionStatistics(("2026-11-27", "x=1/y"), (StatisticsRecord.of(statistics),)),),
    )
    adapter = TypeAdapter(StatisticsPlan)

    read = adapter.validate_json(adapter.dump_json(planned))

    assert read == planned
    [record] = read.table
    back = record.statistics()
    assert back == statistics
    assert type(back.low) is type(statistics.low) and str(back.low) == str(statistics.low)
    assert back.analyzed_at == statistics.analyzed_at


def test_keys_round_trip_and_are_counted():
    keys = Constraints(
        PrimaryKey("pk_orders", ("id", "dt"), rely=True),
        (ForeignKey("fk_customer", ("customer",), "sales", "customers", ("id",), enabled=True),),
    )
    planned = StatisticsPlan(
        table=tuple(StatisticsRecord.of(s) for s in EVERY_KIND),
        keys_to_add=keys,
        keys_to_drop=("pk_old",),
    )
    adapter = TypeAdapter(StatisticsPlan)

    assert adapter.validate_json(adapter.dump_json(planned)) == planned
    assert statistics_counts(planned) == {
        "tableColumns": 7,
        "partitions": 0,
        "partitionColumns": 0,
        "keysToAdd": 2,
        "keysToDrop": 1,
    }
    assert statistics_counts(StatisticsPlan()) is None


def test_the_plan_holds_its_statistics_in_its_own_json_schema():
    # The plan document is a TypeAdapter over ReplicationPlan: the field must be part of it.
    schema = TypeAdapter(ReplicationPlan).json_schema()
    assert "statistics" in schema["properties"]
