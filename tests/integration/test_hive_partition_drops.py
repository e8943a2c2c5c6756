"""A Hive metastore's partitions dropped in batches (``HiveMetastoreCatalog.drop_partitions``):
one ``drop_partitions_req`` per page of names instead of one call per partition, on a real
metastore — names with characters Hive escapes included, partitions already gone skipped,
their folders left in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType
from ferry.storage import fs

pytestmark = pytest.mark.integration

VALUES = [("2026-11-20", "a"), ("2026-11-20", "b/c:d"), ("2026-11-21", "e=f g%"),
          ("2026-11-21", "h"), ("2026-11-22", "i"), ("2026-11-22", "j"),
          ("2026-11-23", "k"), ("2026-11-23", "l"), ("2026-11-24", "m")]  # fmt: skip


class CountingCalls(HiveMetastoreCatalog):
    """A Hive catalog that counts its Thrift calls."""

    calls = 0

    def call(self, operation):
        CountingCalls.calls += 1
        return super().call(operation)


def test_partitions_are_dropped_a_page_of_names_a_call(local_runtime, unique, tmp_path: Path):
    root = tmp_path / "t"
    storage = StorageDescriptor(fs.local_uri(root), (Column("v", "string"),))
    table = Table(
        f"drops_{unique}", "t", TableType.EXTERNAL, storage,
        partition_keys=(Column("dt", "string"), Column("tag", "string")),
    )  # fmt: skip
    with CountingCalls("onprem", [local_runtime.source_uri], page_size=4) as catalog:
        catalog.create_database(Database(table.database))
        catalog.create_table(table)
        partitions = [
            Partition(v, storage.with_location(fs.local_uri(root / f"p{i}")))
            for i, v in enumerate(VALUES)
        ]
        catalog.add_partitions(table, partitions)
        catalog.drop_partitions(table, [VALUES[0]])  # gone before the batch below
        dropped = VALUES[:7] + [VALUES[2]]  # one already gone, one named twice
        CountingCalls.calls = 0

        catalog.drop_partitions(table, dropped)

        # 7 distinct partitions, 4 names a call; before: one call per partition.
        assert CountingCalls.calls == 2
        assert catalog.list_partition_values(table) == set(VALUES[7:])
        assert (root / "p1").is_dir()  # an EXTERNAL table's data stays
        catalog.drop_table(table.database, table.name)
        catalog.drop_database(table.database)
