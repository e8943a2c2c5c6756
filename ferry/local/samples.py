"""Sample source tables for the demo and the tests: real Parquet files in real metastores.

``orders`` is partitioned by ``dt``, ``customers`` is not, and ``big_orders`` is a view over
``orders``: the three shapes a replication must handle.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import pyarrow as pa
import pyarrow.parquet as pq

from ferry.catalog import Catalog
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType
from ferry.storage import fs

PARQUET = {
    "input_format": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
    "output_format": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
    "serde_library": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
}
ORDER_COLUMNS = (
    Column("order_id", "bigint"),
    Column("customer_id", "bigint"),
    Column("amount", "double"),
)
CUSTOMER_COLUMNS = (Column("customer_id", "bigint"), Column("name", "string"))


@dataclass(frozen=True)
class SampleTables:
    database: str
    orders: Table
    customers: Table
    view: Table
    days: tuple[str, ...]


def write_parquet(location: str, name: str, rows: pa.Table) -> str:
    """Write ``rows`` as one Parquet file ``name`` below ``location``; its URI."""
    uri = fs.join(location, name)
    with fs.open_output(uri) as out:
        pq.write_table(rows, out)
    return uri


def order_rows(day: str, count: int = 5) -> pa.Table:
    seed = int(day.replace("-", ""))
    return pa.table(
        {
            "order_id": pa.array([seed * 100 + i for i in range(count)], pa.int64()),
            "customer_id": pa.array([i % 3 + 1 for i in range(count)], pa.int64()),
            "amount": pa.array(
                [round(10.5 * (i + 1) + seed % 7, 2) for i in range(count)], pa.float64()
            ),
        }
    )


def customer_rows() -> pa.Table:
    return pa.table(
        {
            "customer_id": pa.array([1, 2, 3], pa.int64()),
            "name": pa.array(["Ada", "Grace", "Linus"], pa.string()),
        }
    )


def last_days(today: date, count: int) -> tuple[str, ...]:
    return tuple(
        (today - timedelta(days=offset)).isoformat() for offset in range(count - 1, -1, -1)
    )


def create_sample_tables(
    catalog: Catalog, database: str, warehouse: str, days: tuple[str, ...]
) -> SampleTables:
    """Create ``database`` with ``orders`` (a partition per day), ``customers`` and a view."""
    db_location = fs.join(warehouse, f"{database}.db")
    if catalog.get_database(database) is None:
        catalog.create_database(Database(database, "Ferry sample data", db_location))
    orders_location = fs.join(db_location, "orders")
    orders = Table(
        database=database,
        name="orders",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(location=orders_location, columns=ORDER_COLUMNS, **PARQUET),
        partition_keys=(Column("dt", "string"),),
        parameters={"EXTERNAL": "TRUE", "comment": "one partition per day"},
        owner="ferry",
    )
    catalog.create_table(orders)
    partitions = []
    for day in days:
        location = fs.join(orders_location, f"dt={day}")
        write_parquet(location, "part-00000.parquet", order_rows(day))
        partitions.append(
            Partition(
                (day,), StorageDescriptor(location=location, columns=ORDER_COLUMNS, **PARQUET)
            )
        )
    catalog.add_partitions(orders, partitions)

    customers_location = fs.join(db_location, "customers")
    write_parquet(customers_location, "part-00000.parquet", customer_rows())
    customers = Table(
        database=database,
        name="customers",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(location=customers_location, columns=CUSTOMER_COLUMNS, **PARQUET),
        parameters={"EXTERNAL": "TRUE"},
        owner="ferry",
    )
    catalog.create_table(customers)

    view = Table(
        database=database,
        name="big_orders",
        table_type=TableType.VIEW,
        storage=StorageDescriptor(location=None, columns=ORDER_COLUMNS + (Column("dt", "string"),)),
        owner="ferry",
        view_original_text="SELECT * FROM orders WHERE amount > 30",
        view_expanded_text=(
            f"SELECT `orders`.`order_id`, `orders`.`customer_id`, `orders`.`amount`, `orders`.`dt` "
            f"FROM `{database}`.`orders` WHERE `orders`.`amount` > 30"
        ),
    )
    catalog.create_table(view)
    return SampleTables(
        database=database,
        orders=catalog.get_table(database, "orders"),  # type: ignore[arg-type]
        customers=catalog.get_table(database, "customers"),  # type: ignore[arg-type]
        view=catalog.get_table(database, "big_orders"),  # type: ignore[arg-type]
        days=days,
    )


def create_iceberg_sample(metastore_uri: str, database: str, location: str) -> None:
    """Create ``database.events``, an Iceberg table written by pyiceberg through the
    metastore at ``metastore_uri``, as an engine commits: a partitioned table with three
    appends, a delete and a column added."""
    from pyiceberg.catalog.hive import HiveCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    catalog = HiveCatalog("samples", uri=metastore_uri)
    schema = Schema(
        NestedField(1, "event_id", LongType(), required=False),
        NestedField(2, "kind", StringType(), required=False),
        NestedField(3, "amount", DoubleType(), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "kind"))
    table = catalog.create_table(
        f"{database}.events", schema=schema, partition_spec=spec, location=location
    )
    kinds = ("click", "view", "order")
    for batch in range(3):
        ids = range(batch * 6, batch * 6 + 6)
        table.append(
            pa.table(
                {
                    "event_id": pa.array(ids, pa.int64()),
                    "kind": [kinds[i % 3] for i in ids],
                    "amount": [float(i) * 1.5 for i in ids],
                }
            )
        )
    table.delete("event_id < 2")
    with table.update_schema() as update:
        update.add_column("channel", StringType())
    table.append(
        pa.table(
            {
                "event_id": pa.array([100, 101], pa.int64()),
                "kind": ["order", "click"],
                "amount": [99.0, 0.5],
                "channel": ["web", "app"],
            }
        )
    )
