"""The catalog adapters on their own: model round trips, paging and batching."""

from __future__ import annotations

import pytest

from ferry.catalog.glue import GlueCatalog
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.core.errors import CatalogUnreachableError
from ferry.core.model import (
    Column,
    Database,
    Partition,
    SortColumn,
    StorageDescriptor,
    Table,
    TableType,
)
from ferry.local.processes import free_port

pytestmark = pytest.mark.integration


def events_table(database: str, location: str) -> Table:
    return Table(
        database=database,
        name="events",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(
            location=location,
            columns=(Column("id", "bigint", "the id"), Column("payload", "string")),
            input_format="org.apache.hadoop.mapred.TextInputFormat",
            output_format="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            serde_library="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
            serde_parameters={"field.delim": ","},
            number_of_buckets=4,
            bucket_columns=("id",),
            sort_columns=(SortColumn("id", 1),),
        ),
        partition_keys=(Column("region", "string"), Column("hour", "int")),
        parameters={"EXTERNAL": "TRUE", "purpose": "paging"},
        owner="ferry",
    )


def partitions_of(table: Table, regions: list[str], hours: range) -> list[Partition]:
    return [
        Partition(
            (region, str(hour)),
            table.storage.with_location(f"{table.location}/region={region}/hour={hour}"),
        )
        for region in regions
        for hour in hours
    ]


@pytest.fixture(params=["hive", "glue"])
def catalog(request, local_runtime, aws, tmp_path):
    # A small page size makes a handful of partitions span many pages.
    if request.param == "hive":
        with HiveMetastoreCatalog("dr", [local_runtime.replica_uri], page_size=4) as hive:
            yield hive
    else:
        yield GlueCatalog("aws", aws["glue"], page_size=4)


def test_table_and_partitions_round_trip_and_page(catalog, unique, tmp_path):
    database = f"paging_{unique}"
    catalog.create_database(Database(database, "paging test"))
    table = events_table(database, (tmp_path / "events").as_uri())
    catalog.create_table(table)
    # hours 0..12 sort numerically (int key): 2 before 10, unlike text
    partitions = partitions_of(table, ["eu", "us"], range(13))
    catalog.add_partitions(table, partitions)

    stored = catalog.get_table(database, "events")
    assert stored.storage.columns == table.storage.columns
    assert stored.storage.bucket_columns == ("id",) and stored.storage.number_of_buckets == 4
    assert stored.storage.sort_columns == (SortColumn("id", 1),)
    assert stored.storage.serde_parameters == {"field.delim": ","}
    assert stored.partition_keys == table.partition_keys
    assert stored.parameters["purpose"] == "paging"

    listed = catalog.list_partitions(stored)
    assert [p.values for p in listed] == [p.values for p in partitions]
    assert listed[0].location.endswith("region=eu/hour=0")

    filtered = catalog.list_partitions(stored, "region = 'us' and hour >= 3")
    assert [p.values for p in filtered] == [("us", str(h)) for h in range(3, 13)]
    limited = catalog.list_partitions(stored, "hour < 5", limit=7)
    assert [p.values for p in limited] == [("eu", str(h)) for h in range(5)] + [
        ("us", "0"),
        ("us", "1"),
    ]

    moved = [
        Partition(p.values, p.storage.with_location(p.location + "-moved"), {"x": "1"})
        for p in listed
    ]
    catalog.alter_partitions(stored, moved)
    again = catalog.list_partitions(stored)
    assert all(p.location.endswith("-moved") and p.parameters["x"] == "1" for p in again)
    assert catalog.list_partition_values(stored) == {p.values for p in partitions}


def test_glue_writes_more_partitions_than_one_batch(glue_catalog, unique, tmp_path):
    database = f"batch_{unique}"
    glue_catalog.create_database(Database(database))
    table = events_table(database, "s3://bucket/events")
    glue_catalog.create_table(table)
    partitions = partitions_of(table, ["eu", "us", "ap"], range(60))  # 180 > Glue's 100 a call
    glue_catalog.add_partitions(table, partitions)
    assert len(glue_catalog.list_partitions(table)) == 180


def test_unreachable_metastore_is_a_named_error():
    port = free_port()
    with HiveMetastoreCatalog("nowhere", [f"thrift://127.0.0.1:{port}"]) as catalog:
        with pytest.raises(
            CatalogUnreachableError,
            match=f"cannot reach Hive metastore 'nowhere' at thrift://127.0.0.1:{port}",
        ):
            catalog.get_table("db", "t")


def test_second_uri_is_used_when_the_first_is_down(local_runtime):
    uris = [f"thrift://127.0.0.1:{free_port()}", local_runtime.source_uri]
    with HiveMetastoreCatalog("failover", uris) as catalog:
        assert catalog.get_database("default") is not None


def test_a_conditional_write_lets_exactly_one_of_many_writers_through(catalog, unique, tmp_path):
    """The catalog's own concurrency control (Hive's expected parameter, Glue's VersionId):
    writers that all read one value each try to move it; one succeeds, the rest are refused
    and wrote nothing."""
    import threading
    from dataclasses import replace

    from ferry.core.errors import ConcurrentChangeError

    database = f"claims_{unique}"
    catalog.create_database(Database(name=database))
    try:
        read = replace(events_table(database, fs_uri(tmp_path)), parameters={"claim": "e0"})
        catalog.create_table(read)
        outcomes: dict[int, str] = {}
        start = threading.Barrier(6)

        def write(writer: int) -> None:
            mine = replace(read, parameters={"claim": f"e{writer}", "writer": str(writer)})
            start.wait()
            try:
                catalog.alter_table_if(mine, "claim", "e0")
                outcomes[writer] = "written"
            except ConcurrentChangeError as error:
                assert "no longer e0" in str(error)
                outcomes[writer] = "refused"

        threads = [threading.Thread(target=write, args=(n,)) for n in range(1, 7)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        [winner] = [n for n, outcome in outcomes.items() if outcome == "written"]
        assert sorted(outcomes.values()).count("refused") == 5
        parameters = catalog.get_table(database, "events").parameters
        assert (parameters["claim"], parameters["writer"]) == (f"e{winner}", str(winner))
        # The winner's value is now what a writer must expect.
        again = replace(read, parameters={"claim": "e9", "writer": "9"})
        with pytest.raises(ConcurrentChangeError):
            catalog.alter_table_if(again, "claim", "e0")
        catalog.alter_table_if(again, "claim", f"e{winner}")
        assert catalog.get_table(database, "events").parameters["claim"] == "e9"
    finally:
        catalog.drop_table(database, "events")
        catalog.drop_database(database)


def fs_uri(path) -> str:
    from ferry.storage import fs

    return fs.local_uri(path / "events")
