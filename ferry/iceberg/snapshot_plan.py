"""What an Iceberg replica lacks, snapshot by snapshot, and the replica's next metadata.

The replica keeps the source's snapshot ids, sequence numbers, schemas, partition specs,
sort orders, refs and snapshot log; only paths differ. A snapshot the replica already has
keeps the replica's manifest list. A source manifest that a snapshot the replica has already
lists is found in the replica by pairing the two manifest lists of that snapshot (Ferry
wrote the replica's list from the source's, entry for entry, in order), so a manifest is
rewritten once in the replica's life, not once per run. Only the live files of manifests
rewritten in this run are copied; the copy itself skips a file already complete at the
replica. The replica's next metadata.json itself is ``ferry.iceberg.next_metadata``'s.
"""

from __future__ import annotations

import posixpath
import uuid
from dataclasses import dataclass, field

from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFileContent, ManifestFile
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot

from ferry.core.errors import IcebergMetadataError
from ferry.iceberg.next_metadata import next_metadata, next_metadata_path, same_table
from ferry.iceberg.paths import PathMover, canonical
from ferry.iceberg.reading import (
    check_supported,
    is_live,
    read_manifest,
    read_manifest_list,
    read_table_metadata,
)


@dataclass(frozen=True)
class FileCopy:
    """A file copied byte for byte: a data file, an equality delete file, a statistics file."""

    source: str
    target: str
    size: int
    #: What the file is, as an error about it names it.
    kind: str = "data file"


@dataclass(frozen=True)
class DeleteRewrite:
    """A position delete file: its rows name data files, so its copy is rewritten."""

    source: str
    target: str
    record_count: int


@dataclass(frozen=True)
class ManifestRewrite:
    """A source manifest and the new replica manifest written from it (by the copier, which
    reads the manifest again: a plan holds no manifest's entries)."""

    source: ManifestFile
    target: str


@dataclass(frozen=True)
class SnapshotRewrite:
    """A snapshot the replica lacks: its manifest list, written anew from the source's."""

    snapshot: Snapshot
    target_list: str
    header: dict[str, str]
    manifests: tuple[str, ...]  # the source manifests' paths, in the source list's order


@dataclass(frozen=True)
class ListWrite:
    """A manifest list Commit writes: the source snapshot's list, rewritten for the replica."""

    snapshot_id: int
    source: str
    target: str


@dataclass(frozen=True)
class StagedCommit:
    """What Commit writes for the replica's next version once the copiers have rewritten its
    manifests: each new snapshot's manifest list (the source's records, every manifest the
    replica's copy: rewritten in this run, or one the replica already has), then the
    metadata.json. Plan stages it in the run's folder; nothing below the replica yet."""

    metadata_location: str
    #: The replica's next metadata, as pyiceberg serializes it.
    metadata: str
    lists: tuple[ListWrite, ...]
    #: Source manifest → the replica's manifest the copiers write from it in this run.
    rewritten: dict[str, str]
    #: Source manifest → the replica's manifest already written from it (path, length).
    reused: dict[str, tuple[str, int]]


@dataclass(frozen=True)
class IcebergPlan:
    """Everything one run writes; ``metadata`` is None when the replica is up to date."""

    mover: PathMover
    source: TableMetadata
    replica: TableMetadata | None
    replica_metadata_location: str | None
    snapshots: tuple[SnapshotRewrite, ...] = ()
    manifests: tuple[ManifestRewrite, ...] = ()
    reused: dict[str, ManifestFile] = field(default_factory=dict)
    copies: tuple[FileCopy, ...] = ()
    delete_rewrites: tuple[DeleteRewrite, ...] = ()
    metadata: TableMetadata | None = None
    metadata_target: str | None = None
    #: The source's metadata.json the plan was made from.
    source_metadata_location: str | None = None

    @property
    def up_to_date(self) -> bool:
        return self.metadata is None

    def staged(self) -> StagedCommit:
        """What Commit writes after the copies and manifest rewrites of this plan."""
        assert self.metadata is not None and self.metadata_target is not None
        return StagedCommit(
            metadata_location=self.metadata_target,
            metadata=self.metadata.model_dump_json(),
            lists=tuple(
                ListWrite(s.snapshot.snapshot_id, s.snapshot.manifest_list, s.target_list)
                for s in self.snapshots
            ),
            rewritten={m.source.manifest_path: m.target for m in self.manifests},
            reused={
                path: (record.manifest_path, record.manifest_length)
                for path, record in self.reused.items()
            },
        )

    @property
    def removed_snapshot_ids(self) -> tuple[int, ...]:
        """Snapshots the replica has and the source no longer has (expired at the source)."""
        if self.replica is None:
            return ()
        kept = {s.snapshot_id for s in self.source.snapshots}
        return tuple(s.snapshot_id for s in self.replica.snapshots if s.snapshot_id not in kept)


