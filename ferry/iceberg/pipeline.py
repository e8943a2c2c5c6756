"""An Iceberg table in the pipeline's steps: Plan, the copiers' rewrites, Commit, Abort.

The steps replicate an Iceberg table as they replicate any other, with Iceberg's own
isolation in place of a snapshot folder:

- **Plan** plans from the source's current metadata and the replica's (its catalog entry's
  ``metadata_location``) and only reads: it streams into the run's manifest the data, delete
  and statistics files to copy and, as work items beside them, one rewrite per source
  manifest the replica gets its own copy of (``ManifestWork``); it stages what Commit writes
  (the manifest lists and metadata.json: ``StagedCommit``) in the run's folder;
- **the copier** (inline, S3 server-side, Spark) copies a batch's files and rewrites its
  manifests (``rewrite_batch``), with the position delete files they name, before it
  records the batch;
- **Commit** (``commit_metadata``) measures the rewritten manifests, writes the manifest
  lists and the metadata.json, checks that every file the run's new snapshots brought is in
  place, and then moves the catalog's ``metadata_location`` through the usual claim;
- **Abort** removes the metadata files this run wrote unless the replica's current metadata
  references them. Copied data files stay: their names are the source's, so another run may
  have copied (and committed) the same file. Plan told its caller what the run writes
  before writing any of it (``IcebergIntent``), so housekeeping deletes them later if no
  metadata references them — also when the run was killed before its Abort.

Every name a run writes is new and derived from its event id, so nothing a replica version
references is overwritten and a step run again for the same event writes the same files.
All I/O goes through Ferry's file systems (``ferry.storage.fs``: S3 with the configured endpoint,
local disks, ...), wrapped as a pyiceberg ``FileIO``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil

from ferry.copying.manifest import CopyRoot, ManifestWriter, Rewrite, batch_rewrites
from ferry.core.errors import CopyIncompleteError, IcebergMetadataError, ReplicaGuardError
from ferry.iceberg.fileio import FerryFileIO
from ferry.iceberg.iceberg_run import IcebergIntent, IcebergRun
from ferry.iceberg.paths import canonical
from ferry.iceberg.reading import is_live, read_manifest, read_table_metadata, referenced_files
from ferry.iceberg.rewrite import DeleteFiles, ManifestWork, RewriteContext, rewrite_manifest
from ferry.iceberg.snapshot_plan import FileCopy, StagedCommit, foreign_snapshots, plan_replication
from ferry.iceberg.table_replication import (
    dropped_files,
    manifest_work,
    run_manifest_work,
    write_staged,
)
from ferry.storage import fs

#: Beside the run's manifest: what Commit writes (``StagedCommit``).
STAGED_NAME = "iceberg-commit.json"
_STAGED = TypeAdapter(StagedCommit)


@dataclass(frozen=True)
class PlannedIceberg:
    """What Plan decided (``run``, which travels on) and the metadata it decided from, for
    the replica's catalog entry (``ferry.iceberg.registration``)."""

    run: IcebergRun
    #: The source's current metadata.
    source: TableMetadata
    #: The replica's metadata once the run is committed (its current one when up to date).
    replica: TableMetadata
    #: The replica's current metadata before the run; None for a first replication.
    previous: TableMetadata | None


def plan_iceberg(
    source_metadata_location: str,
    replica_prefix: str,
    replica_metadata_location: str | None,
    event_id: str,
    writer: ManifestWriter,
    write: bool,
    intend: Callable[[IcebergIntent], None] | None = None,
) -> PlannedIceberg:
    """Plan the replica's next version; stream its copies and manifest rewrites into
    ``writer``; when ``write`` (a run, not a preview), tell ``intend`` every file the run will
    write at the replica (the copiers' rewrites, Commit's lists and metadata.json), then
    stage what Commit writes beside the run's manifest. Reads the source and the replica;
    writes nothing below either."""
    io = FerryFileIO()
    plan = plan_replication(
        io, source_metadata_location, replica_prefix, io, replica_metadata_location, event_id
    )
    foreign = foreign_snapshots(plan.replica, plan.source) if plan.replica is not None else []
    if foreign:
        # Replicating over it would drop that writer's snapshots, and ledger their files.
        raise ReplicaGuardError(
            f"has snapshot {foreign[0].snapshot_id} that Ferry did not write (its manifest list "
            f"{foreign[0].manifest_list}): another writer committed to it; Ferry will not "
            "replicate over that commit (drop the replica, or replicate to another table)"
        )
    if plan.up_to_date:
        assert replica_metadata_location is not None and plan.replica is not None
        run = IcebergRun(replica_metadata_location, replica_metadata_location)
        return PlannedIceberg(run, plan.source, plan.replica, plan.replica)
    assert plan.metadata_target is not None and plan.metadata is not None
    _stream_copies(plan.copies, plan.mover.roots, writer)
    context, work = manifest_work(plan)
    writer.add_rewrites(
        context.to_json(), (Rewrite(w.to_item(), w.source, w.target, w.length) for w in work)
    )
    staged = plan.staged()
    written = (
        *(w.target for w in work),
        *(s.target for s in staged.lists),
        staged.metadata_location,
    )
    rewritten = tuple(d.target for d in plan.delete_rewrites)
    staged_uri = None
    if write and writer.uri is not None:
        if intend is not None:
            intend(
                IcebergIntent(
                    root=replica_prefix,
                    source_location=plan.mover.source,
                    files=(*written, *rewritten),
                    manifest_uri=writer.uri,
                )
            )
        staged_uri = fs.join(writer.uri.rsplit("/", 1)[0], STAGED_NAME)
        fs.write_bytes(staged_uri, _STAGED.dump_json(staged))
    run = IcebergRun(
        metadata_location=plan.metadata_target,
        previous_metadata_location=replica_metadata_location,
        written=written,
        rewritten_deletes=rewritten,
        new_snapshot_ids=tuple(s.snapshot.snapshot_id for s in plan.snapshots),
        metadata_files=len(plan.manifests) + len(plan.snapshots) + 1 + len(plan.delete_rewrites),
        staged=staged_uri,
    )
    return PlannedIceberg(run, plan.source, plan.metadata, plan.replica)


