"""An Iceberg table in the real local Hive metastore (2.3.10), replicated to the replica
metastore, and read back with pyiceberg's ``HiveCatalog``.

The source's history is committed through pyiceberg's ``HiveCatalog`` on the source
metastore (each commit under the metastore's table lock, as an engine commits).
"""

from __future__ import annotations

import pytest
from pyiceberg.catalog.hive import HiveCatalog

from ferry.iceberg.recognise import is_iceberg, metadata_location
from ferry.iceberg.table_replication import replicate_iceberg_table
from tests.iceberg_tables import create_history_table, read_rows

pytestmark = pytest.mark.integration


def test_an_iceberg_table_in_hive_is_recognised_replicated_and_read_from_the_replica_metastore(
    local_runtime, source_catalog, replica_catalog, tmp_path, unique
):
    source_hive = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    replica_hive = HiveCatalog(
        "replica", uri=local_runtime.replica_uri, warehouse=tmp_path.as_uri()
    )
    database = f"iceberg_{unique}"
    source_hive.create_namespace(database)
    replica_hive.create_namespace(database)
    milestones = create_history_table(source_hive, f"{database}.history")

    found = source_catalog.get_table(database, "history")  # Ferry's own Hive adapter
    assert is_iceberg(found)
    table = source_hive.load_table(f"{database}.history")
    prefix = (tmp_path / "replica" / "history").as_uri()

    result = replicate_iceberg_table(table.io, metadata_location(found), prefix, table.io)

    replica_hive.register_table(f"{database}.history", result.metadata_location)
    replica = replica_hive.load_table(f"{database}.history")
    assert read_rows(replica) == read_rows(table)
    earlier = milestones["position delete"]
    assert read_rows(replica, earlier) == read_rows(table, earlier)
    registered = replica_catalog.get_table(database, "history")
    assert is_iceberg(registered) and metadata_location(registered) == result.metadata_location
