"""Read a table's rows the way an engine would: through its catalog's locations.

Used by the demo and the tests to show that readers of the replica see the source's rows.
Reads Parquet files; like Hive, it skips files whose names start with ``_`` or ``.``. An
Iceberg table is read as an Iceberg client reads it: pyiceberg's scan of the metadata its
catalog entry names (deletes applied, only the current snapshot's files).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from ferry.catalog import Catalog
from ferry.core.model import Table
from ferry.iceberg.recognise import is_iceberg, metadata_location
from ferry.storage import fs


def read_rows(catalog: Catalog, table: Table) -> pa.Table:
    """Every row of ``table`` (partition columns appended as strings), sorted by all columns."""
    if is_iceberg(table):
        rows = _read_iceberg(table)
    elif table.is_partitioned:
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


def _read_iceberg(table: Table) -> pa.Table:
    """The current snapshot's rows, read through Ferry's file systems (its S3 endpoint)."""
    from pyiceberg.catalog.noop import NoopCatalog
    from pyiceberg.table import StaticTable

    from ferry.iceberg.fileio import FerryFileIO
    from ferry.iceberg.reading import read_table_metadata

    location = metadata_location(table)
    if location is None:
        return pa.table({})
    io = FerryFileIO()
    iceberg = StaticTable(
        identifier=(table.database, table.name),
        metadata=read_table_metadata(io, location),
        metadata_location=location,
        io=io,
        catalog=NoopCatalog("ferry"),
    )
    return iceberg.scan().to_arrow()


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
