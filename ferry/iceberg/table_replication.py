"""One Iceberg table replicated, full or incremental, files first and metadata last.

The order is the snapshot isolation of an Iceberg replica: data, delete and statistics
files; then the rewritten position delete files; then manifests, manifest lists and last
the new metadata.json, a new file. Every file a new metadata names is in place before it
is written, and nothing a previous replica version names is overwritten, so the replica's
catalog entry may move to the returned location at any time after — and a reader still on
the previous metadata reads a complete table. Registering the location is the caller's.

In the pipeline the same pieces run in different steps (``ferry.iceberg.pipeline``): the
copiers run ``run_manifest_work`` on their batches' work items, Commit runs
``write_staged`` and registers the location.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyiceberg.avro.codecs import AVRO_CODEC_KEY
from pyiceberg.io import FileIO
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil

from ferry.core import faults
from ferry.core.errors import IcebergMetadataError, VerificationError
from ferry.iceberg.reading import metadata_side_files, read_manifest_list, referenced_files
from ferry.iceberg.rewrite import (
    DeleteFiles,
    ManifestWork,
    RewriteContext,
    moved_manifest,
    rewrite_manifest,
    write_manifest_list,
    write_table_metadata,
)
from ferry.iceberg.snapshot_plan import (
    FileCopy,
    IcebergPlan,
    ListWrite,
    StagedCommit,
    plan_replication,
)

CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class IcebergReplication:
    """What one run did. ``metadata_location`` is the replica's current metadata: the new
    file, or the previous one when the replica was already up to date."""

    metadata_location: str
    previous_metadata_location: str | None
    new_snapshot_ids: tuple[int, ...]
    copied: tuple[FileCopy, ...]  # copied in this run (files already complete skipped)
    rewritten_deletes: tuple[str, ...]  # the replica's position delete files written
    metadata_files: tuple[str, ...]  # manifests, manifest lists, metadata.json written
    retired: tuple[str, ...]  # replica files only the previous version referenced

    @property
    def changed(self) -> bool:
        return self.metadata_location != self.previous_metadata_location


def replicate_iceberg_table(
    source_io: FileIO,
    source_metadata_location: str,
    replica_prefix: str,
    replica_io: FileIO,
    replica_metadata_location: str | None = None,
    run_id: str | None = None,
    threads: int = 8,
) -> IcebergReplication:
    """Bring the replica at ``replica_prefix`` (its current metadata at
    ``replica_metadata_location``, None for a first run) to the source's current metadata."""
    plan = plan_replication(
        source_io,
        source_metadata_location,
        replica_prefix,
        replica_io,
        replica_metadata_location,
        run_id,
    )
    if plan.up_to_date:
        assert replica_metadata_location is not None
        return IcebergReplication(
            replica_metadata_location, replica_metadata_location, (), (), (), (), ()
        )
    return execute_plan(plan, source_io, replica_io, threads)


def execute_plan(
    plan: IcebergPlan, source_io: FileIO, replica_io: FileIO, threads: int = 8
) -> IcebergReplication:
    """Write what ``plan`` says, in the order that keeps every replica version complete."""
    assert plan.metadata is not None and plan.metadata_target is not None
    with ThreadPoolExecutor(max_workers=threads) as pool:
        copied = tuple(
            c
            for c, done in zip(
                plan.copies,
                pool.map(lambda c: copy_file(source_io, replica_io, c), plan.copies),
                strict=True,
            )
            if done
        )
    written = write_metadata(plan, source_io, replica_io, threads)
    return IcebergReplication(
        metadata_location=plan.metadata_target,
        previous_metadata_location=plan.replica_metadata_location,
        new_snapshot_ids=tuple(s.snapshot.snapshot_id for s in plan.snapshots),
        copied=copied,
        rewritten_deletes=tuple(d.target for d in plan.delete_rewrites),
        metadata_files=written,
        retired=retired_files(plan, replica_io),
    )


def write_metadata(
    plan: IcebergPlan, source_io: FileIO, replica_io: FileIO, threads: int = 8
) -> tuple[str, ...]:
    """Write the replica's rewritten position delete files and manifests (``rewrite_manifests``,
    a copier's part in the pipeline), then its manifest lists and last its metadata.json
    (``write_staged``, Commit's part); the metadata files written.

    Every name is new (the run's id), so nothing a replica version references is overwritten;
    the data files the metadata names may be copied before or after, as long as the catalog
    moves to the metadata.json only once they are in place.
    """
    lengths = rewrite_manifests(plan, source_io, replica_io, threads)
    staged = plan.staged()
    write_staged(source_io, replica_io, staged, lengths, threads)
    return (*lengths, *(s.target for s in staged.lists), staged.metadata_location)