def _stream_copies(
    copies: Iterable[FileCopy], roots: Iterable[tuple[str, str]], writer: ManifestWriter
) -> None:
    """The files to copy into the manifest, as the copiers read it: one listing of each of
    the source's prefixes (its location; a data folder its properties put elsewhere) gives
    each file's change marker (the ETag the copy is pinned to), and the files the metadata
    names are taken from it."""
    wanted = {canonical(c.source): c for c in copies}
    if not wanted:
        return
    roots = list(roots)
    for source_prefix, replica_prefix in roots:
        below = canonical(source_prefix).rstrip("/") + "/"
        if not any(path.startswith(below) for path in wanted):
            continue  # e.g. a metadata folder elsewhere: no data file to copy from there
        entries = []
        for entry in fs.iter_files(source_prefix):
            copy = wanted.pop(canonical(entry.uri), None)
            if copy is None:
                continue
            if entry.size != copy.size:
                raise IcebergMetadataError(
                    f"the {copy.kind} {entry.uri} has {entry.size} bytes; its metadata says "
                    f"{copy.size}: the source changed under its metadata",
                    location=entry.uri,
                )
            entries.append(entry)
        if entries:
            writer.add(CopyRoot(source_prefix, replica_prefix), entries)
    if wanted:
        # The path mover refused every file outside the source's prefixes: what is left was
        # looked for where the metadata says, and is not there.
        first = next(iter(wanted.values()))
        more = f" (and {len(wanted) - 1} more)" if len(wanted) > 1 else ""
        raise IcebergMetadataError(
            f"the {first.kind} {first.source} that its metadata names is missing{more}",
            location=first.source,
        )


def rewrite_batch(batch: dict[str, Any], threads: int = 8) -> int:
    """Execute a manifest batch's rewrites here (``ferry.copying.manifest.batch_rewrites``); how
    many.

    A copier calls it before it records the batch, so a batch's copy record says its
    rewrites are written too. Run again, it writes the same bytes."""
    context, items = batch_rewrites(batch)
    if not items:
        return 0
    io = FerryFileIO()
    work = [ManifestWork.from_item(item) for item in items]
    run_manifest_work(io, io, RewriteContext.from_json(context), work, threads)
    return len(work)


class ManifestRewriter:
    """Rewrites the manifests of one run's context here, one work item at a time, sharing
    the rewrites of the position delete files they name (the Spark job's tasks)."""

    def __init__(self, context: dict[str, Any]):
        self._io = FerryFileIO()
        self._context = RewriteContext.from_json(context)
        self._deletes = DeleteFiles(self._io, self._io, self._context.mover)

    def __call__(self, item: list[Any]) -> int:
        """Rewrite one work item's manifest; its length."""
        work = ManifestWork.from_item(item)
        return rewrite_manifest(self._io, self._io, work, self._context, self._deletes)


