"""Avro tables: the replica gets its own copy of the schema file its ``avro.schema.url`` names.

An Avro table may keep its schema outside the metastore, in a file named by the table (or
partition) parameter ``avro.schema.url`` (or the SerDe parameter of that name). A replica
that pointed at the source's file would break when the source's file moves or changes, or
cannot be read from the replica's side, so, as Circus Train does, each replication copies
the file next to the replica's data and points the replica at the copy:

- ``<base-url>/<event-id>/<file>`` where ``base-url`` is
  ``transform-options.avro-serde-options.base-url``;
- ``<table-location>/<event-id>/.schema/<file>`` without one, or when ``base-url`` is the
  replica's ``table-location``: that folder is the snapshot itself, and Hive skips hidden
  (``.``) folders, so it never reads the schema as data. The schema then lives and dies with
  its snapshot.

Every event gets its own copy, so a replica keeps reading the schema it was written with
until its next snapshot.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from ferry.core.errors import CopyError, SourceMetadataError
from ferry.core.model import Partition, Table
from ferry.storage import fs

AVRO_SCHEMA_URL = "avro.schema.url"
#: The hidden folder of a schema copied into the snapshot folder itself.
SCHEMA_FOLDER = ".schema"


def schema_url_of(parameters: Mapping[str, str], serde_parameters: Mapping[str, str]) -> str | None:
    """The schema URL a table or partition names: its parameter first, then its SerDe's."""
    return parameters.get(AVRO_SCHEMA_URL) or serde_parameters.get(AVRO_SCHEMA_URL) or None


def replica_schema_url(
    source_url: str, base_url: str | None, event_id: str, table_location: str | None = None
) -> str:
    """Where the replica's copy of the schema at ``source_url`` goes for ``event_id``.

    ``base_url`` None means the replica's ``table_location``. A copy in the table location
    goes to a hidden ``.schema`` folder of the event's snapshot.
    """
    base = base_url or table_location
    if not base:  # point_at_replica_schema asks only with one of them
        raise ValueError("a replica schema URL needs avro-serde-options.base-url or a location")
    name = posixpath.basename(urlsplit(source_url).path)
    if not name:
        raise SourceMetadataError(f"{source_url!r} names no schema file")
    folder = fs.join(base, event_id)
    if table_location and fs.relative_path(base, table_location) == "":
        folder = fs.join(folder, SCHEMA_FOLDER)
    return fs.join(folder, name)


def copy_schema(source_url: str, target_url: str) -> bool:
    """Copy the schema file; True when written, False when the target already held it.

    Schemas are small: the file is read whole. A retry of the same event finds its copy
    and leaves it (the same bytes); anything else at the target is replaced.
    """
    try:
        schema = fs.read_bytes(source_url)
    except (OSError, ValueError) as error:
        raise CopyError(f"cannot read Avro schema {source_url}: {_reason(error)}") from None
    try:
        if fs.read_bytes(target_url) == schema:
            return False
    except (OSError, ValueError):
        pass  # not there yet
    try:
        fs.write_bytes(target_url, schema)
    except (OSError, ValueError) as error:
        raise CopyError(f"cannot write Avro schema {target_url}: {_reason(error)}") from None
    return True


@dataclass(frozen=True)
class SchemaCopy:
    """One schema file to copy before the replica points at it."""

    source_url: str
    target_url: str


def point_at_replica_schema[Shaped: (Table, Partition)](
    shaped: Shaped, base_url: str | None, event_id: str, table_location: str | None
) -> tuple[Shaped, SchemaCopy | None]:
    """A replica table or partition pointing at its own copy of its schema, and the copy.

    Nothing changes (and nothing is copied) when it names no schema URL. Like Circus
    Train, the URL goes to the table (or partition) parameter and leaves the SerDe's.
    """
    source_url = schema_url_of(shaped.parameters, shaped.storage.serde_parameters)
    if source_url is None or not (base_url or table_location):
        return shaped, None
    target_url = replica_schema_url(source_url, base_url, event_id, table_location)
    serde_parameters = {
        k: v for k, v in shaped.storage.serde_parameters.items() if k != AVRO_SCHEMA_URL
    }
    reshaped = replace(
        shaped,
        parameters={**shaped.parameters, AVRO_SCHEMA_URL: target_url},
        storage=replace(shaped.storage, serde_parameters=serde_parameters),
    )
    return reshaped, SchemaCopy(source_url, target_url)


def _reason(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__
