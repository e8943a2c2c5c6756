"""The Iceberg path mover and the recognition of Iceberg tables in either catalog."""

from __future__ import annotations

import pytest

from ferry.core.errors import IcebergMetadataError
from ferry.core.model import StorageDescriptor, Table, TableType
from ferry.iceberg.paths import PathMover, canonical
from ferry.iceberg.recognise import is_iceberg, metadata_location


def test_a_path_below_the_source_moves_below_the_replica():
    mover = PathMover("s3://src/warehouse/db/t", "s3://dr/replica/t")
    assert (
        mover.move("s3://src/warehouse/db/t/data/a=1/f.parquet")
        == "s3://dr/replica/t/data/a=1/f.parquet"
    )
    assert mover.move("s3://src/warehouse/db/t") == "s3://dr/replica/t"
    assert mover.replica_metadata_path("x.avro") == "s3://dr/replica/t/metadata/x.avro"


def test_spellings_of_one_location_move_alike():
    mover = PathMover("s3a://src/db/t/", "s3://dr/t/")
    assert mover.move("s3://src/db/t/data/f.parquet") == "s3://dr/t/data/f.parquet"
    assert mover.move("s3n://src/db/t/data/f.parquet") == "s3://dr/t/data/f.parquet"
    local = PathMover("file:/data/src/t", "file:///data/dr/t")
    assert local.move("file:///data/src/t/data/f.parquet") == "file:///data/dr/t/data/f.parquet"
    assert local.move("/data/src/t/metadata/m.avro") == "file:///data/dr/t/metadata/m.avro"
    assert canonical("file:/x/y") == "file:///x/y"


def test_a_path_outside_the_source_is_refused_not_left_naming_the_source():
    mover = PathMover("s3://src/db/t", "s3://dr/t")
    with pytest.raises(IcebergMetadataError, match="outside the Iceberg table's location"):
        mover.move("s3://src/db/t2/data/f.parquet")  # a sibling sharing the prefix's text
    with pytest.raises(IcebergMetadataError):
        mover.move("s3://elsewhere/f.parquet")
    assert mover.move_if_under("s3://elsewhere/f") == "s3://elsewhere/f"


def test_file_path_bounds_move_and_truncated_ones_stay():
    mover = PathMover("s3://src/t", "s3://dr/t")
    assert mover.move_bound(b"s3://src/t/data/f.parquet") == b"s3://dr/t/data/f.parquet"
    assert mover.move_bound(b"s3://sr") == b"s3://sr"
    assert mover.move_bound(b"\xff\xfe") == b"\xff\xfe"


def test_folders_the_properties_put_outside_the_location_become_the_replicas_own():
    mover = PathMover.for_table(
        "s3://src/db/t",
        {
            "write.data.path": "s3://lake-data/t/",
            "write.metadata.path": "s3a://lake-meta/t",
            "write.object-storage.path": "s3://src/db/t/data",  # inside: the location's rule
        },
        "s3://dr/t",
    )
    assert mover.move("s3://lake-data/t/a=1/f.parquet") == "s3://dr/t/data/a=1/f.parquet"
    assert mover.move("s3://lake-meta/t/snap-1.avro") == "s3://dr/t/metadata/snap-1.avro"
    assert mover.move("s3://src/db/t/data/f.parquet") == "s3://dr/t/data/f.parquet"
    assert mover.roots == (
        ("s3://src/db/t", "s3://dr/t"),
        ("s3://lake-data/t", "s3://dr/t/data"),
        ("s3a://lake-meta/t", "s3://dr/t/metadata"),
    )
    with pytest.raises(IcebergMetadataError, match="s3://src/db/t or s3://lake-data/t"):
        mover.move("s3://lake-data/other/f.parquet")


def test_one_folder_named_for_data_and_for_metadata_is_refused():
    with pytest.raises(IcebergMetadataError, match="write.metadata.path"):
        PathMover.for_table(
            "s3://src/db/t",
            {"write.data.path": "s3://x/t", "write.metadata.path": "s3://x/t/"},
            "s3://dr/t",
        )


def test_empty_prefixes_are_refused():
    with pytest.raises(IcebergMetadataError):
        PathMover("", "s3://dr/t")


def table(parameters: dict[str, str]) -> Table:
    return Table(
        database="db",
        name="t",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(location="s3://src/db/t"),
        parameters=parameters,
    )


@pytest.mark.parametrize("table_type", ["ICEBERG", "iceberg", " Iceberg "])
def test_an_iceberg_table_is_recognised_by_its_table_type_in_any_case(table_type):
    t = table(
        {"table_type": table_type, "metadata_location": "s3://src/db/t/metadata/1.metadata.json"}
    )
    assert is_iceberg(t)
    assert metadata_location(t) == "s3://src/db/t/metadata/1.metadata.json"


def test_other_tables_are_not_iceberg_tables():
    assert not is_iceberg(table({}))
    assert not is_iceberg(table({"table_type": "HIVE"}))
    assert metadata_location(table({"metadata_location": "s3://x/1.metadata.json"})) is None
    assert metadata_location(table({"table_type": "ICEBERG"})) is None
