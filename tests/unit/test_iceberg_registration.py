"""An Iceberg replica's catalog entry as the replica's kind of catalog registers Iceberg
tables (``ferry.iceberg.registration``): the choices the end-to-end tests do not reach."""

from __future__ import annotations

from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import LongType, NestedField, StringType

from ferry.core.model import CatalogKind, Column, StorageDescriptor, Table, TableType
from ferry.iceberg.registration import (
    FILE_INPUT_FORMAT,
    HIVE_ICEBERG_INPUT_FORMAT,
    HIVE_ICEBERG_OUTPUT_FORMAT,
    HIVE_ICEBERG_SERDE,
    HIVE_ICEBERG_STORAGE_HANDLER,
    register_iceberg_replica,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True, doc="the key"),
    NestedField(2, "region", StringType(), required=False),
)
SOURCE = "s3://lake/warehouse/history"
REPLICA = "s3://dr/history"


def metadata(location: str = REPLICA, **properties: str):
    return new_table_metadata(
        SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, location, properties
    )


def source_entry(parameters: dict[str, str], **storage) -> Table:
    return Table(
        database="lake",
        name="history",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(location=SOURCE, **storage),
        parameters=parameters,
        owner="etl",
    )


def register(kind, source, replica_metadata, parameters, previous=None, **keywords) -> Table:
    return register_iceberg_replica(
        kind,
        "lake_dr",
        "history",
        replica_metadata,
        f"{REPLICA}/metadata/0000{1 if previous else 0}-a.metadata.json",
        previous,
        parameters,
        source_table=source,
        **{
            "source_kind": CatalogKind.HIVE_METASTORE,
            "source_properties": {},
            "replica_before": None,
            **keywords,
        },
    )


def test_a_hive_source_with_the_iceberg_storage_handler_gives_a_hive_replica_hives_iceberg_formats():
    source = source_entry(
        {"storage_handler": HIVE_ICEBERG_STORAGE_HANDLER, "EXTERNAL": "TRUE"},
        input_format=HIVE_ICEBERG_INPUT_FORMAT,
    )

    replica = register(CatalogKind.HIVE_METASTORE, source, metadata(), source.parameters)

    assert replica.storage.input_format == HIVE_ICEBERG_INPUT_FORMAT
    assert replica.storage.output_format == HIVE_ICEBERG_OUTPUT_FORMAT
    assert replica.storage.serde_library == HIVE_ICEBERG_SERDE
    assert replica.parameters["storage_handler"] == HIVE_ICEBERG_STORAGE_HANDLER
    assert replica.storage.columns == (
        Column("id", "bigint", "the key"),
        Column("region", "string"),
    )
    assert replica.owner == "etl" and replica.storage.location == REPLICA


def test_the_metadatas_engine_setting_decides_over_the_source_entry():
    source = source_entry({"storage_handler": HIVE_ICEBERG_STORAGE_HANDLER})

    replica = register(
        CatalogKind.HIVE_METASTORE,
        source,
        metadata(**{"engine.hive.enabled": "false"}),
        source.parameters,
    )

    assert replica.storage.input_format == FILE_INPUT_FORMAT
    assert "storage_handler" not in replica.parameters


def test_hive_to_glue_leaves_what_only_hive_understands_and_the_sources_iceberg_properties():
    source_properties = {"write.data.path": f"{SOURCE}/data", "write.format.default": "parquet"}
    source = source_entry(
        {
            "EXTERNAL": "TRUE",
            "numFiles": "7",
            "transient_lastDdlTime": "1",
            "storage_handler": HIVE_ICEBERG_STORAGE_HANDLER,
            "previous_metadata_location": f"{SOURCE}/metadata/00001-b.metadata.json",
            "comment": "history",
            "team": "lake",
            **source_properties,
        }
    )
    replica_metadata = metadata(**{"write.data.path": f"{REPLICA}/data"})

    replica = register(
        CatalogKind.GLUE,
        source,
        replica_metadata,
        source.parameters,
        source_properties=source_properties,
    )

    assert replica.parameters == {
        "table_type": "ICEBERG",
        "metadata_location": f"{REPLICA}/metadata/00000-a.metadata.json",
        "write.data.path": f"{REPLICA}/data",
        "comment": "history",
        "team": "lake",
    }
    assert replica.description == "history"
    assert [c.parameters for c in replica.storage.columns] == [
        {
            "iceberg.field.id": "1",
            "iceberg.field.optional": "false",
            "iceberg.field.current": "true",
        },
        {
            "iceberg.field.id": "2",
            "iceberg.field.optional": "true",
            "iceberg.field.current": "true",
        },
    ]
    assert replica.storage.input_format is None and replica.storage.serde_library is None


def test_an_existing_replica_keeps_its_own_parameters_and_loses_properties_its_metadata_lost():
    source = Table(
        database="lake",
        name="history",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(location=SOURCE),
        parameters={"team": "lake"},
        description="history",
    )
    before = Table(
        database="lake_dr",
        name="history",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(location=REPLICA),
        parameters={
            "EXTERNAL": "TRUE",
            "table_type": "ICEBERG",
            "metadata_location": f"{REPLICA}/metadata/00000-a.metadata.json",
            "dr.contact": "oncall",
            "write.target-file-size-bytes": "1024",
        },
    )

    replica = register(
        CatalogKind.HIVE_METASTORE,
        source,
        metadata(),
        {"team": "lake"},
        f"{REPLICA}/metadata/00000-a.metadata.json",
        source_kind=CatalogKind.GLUE,
        replica_before=before,
        previous_properties={"write.target-file-size-bytes": "1024"},
    )

    assert replica.parameters == {
        "EXTERNAL": "TRUE",
        "table_type": "ICEBERG",
        "metadata_location": f"{REPLICA}/metadata/00001-a.metadata.json",
        "previous_metadata_location": f"{REPLICA}/metadata/00000-a.metadata.json",
        "dr.contact": "oncall",
        "team": "lake",
        "comment": "history",
    }
