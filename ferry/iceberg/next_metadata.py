"""The replica's next metadata.json: the source's metadata with every path moved, and the
replica's own history of metadata files.

Each snapshot points at the replica's manifest list; statistics files at their copies; the
metadata log is the replica's (each catalog keeps its own history of files), trimmed to the
source's ``write.metadata.previous-versions-max``. The file's name continues the replica's
``<version>-<uuid>.metadata.json`` numbering, its uuid derived from the run's id, so a step
run again for the same event writes the same name.
"""

from __future__ import annotations

import posixpath
import re
import uuid

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import MetadataLogEntry

from ferry.iceberg.paths import PATH_PROPERTIES, PathMover

PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
PREVIOUS_VERSIONS_MAX_DEFAULT = 100
#: The metadata.json's uuid is derived from the run's id (and the replica's location), so a
#: step run again for the same event writes the same names.
_RUN_NAMESPACE = uuid.UUID("5f0c7a52-3b1e-4d8e-9a51-6d2f1e0b7c44")


def next_metadata(
    source: TableMetadata,
    mover: PathMover,
    manifest_lists: dict[int, str],
    replica: TableMetadata | None,
    replica_metadata_location: str | None,
) -> TableMetadata:
    """The source's metadata with every path moved, each snapshot on the replica's
    manifest list, and the replica's own history of metadata files as its metadata log."""
    log = list(replica.metadata_log) if replica else []
    if replica is not None and replica_metadata_location is not None:
        log.append(
            MetadataLogEntry(
                metadata_file=replica_metadata_location, timestamp_ms=replica.last_updated_ms
            )
        )
    keep = int(source.properties.get(PREVIOUS_VERSIONS_MAX, PREVIOUS_VERSIONS_MAX_DEFAULT))
    properties = {
        k: mover.move_if_under(v) if k in PATH_PROPERTIES else v
        for k, v in source.properties.items()
    }
    return source.model_copy(
        update={
            "location": mover.move(source.location),
            "properties": properties,
            "snapshots": [
                s.model_copy(update={"manifest_list": manifest_lists[s.snapshot_id]})
                for s in source.snapshots
            ],
            "statistics": [
                f.model_copy(update={"statistics_path": mover.move(f.statistics_path)})
                for f in source.statistics
            ],
            "partition_statistics": [
                f.model_copy(update={"statistics_path": mover.move(f.statistics_path)})
                for f in source.partition_statistics
            ],
            "metadata_log": log[-keep:] if keep > 0 else [],
        }
    )


def same_table(a: TableMetadata, b: TableMetadata) -> bool:
    """Equal but for the metadata log (each catalog keeps its own history of files)."""
    skip = {"metadata_log"}
    return a.model_dump(exclude=skip) == b.model_dump(exclude=skip)


def next_metadata_path(mover: PathMover, run_id: str, replica_metadata_location: str | None) -> str:
    """Where the replica's next metadata.json is written: the next version's number, and a
    uuid the same for the same run and replica."""
    name = uuid.uuid5(_RUN_NAMESPACE, f"{run_id} {mover.replica}")
    return mover.replica_metadata_path(
        f"{_next_version(replica_metadata_location):05d}-{name}.metadata.json"
    )


def _next_version(replica_metadata_location: str | None) -> int:
    """Iceberg's ``<version>-<uuid>.metadata.json`` numbering, continued in the replica."""
    if replica_metadata_location is None:
        return 0
    match = re.match(r"(\d+)-", posixpath.basename(replica_metadata_location))
    return int(match.group(1)) + 1 if match else 1