def plan_replication(
    source_io: FileIO,
    source_metadata_location: str,
    replica_prefix: str,
    replica_io: FileIO,
    replica_metadata_location: str | None = None,
    run_id: str | None = None,
) -> IcebergPlan:
    """Plan the replica's next version from the source's current metadata and the
    replica's (None for a first replication). Reads; writes nothing."""
    run_id = run_id or uuid.uuid4().hex[:12]
    source = read_table_metadata(source_io, source_metadata_location)
    check_supported(source)
    mover = PathMover.for_table(source.location, source.properties, replica_prefix)
    replica = None
    if replica_metadata_location is not None:
        replica = read_table_metadata(replica_io, replica_metadata_location)
        if canonical(replica.location).rstrip("/") != canonical(replica_prefix).rstrip("/"):
            raise IcebergMetadataError(
                f"The replica at {replica_metadata_location} is located at {replica.location}, "
                f"not {replica_prefix}"
            )
    have = {s.snapshot_id: s for s in replica.snapshots} if replica else {}
    name = _Namer(mover, run_id)

    snapshots = tuple(
        _snapshot_rewrite(source_io, s, name) for s in source.snapshots if s.snapshot_id not in have
    )
    needed = list(dict.fromkeys(m for s in snapshots for m in s.manifests))
    reused = _pair_manifests(source_io, replica_io, source, have, set(needed))
    manifests = tuple(
        ManifestRewrite(source=lst, target=name(path))
        for lst, path in _source_manifests(source_io, snapshots, needed, reused)
    )
    copies, deletes = _files(source_io, manifests, mover)
    copies += _statistics_copies(source, replica, mover)

    lists = {s.snapshot.snapshot_id: s.target_list for s in snapshots}
    lists.update({i: s.manifest_list for i, s in have.items()})
    metadata = next_metadata(source, mover, lists, replica, replica_metadata_location)
    if replica is not None and not snapshots and same_table(metadata, replica):
        return IcebergPlan(mover, source, replica, replica_metadata_location)
    return IcebergPlan(
        mover=mover,
        source=source,
        replica=replica,
        replica_metadata_location=replica_metadata_location,
        snapshots=snapshots,
        manifests=manifests,
        reused=reused,
        copies=copies,
        delete_rewrites=deletes,
        metadata=metadata,
        source_metadata_location=source_metadata_location,
        metadata_target=next_metadata_path(mover, run_id, replica_metadata_location),
    )


#: In the name of every manifest and manifest list Ferry writes (``_Namer``).
FERRY_NAME_MARK = "-ferry-"


def foreign_snapshots(
    metadata: TableMetadata, source: TableMetadata | None = None
) -> list[Snapshot]:
    """The replica's snapshots whose manifest list Ferry did not write (another writer's
    commit: Ferry names every list it writes with ``FERRY_NAME_MARK``) and that the
    ``source`` does not have either: a snapshot written in DR that a failback brought home
    (``ferry.iceberg.failback_snapshots``) is the source's own now, and replicating keeps it."""
    home = {s.snapshot_id for s in source.snapshots} if source is not None else set()
    return [
        s
        for s in metadata.snapshots
        if s.manifest_list
        and FERRY_NAME_MARK not in posixpath.basename(s.manifest_list)
        and s.snapshot_id not in home
    ]


class _Namer:
    """New names under the replica's ``metadata/`` folder: the source file's name and the
    run's id, so a run never overwrites a file an earlier replica version references."""

    def __init__(self, mover: PathMover, run_id: str) -> None:
        self._mover, self._run_id, self._used = mover, run_id, set[str]()

    def __call__(self, source_path: str) -> str:
        stem, ext = posixpath.splitext(posixpath.basename(source_path))
        mark = FERRY_NAME_MARK
        name, n = f"{stem}{mark}{self._run_id}{ext}", 1
        while name in self._used:
            name, n = f"{stem}{mark}{self._run_id}-{n}{ext}", n + 1
        self._used.add(name)
        return self._mover.replica_metadata_path(name)


