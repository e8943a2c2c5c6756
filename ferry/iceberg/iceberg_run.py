"""What an Iceberg run decided and intends, as values: ``IcebergRun`` travels in the plan
document, ``IcebergIntent`` is ledgered before a run writes anything.

Apart from ``ferry.iceberg.pipeline`` (which reads and writes Iceberg metadata with pyiceberg)
because every reader of a plan names these types, and most never touch an Iceberg table's
metadata: a Hive table's run, and the functions that only pass a plan on, start without
pyiceberg.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IcebergRun:
    """What Plan decided (and staged) for an Iceberg table; Commit writes and registers it,
    Abort undoes it. Travels in the run's plan document."""

    #: The replica's next metadata.json (its current one when it is up to date).
    metadata_location: str
    #: The replica's current metadata.json, None for a first replication.
    previous_metadata_location: str | None
    #: The metadata files the run writes (manifests: the copiers; manifest lists and the
    #: metadata.json: Commit), all new names.
    written: tuple[str, ...] = ()
    #: Position delete files the run rewrites for the replica (the copiers, with manifests).
    rewritten_deletes: tuple[str, ...] = ()
    #: Source snapshots the replica gets in this run.
    new_snapshot_ids: tuple[int, ...] = ()
    #: The metadata files the run writes (or would: ``ferry plan``): manifests, manifest
    #: lists, the metadata.json, and rewritten position delete files.
    metadata_files: int = 0
    #: What Commit writes (``StagedCommit``), staged by Plan in the run's folder; None for
    #: a preview.
    staged: str | None = None

    @property
    def changed(self) -> bool:
        return self.metadata_location != self.previous_metadata_location


@dataclass(frozen=True)
class IcebergIntent:
    """What a run is about to write at an Iceberg replica, known before it writes any of it
    (the write-ahead record ``ferry.lifecycle.replica_state`` ledgers, so that a run killed before
    its Abort leaves nothing housekeeping cannot find)."""

    #: The replica's table location, where every file below is written.
    root: str
    #: The source table's location (its metadata's): nothing inside it is ever deleted.
    source_location: str
    #: The metadata files (manifests, manifest lists, metadata.json) and the rewritten
    #: position delete files.
    files: tuple[str, ...]
    #: The run's manifest: the copies (as many as the source's new files; read when needed).
    manifest_uri: str | None
