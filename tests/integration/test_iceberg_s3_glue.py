"""An Iceberg replica on S3 (the AWS emulator), registered in Glue and read with pyiceberg.

The source is a local pyiceberg table; its replica is written through pyiceberg's
``PyArrowFileIO`` to an emulated bucket and registered in the emulated Glue Data Catalog
with pyiceberg's ``GlueCatalog``, where Ferry's own Glue adapter recognises it.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog.glue import GlueCatalog as PyIcebergGlueCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io.pyarrow import PyArrowFileIO

from ferry.iceberg.recognise import is_iceberg, metadata_location
from ferry.iceberg.table_replication import replicate_iceberg_table
from tests.iceberg_tables import create_history_table, read_rows, rows

pytestmark = pytest.mark.integration


def test_a_replica_on_s3_registered_in_glue_reads_like_the_source(
    tmp_path, aws, bucket, glue_catalog, s3_properties, unique
):
    source_catalog = SqlCatalog(
        "source", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=tmp_path.as_uri()
    )
    source_catalog.create_namespace("db")
    milestones = create_history_table(source_catalog, "db.history")
    table = source_catalog.load_table("db.history")
    replica_io = PyArrowFileIO(s3_properties)
    prefix = f"s3://{bucket}/replica/history"

    result = replicate_iceberg_table(table.io, table.metadata_location, prefix, replica_io)

    glue = PyIcebergGlueCatalog(
        "glue",
        **{
            **s3_properties,
            "glue.endpoint": s3_properties["s3.endpoint"],
            "glue.region": "us-east-1",
        },
    )
    database = f"iceberg_{unique}"
    glue.create_namespace(database)
    replica = glue.register_table(f"{database}.history", result.metadata_location)
    assert read_rows(replica) == read_rows(table)
    assert read_rows(replica, milestones["position delete"]) == read_rows(
        table, milestones["position delete"]
    )

    found = glue_catalog.get_table(database, "history")
    assert is_iceberg(found) and metadata_location(found) == result.metadata_location

    keys = [
        o["Key"] for o in aws["s3"].list_objects_v2(Bucket=bucket, Prefix="replica/")["Contents"]
    ]
    source_path = table.location().removeprefix("file://").encode()
    checked = 0
    for key in keys:
        if key.endswith((".json", ".avro")):
            body = aws["s3"].get_object(Bucket=bucket, Key=key)["Body"].read()
            assert source_path not in body, key
            checked += 1
    assert checked == len(result.metadata_files)

    table.append(rows([12], ["eu"]).append_column("amount", pa.array([3.0])))
    table = source_catalog.load_table("db.history")
    again = replicate_iceberg_table(
        table.io, table.metadata_location, prefix, replica_io, result.metadata_location
    )
    assert len(again.copied) == 1 and again.new_snapshot_ids == (
        table.current_snapshot().snapshot_id,
    )
    replica = glue.register_table(f"{database}.history_next", again.metadata_location)
    assert read_rows(replica) == read_rows(table)