def _snapshot_rewrite(io: FileIO, snapshot: Snapshot, name: _Namer) -> SnapshotRewrite:
    assert snapshot.manifest_list  # check_supported
    listed = read_manifest_list(io, snapshot.manifest_list)
    return SnapshotRewrite(
        snapshot=snapshot,
        target_list=name(snapshot.manifest_list),
        header=listed.header,
        manifests=tuple(m.manifest_path for m in listed.records),
    )


def _pair_manifests(
    source_io: FileIO,
    replica_io: FileIO,
    source: TableMetadata,
    have: dict[int, Snapshot],
    needed: set[str],
) -> dict[str, ManifestFile]:
    """Source manifest path → the replica's manifest written from it, for the needed ones
    that a snapshot both sides have lists (newest snapshots first: most likely to share)."""
    found: dict[str, ManifestFile] = {}
    for snapshot in reversed(source.snapshots):
        if needed <= found.keys():
            break
        if snapshot.snapshot_id not in have:
            continue
        ours = read_manifest_list(source_io, snapshot.manifest_list).records
        theirs = read_manifest_list(replica_io, have[snapshot.snapshot_id].manifest_list).records
        if len(ours) != len(theirs):
            continue
        for src, rep in zip(ours, theirs, strict=True):
            if src.manifest_path in needed and _same_manifest(src, rep):
                found[src.manifest_path] = rep
    return found


def _same_manifest(a: ManifestFile, b: ManifestFile) -> bool:
    """The replica's manifest carries the source's: same snapshot, content, spec, counts."""
    return (
        a.added_snapshot_id,
        a.content,
        a.partition_spec_id,
        a.sequence_number,
        a.added_files_count,
        a.existing_files_count,
        a.deleted_files_count,
    ) == (
        b.added_snapshot_id,
        b.content,
        b.partition_spec_id,
        b.sequence_number,
        b.added_files_count,
        b.existing_files_count,
        b.deleted_files_count,
    )


def _source_manifests(
    io: FileIO,
    snapshots: tuple[SnapshotRewrite, ...],
    needed: list[str],
    reused: dict[str, ManifestFile],
) -> list[tuple[ManifestFile, str]]:
    """The source's ``ManifestFile`` of each manifest to rewrite (from its snapshot's list)."""
    missing = [p for p in needed if p not in reused]
    by_path: dict[str, ManifestFile] = {}
    for snapshot in snapshots:
        if not set(missing) - by_path.keys():
            break
        assert snapshot.snapshot.manifest_list
        for m in read_manifest_list(io, snapshot.snapshot.manifest_list).records:
            by_path.setdefault(m.manifest_path, m)
    return [(by_path[p], p) for p in missing]


def _files(
    io: FileIO, manifests: tuple[ManifestRewrite, ...], mover: PathMover
) -> tuple[tuple[FileCopy, ...], tuple[DeleteRewrite, ...]]:
    """The live files of the rewritten manifests: copies, and position deletes to rewrite.
    Reads one manifest at a time; only the files are kept."""
    copies: dict[str, FileCopy] = {}
    deletes: dict[str, DeleteRewrite] = {}
    for manifest in manifests:
        for entry in read_manifest(io, manifest.source.manifest_path).records:
            if not is_live(entry):
                continue
            f = entry.data_file
            if f.content == DataFileContent.POSITION_DELETES:
                deletes.setdefault(
                    f.file_path, DeleteRewrite(f.file_path, mover.move(f.file_path), f.record_count)
                )
            else:
                copies.setdefault(
                    f.file_path,
                    FileCopy(f.file_path, mover.move(f.file_path), f.file_size_in_bytes),
                )
    return tuple(copies.values()), tuple(deletes.values())


def _statistics_copies(
    source: TableMetadata, replica: TableMetadata | None, mover: PathMover
) -> tuple[FileCopy, ...]:
    have = set()
    if replica is not None:
        have = {f.statistics_path for f in [*replica.statistics, *replica.partition_statistics]}
    return tuple(
        FileCopy(
            f.statistics_path,
            mover.move(f.statistics_path),
            f.file_size_in_bytes,
            kind="statistics file",
        )
        for f in [*source.statistics, *source.partition_statistics]
        if mover.move(f.statistics_path) not in have
    )
