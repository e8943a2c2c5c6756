"""An Iceberg table in the pipeline's steps: Plan, Commit's check, Abort's clean-up.

The steps replicate an Iceberg table as they replicate any other, with Iceberg's own
isolation in place of a snapshot folder:

- **Plan** plans from the source's current metadata and the replica's (its catalog entry's
  ``metadata_location``), streams the data, delete and statistics files to copy into the
  run's manifest — the existing copiers (inline, S3 server-side, Spark) move them — and
  writes the rewritten position delete files, manifests, manifest lists and metadata.json
  under the replica's table location with new names (the run's event id, a new uuid) that
  nothing references yet;
- **Commit** first checks that every file the new metadata references is in place, then
  moves the catalog's ``metadata_location`` through the usual claim;
- **Abort** removes the metadata files this run wrote unless the replica's current metadata
  references them. Copied data files stay: their names are the source's, so another run may
  have copied (and committed) the same file. Plan told its caller what the run writes
  before writing any of it (``IcebergIntent``), so housekeeping deletes them later if no
  metadata references them — also when the run was killed before its Abort.

All I/O goes through Ferry's file systems (``ferry.fs``: S3 with the configured endpoint,
local disks, ...), wrapped as a pyiceberg ``FileIO``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyiceberg.io import InputFile, OutputFile
from pyiceberg.io.pyarrow import PyArrowFile, PyArrowFileIO, PyArrowLocalFileSystem
from pyiceberg.table.metadata import TableMetadata

from ferry import fs
from ferry.errors import CopyIncompleteError, IcebergMetadataError
from ferry.iceberg.paths import canonical
from ferry.iceberg.plan import FileCopy, plan_replication
from ferry.iceberg.reading import read_table_metadata, referenced_files
from ferry.iceberg.replicate import metadata_targets, retired_files, write_metadata
from ferry.manifest import CopyRoot, ManifestWriter


class FerryFileIO(PyArrowFileIO):
    """pyiceberg's pyarrow ``FileIO`` on Ferry's file systems (``ferry.fs.resolve``): the
    S3 endpoint, regions and clients of this process, whatever the URI's spelling."""

    def new_input(self, location: str) -> PyArrowFile:
        filesystem, path = fs.resolve(location)
        return PyArrowFile(location=location, path=path, fs=filesystem)

    def new_output(self, location: str) -> PyArrowFile:
        filesystem, path = fs.resolve(location)
        if fs.is_local(filesystem):
            # pyiceberg's local file system creates a file's folder before writing it.
            filesystem = _LOCAL
        return PyArrowFile(location=location, path=path, fs=filesystem)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        # Through Ferry's deletes: on S3, pyarrow's delete_file writes an empty "folder"
        # object into the parent afterwards, a write a role that only deletes may not make.
        uri = location.location if isinstance(location, InputFile | OutputFile) else location
        fs.delete_tree(uri)


_LOCAL = PyArrowLocalFileSystem()


@dataclass(frozen=True)
class IcebergRun:
    """What Plan decided and wrote for an Iceberg table; Commit registers it, Abort undoes
    it. Travels in the run's plan document."""

    #: The replica's next metadata.json (its current one when it is up to date).
    metadata_location: str
    #: The replica's current metadata.json, None for a first replication.
    previous_metadata_location: str | None
    #: The metadata files Plan wrote (manifests, manifest lists, metadata.json), all new names.
    written: tuple[str, ...] = ()
    #: Position delete files Plan rewrote for the replica.
    rewritten_deletes: tuple[str, ...] = ()
    #: Source snapshots the replica gets in this run.
    new_snapshot_ids: tuple[int, ...] = ()
    #: Replica files only the previous metadata referenced (snapshots expired at the source).
    retired: tuple[str, ...] = ()
    #: The metadata files the run writes (or would: ``ferry plan``): manifests, manifest
    #: lists, the metadata.json, and rewritten position delete files.
    metadata_files: int = 0

    @property
    def changed(self) -> bool:
        return self.metadata_location != self.previous_metadata_location


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


@dataclass(frozen=True)
class IcebergIntent:
    """What a run is about to write at an Iceberg replica, known before it writes any of it
    (the write-ahead record ``ferry.lifecycle`` ledgers, so that a run killed before its
    Abort leaves nothing housekeeping cannot find)."""

    #: The replica's table location, where every file below is written.
    root: str
    #: The source table's location (its metadata's): nothing inside it is ever deleted.
    source_location: str
    #: The metadata files (manifests, manifest lists, metadata.json) and the rewritten
    #: position delete files.
    files: tuple[str, ...]
    #: The run's manifest: the copies (as many as the source's new files; read when needed).
    manifest_uri: str | None


def plan_iceberg(
    source_metadata_location: str,
    replica_prefix: str,
    replica_metadata_location: str | None,
    event_id: str,
    writer: ManifestWriter,
    write: bool,
    intend: Callable[[IcebergIntent], None] | None = None,
) -> PlannedIceberg:
    """Plan the replica's next version; stream its copies into ``writer``; when ``write``
    (a run, not a preview), tell ``intend`` what the run will write, then write its metadata
    files. Copies nothing."""
    io = FerryFileIO()
    plan = plan_replication(
        io, source_metadata_location, replica_prefix, io, replica_metadata_location, event_id
    )
    if plan.up_to_date:
        assert replica_metadata_location is not None and plan.replica is not None
        run = IcebergRun(replica_metadata_location, replica_metadata_location)
        return PlannedIceberg(run, plan.source, plan.replica, plan.replica)
    assert plan.metadata_target is not None and plan.metadata is not None
    _stream_copies(plan.copies, plan.mover.roots, writer)
    written: tuple[str, ...] = ()
    rewritten = tuple(d.target for d in plan.delete_rewrites)
    if write:
        if intend is not None:
            intend(
                IcebergIntent(
                    root=replica_prefix,
                    source_location=plan.mover.source,
                    files=(*metadata_targets(plan), *rewritten),
                    manifest_uri=writer.uri,
                )
            )
        written = write_metadata(plan, io, io)
    run = IcebergRun(
        metadata_location=plan.metadata_target,
        previous_metadata_location=replica_metadata_location,
        written=written,
        rewritten_deletes=rewritten,
        new_snapshot_ids=tuple(s.snapshot.snapshot_id for s in plan.snapshots),
        retired=retired_files(plan, io) if write else (),
        metadata_files=len(plan.manifests) + len(plan.snapshots) + 1 + len(plan.delete_rewrites),
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
                    f"{entry.uri} has {entry.size} bytes; the source table's metadata says "
                    f"{copy.size}: the source changed under its metadata"
                )
            entries.append(entry)
        if entries:
            writer.add(CopyRoot(source_prefix, replica_prefix), entries)
    if wanted:
        first = next(iter(wanted.values())).source
        raise IcebergMetadataError(
            f"{len(wanted)} files the source's metadata names are not under its location "
            f"{roots[0][0]} (first: {first})"
        )


def check_in_place(run: IcebergRun, threads: int = 16) -> None:
    """Refuse unless every file the new metadata references is at the replica
    (``CopyIncompleteError``, one line naming the first missing file)."""
    io = FerryFileIO()
    metadata = read_table_metadata(io, run.metadata_location)
    files = sorted(referenced_files(io, metadata))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        present = list(pool.map(fs.exists, files))
    missing = [path for path, there in zip(files, present, strict=True) if not there]
    if missing:
        raise CopyIncompleteError(
            f"{len(missing)} of {len(files)} files that replica metadata "
            f"{run.metadata_location} references are missing (first: {missing[0]}); "
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
