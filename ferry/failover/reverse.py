"""The reverse replication config: the promoted replicas → their original source tables.

Written from the config file as the operator wrote it (its ``${NAME}`` placeholders kept):
the catalogs swapped, the copier options kept, and per table one FULL replication whose
``partition-filter`` selects only the partitions DR changed and whose ``table-location`` is
the original source table's own location (a new snapshot folder below it). Triggers,
notifications and housekeeping are left out: the reverse runs once, from ``ferry failback``.

A replica side in another account (``replica-catalog.assume-role``) becomes the reverse's
source side, reached through the same role: its ``buckets`` name the buckets of the replica
locations, which a source side's role reaches only when they are listed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ferry.core.errors import FailoverError, FerryError
from ferry.core.model import Column
from ferry.storage import fs

#: Partition key types a metastore filter compares as numbers (unquoted).
_NUMERIC = ("tinyint", "smallint", "int", "integer", "bigint")


@dataclass(frozen=True)
class ReverseTable:
    """One table the reverse config brings home."""

    replica_database: str  # the promoted replica: the reverse's source
    replica_table: str
    source_database: str  # the original source: the reverse's replica
    source_table: str
    source_location: str
    partition_keys: tuple[Column, ...]
    #: The partitions to bring home (their values); empty for an unpartitioned table.
    partitions: tuple[tuple[str, ...], ...]


def partition_filter(keys: Sequence[Column], partitions: Sequence[tuple[str, ...]]) -> str:
    """A metastore filter selecting exactly ``partitions``."""

    def literal(column: Column, value: str) -> str:
        if column.type.lower() in _NUMERIC:
            return value
        if "'" in value or '"' in value:
            raise FailoverError(
                f"partition value {value!r} of {column.name} has a quote, which a metastore "
                "filter cannot select; bring this partition home by hand"
            )
        return f"'{value}'"

    terms = [
        "("
        + " and ".join(f"{k.name}={literal(k, v)}" for k, v in zip(keys, values, strict=True))
        + ")"
        for values in partitions
    ]
    return " or ".join(terms)


def reverse_document(
    config_path: Path | str, tables: Sequence[ReverseTable], role_buckets: Sequence[str] = ()
) -> dict[str, Any]:
    """The reverse config's document (see the module), from the config file (a path, or the
    URI of a deployed config's object); ``role_buckets``: the buckets of the replica
    locations, which the reverse's source side reaches through the replica side's
    ``assume-role``, when it has one."""
    try:
        text = (
            config_path.read_text()
            if isinstance(config_path, Path)
            else fs.read_bytes(config_path).decode()
        )
        original: Mapping[str, Any] = yaml.safe_load(text) or {}
    except (OSError, FerryError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise FailoverError(f"{config_path}: cannot be read again: {error}") from None
    if "source-catalog" not in original or "replica-catalog" not in original:
        raise FailoverError(
            f"{config_path}: failback writes its reverse from a config with source-catalog and "
            "replica-catalog sections"
        )
    document: dict[str, Any] = {
        "source-catalog": _source_side(original["replica-catalog"], role_buckets),
        "replica-catalog": original["source-catalog"],
    }
    if original.get("copier-options"):
        document["copier-options"] = original["copier-options"]
    replications = []
    for table in tables:
        source: dict[str, Any] = {
            "database-name": table.replica_database,
            "table-name": table.replica_table,
        }
        if table.partitions:
            source["partition-filter"] = partition_filter(table.partition_keys, table.partitions)
        replications.append(
            {
                "source-table": source,
                "replica-table": {
                    "database-name": table.source_database,
                    "table-name": table.source_table,
                    "table-location": table.source_location,
                },
                "replication-mode": "FULL",
            }
        )
    document["table-replications"] = replications
    return document


def _source_side(section: Any, role_buckets: Sequence[str]) -> Any:
    """The original replica-catalog section as the reverse's source side: its
    ``assume-role`` lists the buckets of the replica locations too."""
    if not isinstance(section, Mapping) or not isinstance(section.get("assume-role"), Mapping):
        return section
    role = dict(section["assume-role"])
    listed = role.get("buckets") or []
    listed = [listed] if isinstance(listed, str) else list(listed)
    role["buckets"] = sorted({*listed, *role_buckets})
    if not role["buckets"]:
        del role["buckets"]
    return {**section, "assume-role": role}
