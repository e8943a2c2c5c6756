"""Which catalog tables are Iceberg tables.

Hive metastores and the Glue Data Catalog both mark an Iceberg table with the table
parameter ``table_type=ICEBERG`` (any case: Spark writes ``ICEBERG``, some engines
``iceberg``) and name its current metadata file with ``metadata_location``.
"""

from __future__ import annotations

from ferry.model import Table

TABLE_TYPE = "table_type"
ICEBERG = "ICEBERG"
METADATA_LOCATION = "metadata_location"
PREVIOUS_METADATA_LOCATION = "previous_metadata_location"


def is_iceberg(table: Table) -> bool:
    """Whether the catalog table is an Iceberg table (its ``table_type`` parameter)."""
    return table.parameters.get(TABLE_TYPE, "").strip().upper() == ICEBERG


def metadata_location(table: Table) -> str | None:
    """The Iceberg table's current ``*.metadata.json``, or None for any other table.

    An Iceberg table whose catalog entry names no metadata file (a half-created table) has
    none either: there is nothing to replicate yet.
    """
    if not is_iceberg(table):
        return None
    return table.parameters.get(METADATA_LOCATION) or None
