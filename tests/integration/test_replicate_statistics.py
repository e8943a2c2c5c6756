"""Column statistics and keys through ``ferry replicate``, between real Hive metastores and the
emulated Glue: the replica's statistics equal the source's for the partitions it holds, a
partial replica carries none of the whole table's, keys arrive Hive → Hive (as parameters on
Glue), a second run changes nothing and a source ``ANALYZE`` alone is carried by the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from ferry.commands.plan import run_plan
from ferry.core import faults
from ferry.core.statistics import ColumnStatistics, Constraints, ForeignKey, PrimaryKey
from ferry.core.statistics import StatisticsKind as K
from ferry.local.samples import create_sample_tables, last_days
from ferry.planning.key_plan import FOREIGN_KEYS_PARAMETER, PRIMARY_KEY_PARAMETER
from tests.conftest import NOW
from tests.helpers import Replicator, config_document
from tests.integration.test_replicate_hive import event_ids

pytestmark = pytest.mark.integration

GLUE = {"name": "aws", "glue": {"region": "us-east-1"}}

#: What Spark's ANALYZE leaves on a table: the whole table's size, rows and columns.
TABLE_PARAMETERS = {
    "numRows": "9",
    "rawDataSize": "900",
    "spark.sql.statistics.totalSize": "4096",
    "spark.sql.statistics.numRows": "9",
    "spark.sql.statistics.colStats.amount.version": "2",
    "spark.sql.statistics.colStats.amount.min": "1.5",
}


def _order_statistics(day_number: int) -> list[ColumnStatistics]:
    return [
        ColumnStatistics("order_id", "bigint", K.LONG, nulls=0, distinct=3, low=day_number * 10,
                         high=day_number * 10 + 2),
        ColumnStatistics("customer_id", "bigint", K.LONG, nulls=day_number, distinct=2, low=1,
                         high=7),
        ColumnStatistics("amount", "double", K.DOUBLE, nulls=0, distinct=3, low=1.5,
                         high=20.25 + day_number),
    ]  # fmt: skip


def _primary_key(database: str, table: str) -> PrimaryKey:
    column = "order_id" if table == "orders" else "customer_id"
    return PrimaryKey(f"pk_{table}_{database}", (column,), rely=table == "orders")


def _order_keys(database: str) -> Constraints:
    foreign = ForeignKey(
        f"fk_customer_{database}", ("customer_id",), database, "customers", ("customer_id",)
    )
    return Constraints(_primary_key(database, "orders"), (foreign,))


def _analyzed(catalog, database: str, warehouse: str):
    """Sample tables with statistics of the table and every partition, and keys."""
    sample = create_sample_tables(catalog, database, warehouse, last_days(NOW.date(), 3))
    orders = replace(sample.orders, parameters={**sample.orders.parameters, **TABLE_PARAMETERS})
    catalog.alter_table(orders)
    catalog.set_column_statistics(orders, _order_statistics(0))
    catalog.set_partition_column_statistics(
        orders, {(day,): _order_statistics(i + 1) for i, day in enumerate(sample.days)}
    )
    if catalog.supports_constraints:
        # A Hive metastore's key names are unique across all its databases.
        catalog.add_constraints(sample.customers, Constraints(_primary_key(database, "customers")))
        catalog.add_constraints(orders, _order_keys(database))
    return sample


@pytest.fixture
def analyzed(local_runtime, source_catalog, glue_catalog, unique, tmp_path):
    """``analyzed("hive" | "glue")``: analysed sample tables in that source catalog."""
    catalogs = {"hive": source_catalog, "glue": glue_catalog}

    def make(name: str):
        catalog = catalogs[name]
        database = f"stats_{name}_{unique}"
        return catalog, _analyzed(catalog, database, local_runtime.warehouse)

    return make


def _entry(sample, table: str, target: str, **source):
    return {
        "source-table": {"database-name": sample.database, "table-name": table, **source},
        "replica-table": {
            "database-name": f"{sample.database}_dr",
            "table-location": f"{target}/{table}",
        },
    }


def _run(local_runtime, replications, source=None, replica=None):
    document = config_document(local_runtime, replications, replica=replica)
    if source is not None:
        document["source-catalog"] = source
    return Replicator(document, event_ids=event_ids()).run()


def _partition_statistics(catalog, table, days):
    return catalog.get_partition_column_statistics(table, [(day,) for day in days])


def test_hive_to_hive_carries_statistics_and_keys_and_a_second_run_changes_nothing(
    local_runtime, analyzed, replica_catalog, tmp_path
):
    source, sample = analyzed("hive")
    target = (tmp_path / "replica").as_uri()
    replica_db = f"{sample.database}_dr"
    [customers] = _run(local_runtime, [_entry(sample, "customers", target)])
    assert customers.status == "SUCCEEDED", customers.error
    both = [_entry(sample, "customers", target), _entry(sample, "orders", target)]

    outcomes = _run(local_runtime, both)

    assert [o.status for o in outcomes] == ["UNCHANGED", "SUCCEEDED"], [o.error for o in outcomes]
    orders = replica_catalog.get_table(replica_db, "orders")
    assert replica_catalog.get_column_statistics(orders) == source.get_column_statistics(
        sample.orders
    )
    assert _partition_statistics(replica_catalog, orders, sample.days) == _partition_statistics(
        source, sample.orders, sample.days
    )
    assert len(_partition_statistics(replica_catalog, orders, sample.days)) == 3
    assert orders.parameters["spark.sql.statistics.numRows"] == "9"
    keys = replica_catalog.get_constraints(orders)
    source_keys = _order_keys(sample.database)
    assert keys.primary_key == source_keys.primary_key
    assert keys.foreign_keys == (replace(source_keys.foreign_keys[0], parent_database=replica_db),)
    replica_customers = replica_catalog.get_table(replica_db, "customers")
    assert replica_catalog.get_constraints(replica_customers).names == (
        f"pk_customers_{sample.database}",
    )

    assert [o.status for o in _run(local_runtime, both)] == ["UNCHANGED", "UNCHANGED"]

    # An ANALYZE of one partition at the source alone: the next run carries it.
    day = sample.days[1]
    analyzed_again = [replace(s, nulls=s.nulls + 40) for s in _order_statistics(9)]
    source.set_partition_column_statistics(sample.orders, {(day,): analyzed_again})
    [_, again] = _run(local_runtime, both)
    assert again.status == "SUCCEEDED", again.error
    assert _partition_statistics(replica_catalog, orders, [day]) == {
        (day,): {s.column: s for s in analyzed_again}
    }
    assert [o.status for o in _run(local_runtime, both)] == ["UNCHANGED", "UNCHANGED"]


def test_a_foreign_key_whose_parent_has_no_replica_is_a_notice(
    local_runtime, analyzed, replica_catalog, tmp_path
):
    source, sample = analyzed("hive")
    target = (tmp_path / "replica").as_uri()

    [orders] = _run(local_runtime, [_entry(sample, "orders", target)])

    assert orders.status == "SUCCEEDED", orders.error
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    keys = replica_catalog.get_constraints(replica)
    assert keys.names == (f"pk_orders_{sample.database}",)
    assert (
        f"{sample.database}_dr.orders: foreign key fk_customer_{sample.database} not replicated: its parent table "
        f"{sample.database}.customers has no replica in catalog 'dr' yet (replicate it first, "
        "or name its replica in table-mappings)"
    ) in orders.notices


def test_a_partial_replica_carries_no_statistics_of_the_whole_table(
    local_runtime, analyzed, replica_catalog, tmp_path
):
    source, sample = analyzed("hive")
    target = (tmp_path / "replica").as_uri()

    [orders] = _run(local_runtime, [_entry(sample, "orders", target, **{"partition-limit": 2})])

    assert orders.status == "SUCCEEDED", orders.error
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    held = {p.values for p in replica_catalog.list_partitions(replica)}
    assert held == {(day,) for day in sample.days[:2]}
    assert replica_catalog.get_column_statistics(replica) == {}
    assert not {"numRows", "rawDataSize"} & set(replica.parameters)
    assert not [key for key in replica.parameters if key.startswith("spark.sql.statistics.")]
    assert _partition_statistics(replica_catalog, replica, sample.days[:2]) == (
        _partition_statistics(source, sample.orders, sample.days[:2])
    )
    # The partition the limit left out is not there, and so are its statistics.
    assert (sample.days[2],) not in held
    assert [o.status for o in _run(
        local_runtime, [_entry(sample, "orders", target, **{"partition-limit": 2})]
    )] == ["UNCHANGED"]  # fmt: skip


def test_hive_to_glue_carries_statistics_and_keeps_keys_as_parameters(
    local_runtime, analyzed, glue_catalog, bucket
):
    source, sample = analyzed("hive")
    target = f"s3://{bucket}/warehouse"

    [orders] = _run(local_runtime, [_entry(sample, "orders", target)], replica=GLUE)

    assert orders.status == "SUCCEEDED", orders.error
    replica = glue_catalog.get_table(f"{sample.database}_dr", "orders")
    assert glue_catalog.get_column_statistics(replica) == source.get_column_statistics(
        sample.orders
    )
    assert _partition_statistics(glue_catalog, replica, sample.days) == _partition_statistics(
        source, sample.orders, sample.days
    )
    assert json.loads(replica.parameters[PRIMARY_KEY_PARAMETER])["columns"] == ["order_id"]
    [foreign] = json.loads(replica.parameters[FOREIGN_KEYS_PARAMETER])
    assert foreign["parent_table"] == "customers"
    said = [n for n in orders.notices if "holds no primary or foreign keys" in n]
    names = ", ".join(_order_keys(sample.database).names)
    assert said == [
        f"{sample.database}_dr.orders: catalog 'aws' holds no primary or foreign keys; the "
        f"source's {names} are kept as table parameters {PRIMARY_KEY_PARAMETER} "
        f"and {FOREIGN_KEYS_PARAMETER}"
    ]
    again = _run(local_runtime, [_entry(sample, "orders", target)], replica=GLUE)
    assert [o.status for o in again] == ["UNCHANGED"]


def test_glue_to_hive_carries_statistics(local_runtime, analyzed, replica_catalog, tmp_path):
    source, sample = analyzed("glue")
    target = (tmp_path / "replica").as_uri()

    [orders] = _run(local_runtime, [_entry(sample, "orders", target)], source=GLUE)

    assert orders.status == "SUCCEEDED", orders.error
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert replica_catalog.get_column_statistics(replica) == source.get_column_statistics(
        sample.orders
    )
    assert _partition_statistics(replica_catalog, replica, sample.days) == _partition_statistics(
        source, sample.orders, sample.days
    )
    assert replica_catalog.get_constraints(replica) == Constraints()
    again = _run(local_runtime, [_entry(sample, "orders", target)], source=GLUE)
    assert [o.status for o in again] == ["UNCHANGED"]


@pytest.mark.parametrize("point", ["commit.partition-statistics", "commit.table-statistics"])
def test_a_commit_that_fails_between_its_statistics_writes_converges_on_the_next_run(
    local_runtime, analyzed, replica_catalog, tmp_path, point
):
    source, sample = analyzed("hive")
    target = (tmp_path / "replica").as_uri()
    both = [_entry(sample, "customers", target), _entry(sample, "orders", target)]
    _run(local_runtime, both[:1])

    with faults.armed(faults.Fault(point, times=1000)):
        [_, failed] = _run(local_runtime, both)

    assert failed.status == "FAILED" and "InjectedFault" in (failed.error_type or ""), failed
    [_, rerun] = _run(local_runtime, both)
    assert rerun.status == "SUCCEEDED", rerun.error
    orders = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert replica_catalog.get_column_statistics(orders) == source.get_column_statistics(
        sample.orders
    )
    assert _partition_statistics(replica_catalog, orders, sample.days) == _partition_statistics(
        source, sample.orders, sample.days
    )
    assert replica_catalog.get_constraints(orders).names == _order_keys(sample.database).names
    assert [o.status for o in _run(local_runtime, both)] == ["UNCHANGED", "UNCHANGED"]


def test_ferry_plan_counts_what_would_be_written_and_success_says_what_was(
    local_runtime, analyzed, replica_catalog, tmp_path, consumer, capsys
):
    source, sample = analyzed("hive")
    topic, messages = consumer
    target = (tmp_path / "replica").as_uri()
    document = config_document(
        local_runtime,
        [_entry(sample, "orders", target)],
        **{"sns-event-listener": {"topic": topic}},
    )
    replicator = Replicator(document, event_ids=event_ids())
    capsys.readouterr()

    assert run_plan(replicator.config_path, as_json=True) == 0
    (table,) = json.loads(capsys.readouterr().out)["tables"]
    assert run_plan(replicator.config_path) == 0
    human = capsys.readouterr().out
    [outcome] = replicator.run()

    expected = {"tableColumns": 3, "partitions": 3, "partitionColumns": 9}
    assert table["statistics"] == {**expected, "keysToAdd": 1, "keysToDrop": 0}
    assert (
        "would write column statistics of the table (3 columns), column statistics of "
        "3 partitions, 1 key to add"
    ) in human
    assert f"foreign key fk_customer_{sample.database} not replicated" in human
    assert outcome.status == "SUCCEEDED", outcome.error
    success = [m["body"] for m in messages() if m["body"]["type"] == "SUCCESS"]
    assert [m["statistics"] for m in success] == [{**expected, "keysAdded": 1, "keysDropped": 0}]


def _spark_sql(uri: str, warehouse: str, *statements: str) -> list[list]:
    """The last statement's rows, from Spark SQL on the metastore at ``uri``."""
    ran = subprocess.run(
        [sys.executable, "-m", "tests.integration.spark_sql", uri, warehouse, *statements],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


@pytest.mark.spark
def test_spark_reads_the_replicated_statistics_of_a_column(
    local_runtime, source_catalog, replica_catalog, sample, tmp_path
):
    target = (tmp_path / "replica").as_uri()
    warehouse = (tmp_path / "spark-warehouse").as_uri()
    describe = "DESCRIBE EXTENDED {}.orders amount"
    source_rows = _spark_sql(
        local_runtime.source_uri,
        warehouse,
        f"ANALYZE TABLE {sample.database}.orders COMPUTE STATISTICS FOR COLUMNS amount",
        describe.format(sample.database),
    )

    [orders] = _run(local_runtime, [_entry(sample, "orders", target)])

    assert orders.status == "SUCCEEDED", orders.error
    replica_rows = _spark_sql(
        local_runtime.replica_uri, warehouse, describe.format(f"{sample.database}_dr")
    )
    described = dict(map(tuple, replica_rows))
    assert described == dict(map(tuple, source_rows))
    assert described["num_nulls"] == "0" and described["min"] not in ("NULL", None)
    assert described["distinct_count"] not in ("NULL", None)


def test_statistics_the_replica_column_cannot_hold_are_one_notice_and_the_rest_arrive(
    local_runtime, analyzed, replica_catalog, tmp_path
):
    # Glue keeps a column's statistics when its type changes: these DOUBLE statistics now
    # describe a string column, which holds STRING statistics.
    source, sample = analyzed("glue")
    columns = tuple(
        replace(c, type="string") if c.name == "amount" else c for c in sample.orders.storage.columns
    )
    retyped = replace(sample.orders, storage=replace(sample.orders.storage, columns=columns))
    source.alter_table(retyped)
    target = (tmp_path / "replica").as_uri()

    [orders] = _run(local_runtime, [_entry(sample, "orders", target)], source=GLUE)

    assert orders.status == "SUCCEEDED", orders.error
    assert orders.notices == (
        f"{sample.database}_dr.orders: column statistics not replicated: column amount: DOUBLE "
        "statistics, but its replica type string holds STRING statistics",
    )
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    expected = {s.column: s for s in _order_statistics(0) if s.column != "amount"}
    assert replica_catalog.get_column_statistics(replica) == expected