def manifest_work(plan: IcebergPlan) -> tuple[RewriteContext, tuple[ManifestWork, ...]]:
    """The plan's manifest rewrites as the work items a copier executes."""
    assert plan.source_metadata_location is not None
    context = RewriteContext(plan.mover, plan.source.format_version, plan.source_metadata_location)
    return context, tuple(ManifestWork.of(m.source, m.target) for m in plan.manifests)


def rewrite_manifests(
    plan: IcebergPlan, source_io: FileIO, replica_io: FileIO, threads: int = 8
) -> dict[str, int]:
    """Every manifest rewrite of ``plan``, here: the replica manifests' lengths by path."""
    context, work = manifest_work(plan)
    return run_manifest_work(source_io, replica_io, context, work, threads)


def run_manifest_work(
    source_io: FileIO,
    replica_io: FileIO,
    context: RewriteContext,
    work: Sequence[ManifestWork],
    threads: int = 8,
) -> dict[str, int]:
    """Rewrite ``work``'s manifests (and the position delete files they name, each once),
    ``threads`` at a time; the replica manifests' lengths by path."""
    deletes = DeleteFiles(source_io, replica_io, context.mover)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        lengths = pool.map(
            lambda w: rewrite_manifest(source_io, replica_io, w, context, deletes), work
        )
        return dict(zip((w.target for w in work), lengths, strict=True))


def write_staged(
    source_io: FileIO,
    replica_io: FileIO,
    staged: StagedCommit,
    lengths: Mapping[str, int],
    threads: int = 8,
) -> None:
    """Write the manifest lists and last the metadata.json of ``staged``; ``lengths`` are the
    rewritten manifests' (by replica path).

    Run again after it wrote the metadata.json (a retried Commit), it writes nothing: the
    metadata.json is written last, under a name the run's id decides, so its presence says
    every list is in place.
    """
    if replica_io.new_input(staged.metadata_location).exists():
        return
    metadata = TableMetadataUtil.parse_raw(staged.metadata)
    snapshots = {s.snapshot_id: s for s in metadata.snapshots}

    def write_list(write: ListWrite) -> None:
        listed = read_manifest_list(source_io, write.source)
        records = []
        for record in listed.records:
            path = record.manifest_path
            if path in staged.rewritten:
                target = staged.rewritten[path]
                records.append(moved_manifest(record, target, lengths[target]))
            elif path in staged.reused:
                records.append(moved_manifest(record, *staged.reused[path]))
            else:
                raise IcebergMetadataError(
                    f"manifest list {write.source} names {path}, which the replica has no "
                    "copy of and this run does not rewrite"
                )
        write_manifest_list(
            replica_io,
            metadata.format_version,
            snapshots[write.snapshot_id],
            write.target,
            listed.header.get(AVRO_CODEC_KEY, "deflate"),
            records,
        )

    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in pool.map(write_list, staged.lists):
            pass
    # Manifest lists written, the metadata.json not yet: a run failing here leaves files
    # nothing references, and a retry writes them again (the tests inject faults here).
    faults.point("commit.metadata")
    write_table_metadata(replica_io, metadata, staged.metadata_location)


def copy_file(source_io: FileIO, replica_io: FileIO, copy: FileCopy) -> bool:
    """Copy one immutable file; False when a complete copy (its size) is already there.
    The copy's size is checked against the size the metadata records."""
    target = replica_io.new_input(copy.target)
    if target.exists() and len(target) == copy.size:
        return False
    with source_io.new_input(copy.source).open() as reader:
        with replica_io.new_output(copy.target).create(overwrite=True) as writer:
            while chunk := reader.read(CHUNK):
                writer.write(chunk)
    if (size := len(replica_io.new_input(copy.target))) != copy.size:
        raise VerificationError(
            f"{copy.target} has {size} bytes after the copy; the table's metadata says "
            f"{copy.size} ({copy.source})"
        )
    return True


def retired_files(plan: IcebergPlan, replica_io: FileIO) -> tuple[str, ...]:
    """The replica files the previous version referenced and the new one does not (the
    source expired snapshots or replaced statistics): for housekeeping, never deleted here.
    Once the new version's files are all written (it reads its manifest lists)."""
    if plan.replica is None or plan.metadata is None:
        return ()
    return dropped_files(replica_io, plan.replica, plan.metadata)


def dropped_files(io: FileIO, previous: TableMetadata, metadata: TableMetadata) -> tuple[str, ...]:
    """The files ``previous`` references and ``metadata`` does not, both versions of one
    replica written in full. Reads every manifest of both only when something was dropped:
    a snapshot, or a statistics file."""
    kept = {s.snapshot_id for s in metadata.snapshots}
    removed = any(s.snapshot_id not in kept for s in previous.snapshots)
    if not removed and metadata_side_files(previous) <= metadata_side_files(metadata):
        return ()
    return tuple(sorted(referenced_files(io, previous) - referenced_files(io, metadata)))