def commit_metadata(run: IcebergRun, threads: int = 16) -> None:
    """Commit's part before the claim: write the staged manifest lists and metadata.json
    (their records need the rewritten manifests' lengths, measured here), then check every
    file the run's new snapshots brought is in place (``check_new_files``).

    ``CopyIncompleteError`` (one line naming the first missing file) when a rewritten
    manifest or a new file is missing. Run again for the same event, it converges: the
    metadata.json is written last, under the run's name, and an attempt that finds it
    writes nothing."""
    if run.staged is None:
        raise IcebergMetadataError(
            f"the run planned {run.metadata_location} without staging its commit"
        )
    staged = read_staged(run.staged)
    io = FerryFileIO()
    manifests = sorted(set(staged.rewritten.values()))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        sizes = list(pool.map(_size, manifests))
    missing = [path for path, size in zip(manifests, sizes, strict=True) if size is None]
    if missing:
        raise CopyIncompleteError(
            f"{len(missing)} of {len(manifests)} manifests rewritten for replica metadata "
            f"{run.metadata_location} are missing (first: {missing[0]}); not committing"
        )
    lengths = {path: size for path, size in zip(manifests, sizes, strict=True) if size is not None}
    write_staged(io, io, staged, lengths, threads)
    check_new_files(staged, io, threads)


def retired_by(run: IcebergRun) -> tuple[str, ...]:
    """The replica files the run's previous version referenced and its new one does not
    (the source expired snapshots or replaced statistics), for housekeeping's ledger; read
    once Commit wrote the new version, never deleted here."""
    if run.previous_metadata_location is None or not run.changed:
        return ()
    io = FerryFileIO()
    previous = read_table_metadata(io, run.previous_metadata_location)
    return dropped_files(io, previous, read_table_metadata(io, run.metadata_location))


def read_staged(uri: str) -> StagedCommit:
    """The commit Plan staged at ``uri``."""
    return _STAGED.validate_json(fs.read_bytes(uri))


def _size(uri: str) -> int | None:
    filesystem, path = fs.resolve(uri)
    info = filesystem.get_file_info(path)
    return info.size if info.is_file else None


def new_files(staged: StagedCommit, io: FerryFileIO, threads: int = 16) -> set[str]:
    """Every file the replica's new version references that this run brought: its
    metadata.json, the new snapshots' manifest lists, the manifests rewritten in this run
    and every live file they name, and the statistics files — not the table's other files,
    which the previous version referenced and a previous Commit checked. Reads the new
    manifests only, so the check is as large as the change."""
    manifests = sorted(set(staged.rewritten.values()))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        named = pool.map(lambda path: _live_files(io, path), manifests)
        files: set[str] = set().union(*named)
    metadata = TableMetadataUtil.parse_raw(staged.metadata)
    files.update(f.statistics_path for f in [*metadata.statistics, *metadata.partition_statistics])
    files.update(manifests)
    files.update(write.target for write in staged.lists)
    files.add(staged.metadata_location)
    return files


def _live_files(io: FerryFileIO, manifest: str) -> set[str]:
    return {e.data_file.file_path for e in read_manifest(io, manifest).records if is_live(e)}


def check_new_files(staged: StagedCommit, io: FerryFileIO, threads: int = 16) -> None:
    """Refuse unless every file of ``new_files`` is at the replica (``CopyIncompleteError``,
    one line naming the first missing file)."""
    files = sorted(new_files(staged, io, threads))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        present = list(pool.map(fs.exists, files))
    missing = [path for path, there in zip(files, present, strict=True) if not there]
    if missing:
        raise CopyIncompleteError(
            f"{len(missing)} of {len(files)} files that replica metadata "
            f"{staged.metadata_location} brings are missing (first: {missing[0]}); "
            "not committing"
        )


def remove_unreferenced(run: IcebergRun, current_metadata_location: str | None) -> list[str]:
    """Delete the metadata files ``run`` wrote that the replica's current metadata does not
    reference (a failed run's); the ones removed. Nothing when the run's metadata is the
    current one (its commit went through)."""
    if not run.written or current_metadata_location == run.metadata_location:
        return []
    io = FerryFileIO()
    keep = CurrentReferences(current_metadata_location, io)
    removed = []
    for path in run.written:
        if path in keep or not fs.exists(path):
            continue
        io.delete(path)
        removed.append(path)
    return removed


class CurrentReferences:
    """Every file an Iceberg replica's current metadata needs — its metadata.json, the
    earlier ones its metadata log names, and for every snapshot it keeps the manifest list,
    manifests, live data and delete files and statistics — read once, when first asked.

    ``path in references`` compares any spelling (``s3a://``, ``file:/``). No metadata
    (``None``: the replica has none yet) references nothing.
    """

    def __init__(self, metadata_location: str | None, io: FerryFileIO | None = None):
        self.metadata_location = metadata_location
        self._io = io or FerryFileIO()
        self._read: set[str] | None = None

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and canonical(path) in self.paths

    @property
    def paths(self) -> set[str]:
        if self._read is None:
            self._read = set()
            if self.metadata_location is not None:
                current = read_table_metadata(self._io, self.metadata_location)
                self._read = {canonical(p) for p in referenced_files(self._io, current)}
                self._read.add(canonical(self.metadata_location))
                self._read.update(canonical(e.metadata_file) for e in current.metadata_log)
        return self._read
