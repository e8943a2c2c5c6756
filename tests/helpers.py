"""Helpers the tests share: config documents, and the observable state of a replica."""

from __future__ import annotations

from typing import Any

from ferry import fs
from ferry.catalog import Catalog
from ferry.fs import read_bytes  # noqa: F401 - the tests' reader of target bytes

# Parameters the metastore rewrites by itself; comparisons ignore them.
VOLATILE = {"transient_lastDdlTime", "numFiles", "totalSize", "COLUMN_STATS_ACCURATE"}


def config_document(
    runtime, replications: list[dict[str, Any]], replica: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "source-catalog": {"name": "onprem", "hive-metastore-uris": runtime.source_uri},
        "replica-catalog": replica or {"name": "dr", "hive-metastore-uris": runtime.replica_uri},
        **extra,
        "table-replications": replications,
    }


def catalog_state(catalog: Catalog, database: str, tables: list[str]) -> dict[str, Any]:
    """Every table's and partition's location and parameters, for before/after comparisons."""
    state: dict[str, Any] = {"database": catalog.get_database(database) is not None}
    for name in tables:
        table = catalog.get_table(database, name)
        if table is None:
            state[name] = None
            continue
        state[name] = {
            "location": table.location,
            "type": table.table_type,
            "parameters": _stable(table.parameters),
            "columns": table.storage.columns,
            "partitions": {
                p.values: (p.location, _stable(p.parameters))
                for p in catalog.list_partitions(table)
            },
        }
    return state


def files_below(location: str) -> dict[str, int]:
    return {entry.uri: entry.size for entry in fs.list_files(location)}


def _stable(parameters) -> dict[str, str]:
    return {k: v for k, v in parameters.items() if k not in VOLATILE}
