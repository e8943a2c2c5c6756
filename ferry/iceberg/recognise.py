"""Which catalog tables are Iceberg tables.

Hive metastores and the Glue Data Catalog both mark an Iceberg table with the table
parameter ``table_type=ICEBERG`` (any case: Spark writes ``ICEBERG``, some engines
``iceberg``) and name its current metadata file with ``metadata_location``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ferry.core.model import Table
from ferry.storage.fs import normalise

TABLE_TYPE = "table_type"
ICEBERG = "ICEBERG"
METADATA_LOCATION = "metadata_location"
PREVIOUS_METADATA_LOCATION = "previous_metadata_location"
#: On an Iceberg replica: the ``metadata_location`` Ferry's last Commit wrote. Another
#: writer's commit (an engine appending to the replica, a replica promoted after a
#: failover) moves ``metadata_location`` and leaves this parameter behind.
COMMITTED_METADATA_LOCATION = "ferry.iceberg.metadata.location"
#: On an Iceberg replica: the source's ``metadata_location`` its metadata replicates, and a
#: digest of what its entry was registered from and as (``ferry.planning.iceberg_noop``).
#: Bookkeeping: never a difference between two entries.
SOURCE_METADATA_LOCATION = "ferry.iceberg.source.metadata.location"
REGISTRATION = "ferry.iceberg.registration"


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


def moved_since_commit(parameters: Mapping[str, str]) -> str | None:
    """An Iceberg replica's ``metadata_location`` (from its catalog ``parameters``) when it is
    not the one Ferry's last Commit wrote (another writer committed to it), else None. A
    replica committed before Ferry recorded ``COMMITTED_METADATA_LOCATION`` has nothing to
    compare with: None."""
    committed = parameters.get(COMMITTED_METADATA_LOCATION)
    if committed is None or parameters.get(TABLE_TYPE, "").strip().upper() != ICEBERG:
        return None
    current = parameters.get(METADATA_LOCATION) or ""
    # Spellings of one file compare equal (s3a:// and s3://, file:/ and file:///).
    return None if normalise(current) == normalise(committed) else current or "none"
