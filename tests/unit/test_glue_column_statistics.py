"""The emulated Glue's column statistics (``ferry.local.emulator_glue_statistics``, moto
in-process) as AWS serves them, read and written through Ferry's Glue adapter: values come
back equal, AWS's limits and errors hold, and statistics live and die with their table and
partitions, through a save and a restore of the emulator's state."""

from __future__ import annotations

from dataclasses import replace

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from ferry.catalog.glue import GlueCatalog
from ferry.core.errors import CatalogError, NotSupportedByCatalogError
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType
from ferry.core.statistics import ColumnStatistics, StatisticsKind
from ferry.local import emulator_glue_statistics, emulator_snapshot
from tests.helpers import in_process_aws
from tests.unit.test_column_statistics import EVERY_KIND

DAY = Column("dt", "string")


def _table(columns: list[Column], name: str = "orders", partitioned: bool = False) -> Table:
    return Table(
        database="sales",
        name=name,
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(location=f"s3://w/{name}", columns=tuple(columns)),
        partition_keys=(DAY,) if partitioned else (),
    )


def _partition(table: Table, day: str) -> Partition:
    return Partition((day,), table.storage.with_location(f"{table.location}/dt={day}"))


@pytest.fixture
def glue(monkeypatch):
    in_process_aws(monkeypatch)
    emulator_glue_statistics.install()
    with mock_aws():
        client = boto3.client("glue", region_name="us-east-1")
        catalog = GlueCatalog("aws", client)
        catalog.create_database(Database("sales"))
        yield catalog, client


def _longs(count: int) -> list[ColumnStatistics]:
    return [
        ColumnStatistics(f"c{i}", "bigint", StatisticsKind.LONG, nulls=i, distinct=i + 1, low=-i, high=i)
        for i in range(count)
    ]  # fmt: skip


def test_statistics_of_every_kind_come_back_equal(glue):
    catalog, _ = glue
    table = _table([Column(s.column, s.type) for s in EVERY_KIND])
    catalog.create_table(table)

    assert catalog.set_column_statistics(table, EVERY_KIND) == []

    assert catalog.get_column_statistics(table) == {s.column: s for s in EVERY_KIND}
    assert catalog.supports_column_statistics and not catalog.supports_constraints


def test_more_columns_than_one_call_takes_are_written_and_read_in_chunks(glue):
    catalog, client = glue
    statistics = _longs(130)  # more than 100 a read, 25 a write
    table = _table([Column(s.column, s.type) for s in statistics])
    catalog.create_table(table)

    catalog.set_column_statistics(table, statistics)

    assert catalog.get_column_statistics(table) == {s.column: s for s in statistics}
    with pytest.raises(ClientError) as refused:
        client.get_column_statistics_for_table(
            DatabaseName="sales", TableName="orders", ColumnNames=[s.column for s in statistics]
        )
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "'columnNames'" in refused.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as refused:
        client.update_column_statistics_for_table(
            DatabaseName="sales",
            TableName="orders",
            ColumnStatisticsList=[
                {"ColumnName": s.column, "ColumnType": "bigint", "AnalyzedTime": 0,
                 "StatisticsData": {"Type": "LONG", "LongColumnStatisticsData": {
                     "NumberOfNulls": 0, "NumberOfDistinctValues": 1}}}
                for s in statistics[:26]
            ],
        )  # fmt: skip
    assert refused.value.response["Error"]["Code"] == "ValidationException"


def test_a_column_without_statistics_is_absent_and_one_not_in_the_table_is_refused(glue):
    catalog, client = glue
    table = _table([Column("c0", "bigint"), Column("c1", "bigint")])
    catalog.create_table(table)
    catalog.set_column_statistics(table, _longs(1))

    assert list(catalog.get_column_statistics(table)) == ["c0"]
    reply = client.get_column_statistics_for_table(
        DatabaseName="sales", TableName="orders", ColumnNames=["c1"]
    )
    assert [e["Error"]["ErrorCode"] for e in reply["Errors"]] == ["EntityNotFoundException"]

    stranger = replace(_longs(1)[0], column="nope")
    with pytest.raises(CatalogError) as refused:
        catalog.set_column_statistics(table, [stranger])
    assert str(refused.value) == (
        "Glue catalog 'aws' refused to write the statistics of column nope of sales.orders: "
        "InvalidInputException: Column nope does not exist"
    )
    assert list(catalog.get_column_statistics(table)) == ["c0"]


