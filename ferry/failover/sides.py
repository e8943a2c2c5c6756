"""Each side of a failed-over table as it is now: its partitions and their files' fingerprints
(``ferry.failover.side_changes`` compares them with the baseline)."""

from __future__ import annotations

from ferry.catalog import Catalog
from ferry.core.model import Partition, Table, partition_name
from ferry.failover.side_changes import Side
from ferry.storage import fingerprint


def replica_side(replica: Catalog, table: Table, threads: int = 8) -> Side:
    """The promoted replica: each location listed on its own (writers put partitions
    anywhere)."""
    return _side(replica, table, threads, whole_table=False)


def source_side(source: Catalog, table: Table, threads: int = 8) -> Side:
    """The original source: below its table's location in one walk, as Plan lists it."""
    return _side(source, table, threads, whole_table=True)


def _side(catalog: Catalog, table: Table, threads: int, whole_table: bool) -> Side:
    if not table.is_partitioned:
        locations = [table.location] if table.location else []
        printed = fingerprint.of_locations(locations, threads)
        value = printed.get(table.location or "")
        return Side({"": ((), str(value) if value is not None else None)})
    partitions: list[Partition] = catalog.list_partitions(table)
    printed = fingerprint.of_locations(
        [p.location for p in partitions if p.location],
        threads,
        root=table.location if whole_table else None,
    )
    return Side(
        {
            partition_name(table.partition_keys, p.values): (
                p.values,
                str(printed[p.location]) if p.location in printed else None,
            )
            for p in partitions
        }
    )
