"""Column statistics and keys between real catalogs: two Hive metastores and the emulated Glue.

What is read from a source catalog and written to a replica catalog reads back equal there,
in every direction (Hive → Hive, Hive → Glue, Glue → Hive), for the table and for each
partition; what a catalog refuses is one error that names the table and the column or key.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.core.errors import CatalogError, NotSupportedByCatalogError
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType
from ferry.core.statistics import Constraints, ForeignKey, PrimaryKey
from tests.unit.test_column_statistics import EVERY_KIND

pytestmark = pytest.mark.integration

#: Partition values, one with characters Hive escapes in a partition's name.
DAYS = (("2026-11-20",), ("2026-11-21 08:30",), ("2026-11-22",))


def _table(database: str, name: str, columns: list[Column], location: str) -> Table:
    return Table(
        database=database,
        name=name,
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(
            location=location,
            columns=tuple(columns),
            input_format="org.apache.hadoop.mapred.TextInputFormat",
            output_format="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            serde_library="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
        ),
        partition_keys=(Column("dt", "string"),),
        parameters={"EXTERNAL": "TRUE"},
    )


def _with_stats(catalog, database: str, location: str) -> Table:
    """A partitioned table of one column of each kind, and its partitions, in ``catalog``."""
    catalog.create_database(Database(database))
    table = _table(database, "measures", [Column(s.column, s.type) for s in EVERY_KIND], location)
    catalog.create_table(table)
    catalog.add_partitions(
        table,
        [Partition(v, table.storage.with_location(f"{location}/p{i}")) for i, v in enumerate(DAYS)],
    )
    return table


def _partition_statistics():
    """Different statistics for two of the three partitions (the third has none)."""
    return {
        DAYS[0]: EVERY_KIND,
        DAYS[1]: [replace(s, nulls=s.nulls + 100) for s in EVERY_KIND],
    }


def _replicate(source, replica, table: Table, replica_table: Table) -> None:
    """What a replication does with the statistics: read them at the source, write them to
    the replica (whose table and partitions exist)."""
    replica.set_column_statistics(replica_table, list(source.get_column_statistics(table).values()))
    found = source.get_partition_column_statistics(table, DAYS)
    replica.set_partition_column_statistics(
        replica_table, {values: list(stats.values()) for values, stats in found.items()}
    )


@pytest.fixture
def catalogs(request, source_catalog, replica_catalog, glue_catalog):
    return {"hive": source_catalog, "dr": replica_catalog, "glue": glue_catalog}


@pytest.mark.parametrize(
    ("source_name", "replica_name"),
    [("hive", "dr"), ("hive", "glue"), ("glue", "dr"), ("glue", "glue")],
    ids=["hive-to-hive", "hive-to-glue", "glue-to-hive", "glue-to-glue"],
)
def test_statistics_of_the_table_and_its_partitions_read_back_equal_at_the_replica(
    catalogs, unique, tmp_path, source_name, replica_name
):
    source, replica = catalogs[source_name], catalogs[replica_name]
    database = f"stats_{unique}"
    table = _with_stats(source, database, (tmp_path / "source").as_uri())
    source.set_column_statistics(table, EVERY_KIND)
    source.set_partition_column_statistics(table, _partition_statistics())
    replica_table = _with_stats(replica, f"{database}_dr", (tmp_path / "replica").as_uri())

    _replicate(source, replica, table, replica_table)

    expected = {s.column: s for s in EVERY_KIND}
    assert source.get_column_statistics(table) == expected
    assert replica.get_column_statistics(replica_table) == expected
    assert replica.get_partition_column_statistics(replica_table, DAYS) == {
        values: {s.column: s for s in stats} for values, stats in _partition_statistics().items()
    }


def test_a_hive_2_3_metastore_keeps_no_sketch(replica_catalog, unique, tmp_path):
    # Its object store has no column for bitVectors (they came with Hive 3): the counts are
    # kept, the sketch is not, so there is none to carry between 2.3 metastores.
    sketched = [replace(s, sketch="FM:0011") for s in EVERY_KIND]
    table = _with_stats(replica_catalog, f"stats_{unique}", tmp_path.as_uri())

    replica_catalog.set_column_statistics(table, sketched)

    read = replica_catalog.get_column_statistics(table)
    assert read == {s.column: s for s in EVERY_KIND}
    assert {s.sketch for s in read.values()} == {None}


def test_a_metastore_marks_the_columns_it_holds_statistics_of(replica_catalog, unique, tmp_path):
    table = _with_stats(replica_catalog, f"stats_{unique}", tmp_path.as_uri())

    replica_catalog.set_column_statistics(table, EVERY_KIND[:2])
    replica_catalog.set_partition_column_statistics(table, {DAYS[0]: EVERY_KIND[:1]})

    stored = replica_catalog.get_table(table.database, table.name)
    assert '"active":"true"' in stored.parameters["COLUMN_STATS_ACCURATE"]
    [partition] = replica_catalog.list_partitions(stored, limit=1)
    assert '"active":"true"' in partition.parameters["COLUMN_STATS_ACCURATE"]


def test_statistics_of_a_column_the_table_lacks_are_refused_by_name(
    replica_catalog, glue_catalog, unique, tmp_path
):
    stranger = replace(EVERY_KIND[1], column="gone")
    for catalog in (replica_catalog, glue_catalog):
        table = _with_stats(catalog, f"stats_{unique}", tmp_path.as_uri())
        catalog.set_column_statistics(table, EVERY_KIND[:1])

        with pytest.raises(CatalogError) as refused:
            catalog.set_column_statistics(table, [stranger])

        assert "gone" in str(refused.value) and table.qualified_name in str(refused.value)
        assert list(catalog.get_column_statistics(table)) == ["active"]


def test_deleted_statistics_are_gone_and_deleting_none_is_fine(replica_catalog, unique, tmp_path):
    table = _with_stats(replica_catalog, f"stats_{unique}", tmp_path.as_uri())
    replica_catalog.set_column_statistics(table, EVERY_KIND[:2])
    replica_catalog.set_partition_column_statistics(table, {DAYS[1]: EVERY_KIND[:2]})

    replica_catalog.delete_column_statistics(table, ["active", "active"])
    replica_catalog.delete_column_statistics(table, ["id"], DAYS[1])

    assert list(replica_catalog.get_column_statistics(table)) == ["id"]
    assert replica_catalog.get_partition_column_statistics(table, [DAYS[1]]) == {
        DAYS[1]: {"active": EVERY_KIND[0]}
    }


def _keyed(catalog: HiveMetastoreCatalog, database: str, location: str) -> tuple[Table, Table]:
    """Tables ``customers`` and ``orders`` (not yet created)."""
    customers = replace(
        _table(
            database, "customers", [Column("id", "bigint"), Column("region", "string")], location
        ),
        partition_keys=(),
    )
    orders = replace(
        _table(
            database, "orders",
            [Column("order_id", "bigint"), Column("line", "int"), Column("customer_id", "bigint"),
             Column("region", "string")],
            location,
        ),
        partition_keys=(),
    )  # fmt: skip
    return customers, orders


def test_primary_and_foreign_keys_are_replicated_between_metastores(
    source_catalog, replica_catalog, glue_catalog, unique, tmp_path
):
    database = f"keys_{unique}"
    customers, orders = _keyed(source_catalog, database, tmp_path.as_uri())
    source_catalog.create_database(Database(database))
    source_catalog.create_table(customers)
    source_catalog.create_table(orders)
    customer_key = Constraints(PrimaryKey("customers_pk", ("id", "region"), rely=True))
    order_keys = Constraints(
        PrimaryKey("orders_pk", ("order_id", "line")),
        (ForeignKey("orders_customer_fk", ("customer_id", "region"), database, "customers",
                    ("id", "region"), rely=True),),
    )  # fmt: skip
    source_catalog.add_constraints(customers, customer_key)
    source_catalog.add_constraints(orders, order_keys)
    replica_customers, replica_orders = _keyed(replica_catalog, database, tmp_path.as_uri())
    replica_catalog.create_database(Database(database))
    replica_catalog.create_table(replica_orders)

    # A foreign key needs its parent table at the replica first: refused, by name, and
    # nothing is added.
    with pytest.raises(CatalogError) as refused:
        replica_catalog.add_constraints(replica_orders, source_catalog.get_constraints(orders))
    assert str(refused.value) == (
        f"metastore 'dr' cannot add foreign key orders_customer_fk of {database}.orders: "
        f"its parent table {database}.customers does not exist there"
    )
    assert replica_catalog.get_constraints(replica_orders) == Constraints()
    replica_catalog.create_table(replica_customers)
    for source_table, replica_table in ((customers, replica_customers), (orders, replica_orders)):
        replica_catalog.add_constraints(replica_table, source_catalog.get_constraints(source_table))

    assert replica_catalog.get_constraints(replica_customers) == customer_key
    assert replica_catalog.get_constraints(replica_orders) == order_keys
    replica_catalog.drop_constraints(replica_orders, order_keys.names)
    replica_catalog.drop_constraints(replica_orders, order_keys.names)  # gone already: fine
    assert replica_catalog.get_constraints(replica_orders) == Constraints()
    with pytest.raises(NotSupportedByCatalogError):
        glue_catalog.add_constraints(orders, order_keys)
