"""The manifest: every file one replication copies, written once, read by every copier.

It is a JSON array of *batches*, streamed out while the planner lists the source, so that
planning a table of a million files never holds the whole text in memory::

    [{"eventId": "ferry-…", "batch": 0,
      "roots": [{"source": "s3://src/t/dt=1", "target": "s3://dr/t/ferry-…/dt=1",
                 "files": [["part-0.parquet", 1234, "9b2cf5…"], …]}, …]},
     …]

Each file is its path, its size and its change marker as the listing gave them (the ETag on
S3, the modification time in nanoseconds on a local file system; absent where the file
system has none). The copiers pin every copy to that marker, so a file replaced after
planning is refused instead of copied.

A batch is the unit of work of the S3 server-side copy (one Map item, read directly by the
state machine's ``ItemReader``) and of the copy records that Commit checks. It is bounded in
files, in bytes (what one Lambda copies in its 15 minutes) and in text (a Map item's input
is at most 256 KiB). File paths are
relative to their root, which keeps a million-file manifest to tens of MB. The inline copier
and the Spark job read the same file (``read_manifest``).

A batch may also carry *rewrites*: files a copier writes from a source file instead of
copying it — an Iceberg table's manifests, each rewritten for the replica with the
position delete files it names (``ferry.iceberg.pipeline``) — as opaque work items with the
context they share::

    {"eventId": …, "batch": 3, "roots": […],
     "rewrites": {"context": {"mover": {"source": "s3://src/t", "replica": "s3://dr/t"}, …},
                  "items": [["s3://src/t/metadata/a-m0.avro", "s3://dr/t/metadata/…", …], …]}}

They count towards a batch's bounds as files do (one each, the source's bytes, their text),
and a batch holds at most ``REWRITE_BATCH_BYTES`` of them: a rewrite costs CPU in the
copier, not transfer.

Each copier writes a *copy record* per batch it finished (its files copied *and* its rewrites
written; ``ferry.copying.copy_records``); Commit commits only when every batch has one, and a
retried copy skips the batches already recorded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ferry.copying.copier import CopyTask, Manifest
from ferry.storage import fs
from ferry.storage.listing import FileEntry

#: A batch's digest (``batch_digest``): its copy record counts for that very batch only.
DIGEST = "digest"
#: A resumed run's batch: the indexes (in ``batch_tasks`` order) of its files a failed
#: attempt of the same event already copied whole, from the same source version.
REUSE = "reuse"
#: A batch's rewrites (``Rewrite``): ``{"context": {...}, "items": [...]}``.
REWRITES = "rewrites"


@dataclass(frozen=True)
class CopyRoot:
    """A source folder (a partition, or an unpartitioned table) and where it goes."""

    source: str
    target: str


@dataclass(frozen=True)
class Rewrite:
    """A file a copier writes from a source file rather than copies: its work item (JSON, the
    copier's executor reads it), the file it reads, the file it writes, the bytes it reads."""

    item: list[Any]
    source: str
    target: str
    size: int


@dataclass(frozen=True)
class ManifestSummary:
    """What planning learned about the files, without the files."""

    files: int
    bytes: int
    batches: int
    #: Every scheme a source or target file has (the copier choice reads these).
    source_schemes: tuple[str, ...] = ()
    target_schemes: tuple[str, ...] = ()
    #: Rewrites (files a copier writes from another: ``Rewrite``), besides ``files``.
    rewrites: int = 0
    #: The source bytes the rewrites read (not in ``bytes``: nothing is copied).
    rewrite_bytes: int = 0
    #: Each batch's digest (``batch_digest``), in batch order: what its copy record names.
    digests: tuple[str, ...] = ()
    #: A resumed run: the files (and their bytes) of ``files`` a failed attempt of the same
    #: event already copied whole from the same source version; no copier copies them again.
    reused_files: int = 0
    reused_bytes: int = 0

    @property
    def work(self) -> bool:
        """Whether a copier has anything to do."""
        return bool(self.files or self.rewrites)


#: A batch's JSON at most: each is one child execution's input of the S3 copy Map, which Step
#: Functions limits to 256 KiB with the few fields its ItemSelector adds.
BATCH_TEXT_LIMIT = 200 * 1024
GIB = 1024**3
#: The source bytes of the rewrites one batch holds at most. A manifest is rewritten at about
#: 1.5 MB/s on one core (pyiceberg's Avro writer is Python: 10,000 entries, 1.4 MB, in 0.9 s
#: on the development machine), so a batch of them stays well inside a Lambda's 15 minutes
#: (about 3 minutes) where the byte bound of copies (25 GiB) would not.
REWRITE_BATCH_BYTES = 256 * 1024**2


class ManifestWriter:
    """Writes batches as files are added; with no URI it only counts (dry runs, plans).

    A batch closes at ``batch_files`` files, at ``batch_bytes`` bytes (a file larger than
    that is a batch of its own), or before its text would pass ``BATCH_TEXT_LIMIT``.
    """

    def __init__(
        self,
        uri: str | None,
        event_id: str,
        batch_files: int,
        batch_bytes: int = 25 * GIB,
        reusable: Mapping[str, tuple[str, int, str | None]] | None = None,
    ):
        """``reusable``: a resumed run's targets already there whole, each with the source,
        size and change marker its failed attempt planned (``ferry.lifecycle.attempts``)."""
        self.uri = uri
        self.reusable = reusable or {}
        self._reuse: list[int] = []
        self._batch_tasks = 0
        self._digests: list[str] = []
        self._reused_files = 0
        self._reused_bytes = 0
        self.event_id = event_id
        self.batch_files = batch_files
        self.batch_bytes = batch_bytes
        self._out = fs.open_output(uri) if uri else None
        self._roots: list[dict[str, Any]] = []
        self._in_batch = 0
        self._batch_bytes = 0
        self._batch_text = 0
        self._batches = 0
        self._files = 0
        self._bytes = 0
        self._sources: set[str] = set()
        self._targets: set[str] = set()
        self._rewrites: dict[str, Any] | None = None
        self._rewrite_count = 0
        self._rewrite_bytes = 0
        self._batch_rewrite_bytes = 0
        if self._out is not None:
            self._out.write(b"[")

    def add(self, root: CopyRoot, files: Iterable[FileEntry]) -> None:
        """Add every file found below ``root.source`` (URIs as ``fs.list_files`` gives them)."""
        base = root.source.rstrip("/")
        root_text = len(json.dumps({"source": root.source, "target": root.target, "files": []}))
        current: list[list[Any]] | None = None
        for entry in files:
            relative = entry.uri[len(base) + 1 :]
            # The change marker (the ETag on S3) pins each copy to the version planned.
            item = [relative, entry.size, entry.marker] if entry.marker else [relative, entry.size]
            text = len(json.dumps(item)) + 2
            if self._in_batch and (
                self._batch_bytes + entry.size > self.batch_bytes
                or self._batch_text + text + (root_text if current is None else 0)
                > BATCH_TEXT_LIMIT
            ):
                self._flush()
                current = None
            if current is None:
                current = []
                self._roots.append({"source": root.source, "target": root.target, "files": current})
                self._sources.add(fs.scheme_of(root.source))
                self._targets.add(fs.scheme_of(root.target))
                self._batch_text += root_text
            current.append(item)
            if self.reusable:
                target = fs.join(root.target, relative)
                if self.reusable.get(target) == (entry.uri, entry.size, entry.marker):
                    self._reuse.append(self._batch_tasks)
                    self._reused_files += 1
                    self._reused_bytes += entry.size
            self._batch_tasks += 1
            self._files += 1
            self._bytes += entry.size
            self._in_batch += 1
            self._batch_bytes += entry.size
            self._batch_text += text
            if self._in_batch == self.batch_files:
                self._flush()
                current = None

    def add_rewrites(self, context: dict[str, Any], rewrites: Iterable[Rewrite]) -> None:
        """Add work items that share ``context`` (one context per batch: a batch holding
        another's is closed first)."""
        if self._rewrites is not None:
            self._flush()
        context_text = len(json.dumps({"context": context, "items": []})) + 16
        current: list[list[Any]] | None = None
        for rewrite in rewrites:
            text = len(json.dumps(rewrite.item)) + 2
            if self._in_batch and (
                self._batch_bytes + rewrite.size > self.batch_bytes
                or (
                    self._batch_rewrite_bytes
                    and self._batch_rewrite_bytes + rewrite.size > REWRITE_BATCH_BYTES
                )
                or self._batch_text + text + (context_text if current is None else 0)
                > BATCH_TEXT_LIMIT
            ):
                self._flush()
                current = None
            if current is None:
                current = []
                self._rewrites = {"context": context, "items": current}
                self._batch_text += context_text
            self._sources.add(fs.scheme_of(rewrite.source))
            self._targets.add(fs.scheme_of(rewrite.target))
            current.append(rewrite.item)
            self._rewrite_count += 1
            self._rewrite_bytes += rewrite.size
            self._in_batch += 1
            self._batch_bytes += rewrite.size
            self._batch_rewrite_bytes += rewrite.size
            self._batch_text += text
            if self._in_batch == self.batch_files:
                self._flush()
                current = None

    def _flush(self) -> None:
        if not self._roots and self._rewrites is None:
            return
        if self._out is not None:
            batch: dict[str, Any] = {
                "eventId": self.event_id,
                "batch": self._batches,
                "roots": self._roots,
            }
            if self._rewrites is not None:
                batch[REWRITES] = self._rewrites
            batch[DIGEST] = batch_digest(batch)
            self._digests.append(batch[DIGEST])
            if self._reuse:
                batch[REUSE] = self._reuse
            self._out.write((b"," if self._batches else b"") + json.dumps(batch).encode())
        self._batches += 1
        self._roots = []
        self._reuse = []
        self._batch_tasks = 0
        self._rewrites = None
        self._batch_rewrite_bytes = 0
        self._in_batch = 0
        self._batch_bytes = 0
        self._batch_text = 0

    def close(self) -> ManifestSummary:
        self._flush()
        if self._out is not None:
            self._out.write(b"]")
            self._out.close()
        return ManifestSummary(
            self._files,
            self._bytes,
            self._batches,
            tuple(sorted(self._sources)),
            tuple(sorted(self._targets)),
            self._rewrite_count,
            self._rewrite_bytes,
            tuple(self._digests),
            self._reused_files,
            self._reused_bytes,
        )

    def abandon(self) -> None:
        """Close without completing (planning failed); the partial file is not used."""
        if self._out is not None:
            self._out.close()


def batch_tasks(batch: dict[str, Any]) -> list[CopyTask]:
    """The files of one batch as copy tasks (source, target, size, change marker)."""
    return [
        CopyTask(
            fs.join(root["source"], path),
            fs.join(root["target"], path),
            size,
            marker[0] if marker else None,
        )
        for root in batch["roots"]
        for path, size, *marker in root["files"]
    ]


def whole_at_target(tasks: Sequence[CopyTask]) -> tuple[list[CopyTask], list[CopyTask]]:
    """``(whole, pending)``: the tasks whose target is there with the planned size, the rest.

    One listing per target folder, not a request per object. Only a copy's own new folder
    is asked (a snapshot folder named by its event): what is there was written by a copy of
    this event, and a copier writes a target whole or not at all (S3 stores an object once
    complete; the inline copier renames a local file into place once written).
    """
    folders: dict[str, dict[str, int]] = {}
    whole, pending = [], []
    for task in tasks:
        folder = task.target.rsplit("/", 1)[0]
        if folder not in folders:
            folders[folder] = {entry.uri: entry.size for entry in fs.list_files(folder)}
        (whole if folders[folder].get(task.target) == task.size else pending).append(task)
    return whole, pending


def batch_work(batch: Mapping[str, Any]) -> tuple[list[CopyTask], list[CopyTask]]:
    """``(reused, to_copy)`` of one batch: the files a failed attempt of the same event
    already copied from the same source version (``REUSE``) and still whole at the target,
    and every other file."""
    tasks = batch_tasks(dict(batch))
    reuse = reused_tasks(batch, tasks)
    if not reuse:
        return [], tasks
    whole, _ = whole_at_target([task for index, task in enumerate(tasks) if index in reuse])
    kept = {task.target for task in whole}
    return whole, [task for task in tasks if task.target not in kept]


def read_batches(uri: str) -> list[dict[str, Any]]:
    return json.loads(fs.read_bytes(uri))


def read_manifest(uri: str) -> Manifest:
    """The whole manifest as one list of tasks (the inline copier and the Spark job)."""
    batches = read_batches(uri)
    event_id = batches[0]["eventId"] if batches else ""
    return Manifest(event_id, tuple(task for batch in batches for task in batch_tasks(batch)))


def write_manifest(uri: str, manifest: Manifest, batch_files: int = 1000) -> None:
    """Write an already-listed manifest (tools and tests): one root per target folder."""
    writer = ManifestWriter(uri, manifest.event_id, batch_files)
    for task in manifest.tasks:
        root = CopyRoot(task.source.rpartition("/")[0], task.target.rpartition("/")[0])
        writer.add(root, [FileEntry(task.source, task.size, None, task.marker)])
    writer.close()


def batch_digest(batch: Mapping[str, Any]) -> str:
    """What a batch copies and writes, as a short digest: every file's source, target, size
    and change marker, and its rewrites. A resumed run re-plans its event's manifest; a copy
    record made for another batch of the same index must not count for this one."""
    content = {"roots": batch.get("roots"), REWRITES: batch.get(REWRITES)}
    text = json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(text).hexdigest()[:16]


def reused_tasks(batch: Mapping[str, Any], tasks: Sequence[CopyTask]) -> set[int]:
    """The indexes of ``tasks`` (the batch's) a failed attempt already copied (``REUSE``)."""
    indexes = batch.get(REUSE) or []
    assert isinstance(indexes, list)
    return {index for index in indexes if 0 <= index < len(tasks)}


def batch_rewrites(batch: dict[str, Any]) -> tuple[dict[str, Any], list[list[Any]]]:
    """A batch's rewrites: their shared context and their work items (none: ``({}, [])``)."""
    rewrites = batch.get(REWRITES)
    if not rewrites:
        return {}, []
    return rewrites["context"], rewrites["items"]
