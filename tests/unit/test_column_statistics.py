"""Column statistics of every kind map between Hive's Thrift structs, Glue's dictionaries and
Ferry's model, both ways, and come back equal; what one side cannot hold is named."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from hmsclient.genthrift.hive_metastore import ttypes
from thrift.protocol import TBinaryProtocol
from thrift.TSerialization import deserialize, serialize

from ferry.catalog.glue_statistics_shapes import statistics_from_glue, statistics_to_glue
from ferry.catalog.hive_statistics_thrift import (
    constraints_from_thrift,
    foreign_key_to_thrift,
    primary_key_to_thrift,
    statistics_from_thrift,
    statistics_to_thrift,
)
from ferry.core.model import CatalogKind
from ferry.core.statistics import (
    ColumnStatistics,
    Constraints,
    ForeignKey,
    PrimaryKey,
    StatisticsKind,
    decimal_from_parts,
    decimal_parts,
    kind_of_type,
    unfit,
    unmapped,
)

NOW = datetime(2026, 11, 27, 4, 0, tzinfo=UTC)
K = StatisticsKind

#: One statistics value of each kind, with every field its kind holds.
EVERY_KIND = [
    ColumnStatistics("active", "boolean", K.BOOLEAN, nulls=1, trues=7, falses=2),
    ColumnStatistics("id", "bigint", K.LONG, nulls=0, distinct=10, low=-5, high=9_000_000_000),
    ColumnStatistics("price", "double", K.DOUBLE, nulls=2, distinct=8, low=-1.5, high=99.25),
    ColumnStatistics(
        "name", "varchar(20)", K.STRING, nulls=3, distinct=6, max_length=20, average_length=7.5
    ),
    ColumnStatistics("blob", "binary", K.BINARY, nulls=4, max_length=1024, average_length=33.0),
    ColumnStatistics(
        "amount", "decimal(12,2)", K.DECIMAL, nulls=0, distinct=5,
        low=Decimal("-12345.67"), high=Decimal("9999999999.99"),
    ),
    ColumnStatistics(
        "day", "date", K.DATE, nulls=0, distinct=30, low=date(1969, 12, 31), high=date(2026, 11, 27)
    ),
]  # fmt: skip
IDS = [s.kind.value for s in EVERY_KIND]


def _wire(obj):
    """Through Hive's binary protocol and back, as the metastore reads and answers it."""
    factory = TBinaryProtocol.TBinaryProtocolAcceleratedFactory()
    return deserialize(type(obj)(), serialize(obj, factory), factory)


@pytest.mark.parametrize("statistics", EVERY_KIND, ids=IDS)
def test_every_kind_comes_back_equal_from_hive_thrift(statistics):
    assert statistics_from_thrift(_wire(statistics_to_thrift(statistics))) == statistics


@pytest.mark.parametrize("statistics", EVERY_KIND, ids=IDS)
def test_every_kind_comes_back_equal_from_glue(statistics):
    entry = statistics_to_glue(statistics, NOW)
    assert entry["StatisticsData"]["Type"] == statistics.kind.value
    assert entry["AnalyzedTime"] == NOW
    assert statistics_from_glue(entry) == statistics


@pytest.mark.parametrize("statistics", EVERY_KIND, ids=IDS)
def test_hive_statistics_reach_glue_and_come_back_as_the_same_thrift(statistics):
    thrift = _wire(statistics_to_thrift(statistics))
    through_glue = statistics_from_glue(statistics_to_glue(statistics_from_thrift(thrift), NOW))
    assert statistics_to_thrift(through_glue) == thrift


def test_glue_names_each_field_as_its_api_does():
    decimal, day = EVERY_KIND[5], EVERY_KIND[6]
    assert statistics_to_glue(decimal, NOW)["StatisticsData"] == {
        "Type": "DECIMAL",
        "DecimalColumnStatisticsData": {
            "NumberOfNulls": 0,
            "NumberOfDistinctValues": 5,
            "MinimumValue": {"UnscaledValue": (-1234567).to_bytes(3, "big", signed=True), "Scale": 2},
            "MaximumValue": {"UnscaledValue": (999999999999).to_bytes(6, "big", signed=True), "Scale": 2},
        },
    }  # fmt: skip
    dates = statistics_to_glue(day, NOW)["StatisticsData"]["DateColumnStatisticsData"]
    assert dates["MinimumValue"] == datetime(1969, 12, 31, tzinfo=UTC)