def test_a_table_or_partition_that_does_not_exist_is_named(glue):
    catalog, _ = glue
    table = _table([Column("c0", "bigint")], partitioned=True)
    with pytest.raises(CatalogError, match=r"statistics of sales.orders: EntityNotFoundException"):
        catalog.get_column_statistics(table)
    catalog.create_table(table)
    with pytest.raises(
        CatalogError,
        match=r"write the column statistics of sales.orders partition \['2026-11-20'\]: "
        r"EntityNotFoundException",
    ):
        catalog.set_partition_column_statistics(table, {("2026-11-20",): _longs(1)})


def test_partition_statistics_go_with_their_partition_and_follow_its_values(glue):
    catalog, client = glue
    table = _table([Column("c0", "bigint"), Column("c1", "bigint")], partitioned=True)
    catalog.create_table(table)
    days = ("2026-11-20", "2026-11-21", "2026-11-22")
    catalog.add_partitions(table, [_partition(table, day) for day in days])
    first, second = _longs(2), [replace(s, nulls=s.nulls + 10) for s in _longs(2)]

    catalog.set_partition_column_statistics(table, {(days[0],): first, (days[1],): second})

    found = catalog.get_partition_column_statistics(table, [(d,) for d in days])
    assert found == {
        (days[0],): {s.column: s for s in first},
        (days[1],): {s.column: s for s in second},
    }
    assert catalog.get_column_statistics(table) == {}  # the table's own are apart

    catalog.drop_partitions(table, [(days[0],)])
    catalog.add_partitions(table, [_partition(table, days[0])])
    client.update_partition(
        DatabaseName="sales", TableName="orders", PartitionValueList=[days[1]],
        PartitionInput={"Values": ["2026-11-23"], "StorageDescriptor": {"Columns": [
            {"Name": "c0", "Type": "bigint"}, {"Name": "c1", "Type": "bigint"}]}},
    )  # fmt: skip
    found = catalog.get_partition_column_statistics(table, [(days[0],), ("2026-11-23",)])
    assert found == {("2026-11-23",): {s.column: s for s in second}}
    with pytest.raises(CatalogError, match=r"partition \['2026-11-21'\]: EntityNotFoundException"):
        catalog.get_partition_column_statistics(table, [(days[1],)])


def test_deleted_statistics_and_tables_take_their_statistics_with_them(glue):
    catalog, _ = glue
    table = _table([Column("c0", "bigint"), Column("c1", "bigint")])
    catalog.create_table(table)
    catalog.set_column_statistics(table, _longs(2))

    catalog.delete_column_statistics(table, ["c0"])
    catalog.delete_column_statistics(table, ["c0"])  # none left: still fine, as on AWS

    assert list(catalog.get_column_statistics(table)) == ["c1"]
    catalog.drop_table("sales", "orders")
    catalog.create_table(table)
    assert catalog.get_column_statistics(table) == {}


def test_statistics_are_kept_in_the_emulators_snapshot(glue, tmp_path):
    catalog, _ = glue
    table = _table([Column(s.column, s.type) for s in EVERY_KIND])
    catalog.create_table(table)
    catalog.set_column_statistics(table, EVERY_KIND)
    path = tmp_path / emulator_snapshot.FILE
    emulator_snapshot.save(path)
    catalog.drop_table("sales", "orders")

    restored = emulator_snapshot.restore(path)

    assert restored.restored, restored.message
    assert catalog.get_column_statistics(table) == {s.column: s for s in EVERY_KIND}


def test_glue_holds_no_keys(glue):
    catalog, _ = glue
    with pytest.raises(
        NotSupportedByCatalogError, match="catalog 'aws' \\(glue\\) holds no primary"
    ):
        catalog.get_constraints(_table([]))
