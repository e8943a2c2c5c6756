"""Avro schema files: where the replica's copy goes, the copy, and the replica pointing at it."""

import pytest

from ferry.core.errors import CopyError, SourceMetadataError
from ferry.core.model import Partition, StorageDescriptor, Table, TableType
from ferry.storage import fs
from ferry.storage.avro import (
    AVRO_SCHEMA_URL,
    SchemaCopy,
    copy_schema,
    point_at_replica_schema,
    replica_schema_url,
)

EVENT = "ferry-20261121t083000000z-1a2b3c4d"


@pytest.mark.parametrize(
    ("base_url", "table_location", "expected"),
    [
        (
            "s3://schemas/orders",
            "s3://dr/orders",
            f"s3://schemas/orders/{EVENT}/orders.avsc",
        ),
        (None, "s3://dr/orders", f"s3://dr/orders/{EVENT}/.schema/orders.avsc"),
        ("s3://dr/orders/", "s3://dr/orders", f"s3://dr/orders/{EVENT}/.schema/orders.avsc"),
        ("s3a://dr/orders", "s3://dr/orders", f"s3a://dr/orders/{EVENT}/.schema/orders.avsc"),
        ("file:///schemas", None, f"file:///schemas/{EVENT}/orders.avsc"),
    ],
    ids=["base-url", "table-location", "base-url-is-location", "s3a-is-s3", "no-location"],
)
def test_the_replica_schema_goes_below_base_url_per_event(base_url, table_location, expected):
    source = "hdfs://nn:8020/schemas/orders.avsc"
    assert replica_schema_url(source, base_url, EVENT, table_location) == expected


def test_a_schema_url_without_a_file_or_a_place_is_refused():
    with pytest.raises(SourceMetadataError, match="names no schema file"):
        replica_schema_url("s3://schemas/", "s3://dr", EVENT)
    with pytest.raises(ValueError, match="needs avro-serde-options.base-url or a location"):
        replica_schema_url("s3://schemas/orders.avsc", None, EVENT)


def test_copy_schema_copies_once_and_again_only_when_different(tmp_path):
    source = fs.local_uri(tmp_path / "schemas" / "orders.avsc")
    fs.write_bytes(source, b'{"type": "record", "name": "orders", "fields": []}')
    target = replica_schema_url(source, None, EVENT, fs.local_uri(tmp_path / "dr"))
    assert copy_schema(source, target) is True
    assert fs.read_bytes(target) == fs.read_bytes(source)
    assert copy_schema(source, target) is False  # a retry of the event finds its copy
    fs.write_bytes(target, b"stale")
    assert copy_schema(source, target) is True
    assert fs.read_bytes(target) == fs.read_bytes(source)


def test_a_missing_schema_is_a_copy_error(tmp_path):
    with pytest.raises(CopyError, match="cannot read Avro schema .*absent.avsc"):
        copy_schema(fs.local_uri(tmp_path / "absent.avsc"), fs.local_uri(tmp_path / "x.avsc"))


def avro_table(parameters=None, serde_parameters=None) -> Table:
    return Table(
        "sales_dr",
        "orders",
        TableType.EXTERNAL,
        StorageDescriptor(
            "s3://dr/orders/e1",
            serde_library="org.apache.hadoop.hive.serde2.avro.AvroSerDe",
            serde_parameters=serde_parameters or {},
        ),
        parameters=parameters or {},
    )


def test_the_replica_points_at_its_own_copy_from_the_table_or_serde_parameter():
    from_serde = avro_table(serde_parameters={AVRO_SCHEMA_URL: "s3://src/orders.avsc", "x": "1"})
    shaped, copy = point_at_replica_schema(from_serde, "s3://schemas", EVENT, "s3://dr/orders")
    assert copy == SchemaCopy("s3://src/orders.avsc", f"s3://schemas/{EVENT}/orders.avsc")
    assert shaped.parameters[AVRO_SCHEMA_URL] == copy.target_url
    assert shaped.storage.serde_parameters == {"x": "1"}  # the table parameter wins in Hive

    from_table = avro_table(parameters={AVRO_SCHEMA_URL: "s3://src/v2.avsc"})
    shaped, copy = point_at_replica_schema(from_table, None, EVENT, "s3://dr/orders")
    assert shaped.parameters[AVRO_SCHEMA_URL] == f"s3://dr/orders/{EVENT}/.schema/v2.avsc"

    partition = Partition(("2026-11-20",), from_table.storage, {AVRO_SCHEMA_URL: "s3://src/p.avsc"})
    shaped_partition, copy = point_at_replica_schema(partition, None, EVENT, "s3://dr/orders")
    assert shaped_partition.parameters[AVRO_SCHEMA_URL].endswith("/.schema/p.avsc")


def test_a_table_without_a_schema_url_is_left_alone():
    table = avro_table(parameters={"owner": "x"})
    assert point_at_replica_schema(table, "s3://schemas", EVENT, "s3://dr/orders") == (table, None)