def test_a_glue_date_is_read_as_its_utc_day():
    entry = statistics_to_glue(EVERY_KIND[6], NOW)
    local = datetime(2026, 11, 27, 1, 0, tzinfo=UTC).astimezone()  # botocore answers tzlocal
    entry["StatisticsData"]["DateColumnStatisticsData"]["MaximumValue"] = local
    assert statistics_from_glue(entry).high == date(2026, 11, 27)


def test_a_hive_date_is_days_since_the_epoch_and_a_decimal_its_unscaled_bytes():
    stats = statistics_to_thrift(EVERY_KIND[6]).statsData.dateStats
    assert (stats.lowValue.daysSinceEpoch, stats.highValue.daysSinceEpoch) == (-1, 20784)
    amount = statistics_to_thrift(EVERY_KIND[5]).statsData.decimalStats.lowValue
    assert (int.from_bytes(amount.unscaled, "big", signed=True), amount.scale) == (-1234567, 2)


@pytest.mark.parametrize(
    "value", ["0", "0.00", "-1", "127", "128", "-128", "-129", "1E+2", "123456789012345678.901"]
)
def test_decimals_keep_their_value_and_scale_through_unscaled_bytes(value):
    unscaled, scale = decimal_parts(Decimal(value))
    back = decimal_from_parts(unscaled, scale)
    assert back == Decimal(value)
    assert scale == max(0, -Decimal(value).as_tuple().exponent)


def test_hives_sketch_is_carried_between_metastores_and_named_when_glue_cannot_hold_it():
    sketched = ColumnStatistics(
        "id", "int", K.LONG, nulls=0, distinct=3, low=1, high=3, sketch="FMx"
    )
    assert statistics_from_thrift(_wire(statistics_to_thrift(sketched))) == sketched
    assert unmapped(sketched, CatalogKind.HIVE_METASTORE) == []
    assert unmapped(sketched, CatalogKind.GLUE) == [
        "column id: Glue has no field for Hive's NDV sketch (bitVectors)"
    ]
    assert "bitVectors" not in str(statistics_to_glue(sketched, NOW))
    assert statistics_from_glue(statistics_to_glue(sketched, NOW)).sketch is None


@pytest.mark.parametrize(
    ("column_type", "kind"),
    [
        ("BOOLEAN", K.BOOLEAN), ("tinyint", K.LONG), ("int", K.LONG), ("bigint", K.LONG),
        ("float", K.DOUBLE), ("double", K.DOUBLE), ("string", K.STRING), ("char(3)", K.STRING),
        ("varchar(255)", K.STRING), ("binary", K.BINARY), ("decimal(38,18)", K.DECIMAL),
        ("date", K.DATE), ("timestamp", None), ("array<int>", None), ("struct<a:int>", None),
        ("map<string,int>", None),
    ],
)  # fmt: skip
def test_each_column_type_holds_one_kind_or_none(column_type, kind):
    assert kind_of_type(column_type) is kind


def test_statistics_a_replica_column_cannot_hold_are_named():
    long = EVERY_KIND[1]
    assert unfit(long, "int") is None
    assert unfit(long, None) == "column id: not a column of the replica table"
    assert unfit(long, "string") == (
        "column id: LONG statistics, but its replica type string holds STRING statistics"
    )
    assert unfit(long, "timestamp") == (
        "column id: LONG statistics, but its replica type timestamp holds no statistics"
    )


def test_keys_come_back_equal_from_hive_thrift():
    primary = PrimaryKey("orders_pk", ("order_id", "line"), enabled=False, rely=True)
    foreign = ForeignKey(
        "orders_customer_fk", ("customer_id", "region"), "sales", "customers", ("id", "region"),
        rely=True,
    )  # fmt: skip
    rows_pk = [_wire(r) for r in primary_key_to_thrift("sales", "orders", primary)]
    rows_fk = [_wire(r) for r in foreign_key_to_thrift("sales", "orders", foreign)]
    assert [(r.column_name, r.key_seq) for r in rows_pk] == [("order_id", 1), ("line", 2)]
    # The metastore answers rows in any order: the model orders them by their key sequence.
    back = constraints_from_thrift(rows_pk[::-1], rows_fk[::-1])
    assert back == Constraints(primary, (foreign,))
    assert back.names == ("orders_pk", "orders_customer_fk")
    assert not Constraints()


def test_thrift_without_a_known_member_is_a_catalog_error():
    from ferry.core.errors import CatalogError

    obj = ttypes.ColumnStatisticsObj("ts", "timestamp", ttypes.ColumnStatisticsData())
    with pytest.raises(CatalogError, match="column ts: statistics of a kind Ferry does not know"):
        statistics_from_thrift(obj)
