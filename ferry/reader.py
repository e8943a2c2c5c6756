"""Read a table's rows the way an engine would: through its catalog's locations.

Used by the demo and the tests to show that readers of the replica see the source's rows.
Reads Parquet files; like Hive, it skips files whose names start with ``_`` or ``.``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from ferry import fs
from ferry.catalog import Catalog
from ferry.model import Table


def read_rows(catalog: Catalog, table: Table) -> pa.Table:
    """Every row of ``table`` (partition columns appended as strings), sorted by all columns."""
    if table.is_partitioned:
        pieces = []
        for partition in catalog.list_partitions(table):
            data = _read_location(partition.location)
            for key, value in zip(table.partition_keys, partition.values, strict=True):
                data = data.append_column(key.name, pa.array([value] * data.num_rows, pa.string()))
            pieces.append(data)
        rows = pa.concat_tables(pieces, promote_options="default") if pieces else pa.table({})
    else:
        rows = _read_location(table.location)
    if rows.num_columns == 0:
        return rows
    return rows.sort_by([(name, "ascending") for name in rows.column_names])


def _read_location(location: str | None) -> pa.Table:
    if not location:
        return pa.table({})
    files = [
        entry.uri
        for entry in fs.list_files(location)
        if not entry.uri.rsplit("/", 1)[-1].startswith(("_", "."))
    ]
    tables = []
    for uri in files:
        filesystem, path = fs.resolve(uri)
        with filesystem.open_input_file(path) as handle:
            tables.append(pq.read_table(handle))
    return pa.concat_tables(tables) if tables else pa.table({})
