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

Each copier writes a *copy record* per batch it finished (``copy_record_uri``); Commit
commits only when every batch has one, and a retried copy skips the batches already
recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ferry import fs
from ferry.copier import CopyTask, Manifest

RECORDS = "copied"


@dataclass(frozen=True)
class CopyRoot:
    """A source folder (a partition, or an unpartitioned table) and where it goes."""

    source: str
    target: str


@dataclass(frozen=True)
class ManifestSummary:
    """What planning learned about the files, without the files."""

    files: int
    bytes: int
    batches: int
    #: Every scheme a source or target file has (the copier choice reads these).
    source_schemes: tuple[str, ...] = ()
    target_schemes: tuple[str, ...] = ()


#: A batch's JSON at most: each is one child execution's input of the S3 copy Map, which Step
#: Functions limits to 256 KiB with the few fields its ItemSelector adds.
BATCH_TEXT_LIMIT = 200 * 1024
GIB = 1024**3


class ManifestWriter:
    """Writes batches as files are added; with no URI it only counts (dry runs, plans).

    A batch closes at ``batch_files`` files, at ``batch_bytes`` bytes (a file larger than
    that is a batch of its own), or before its text would pass ``BATCH_TEXT_LIMIT``.
    """

    def __init__(
        self, uri: str | None, event_id: str, batch_files: int, batch_bytes: int = 25 * GIB
    ):
        self.uri = uri
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
        if self._out is not None:
            self._out.write(b"[")

    def add(self, root: CopyRoot, files: Iterable[fs.FileEntry]) -> None:
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
            self._files += 1
            self._bytes += entry.size
            self._in_batch += 1
            self._batch_bytes += entry.size
            self._batch_text += text
            if self._in_batch == self.batch_files:
                self._flush()
                current = None

    def _flush(self) -> None:
        if not self._roots:
            return
        if self._out is not None:
            batch = {"eventId": self.event_id, "batch": self._batches, "roots": self._roots}
            self._out.write((b"," if self._batches else b"") + json.dumps(batch).encode())
        self._batches += 1
        self._roots = []
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
        writer.add(root, [fs.FileEntry(task.source, task.size, None, task.marker)])
    writer.close()


def copy_record_uri(manifest_uri: str, batch: int) -> str:
    return fs.join(manifest_uri.rsplit("/", 1)[0], RECORDS, f"{batch:06d}.json")


def write_copy_record(manifest_uri: str, batch: dict[str, Any], files: int, size: int) -> None:
    """Record that ``batch`` is copied and verified at the target."""
    record = {"eventId": batch["eventId"], "batch": batch["batch"], "files": files, "bytes": size}
    fs.write_bytes(copy_record_uri(manifest_uri, batch["batch"]), json.dumps(record).encode())


def recorded_batches(manifest_uri: str) -> set[int]:
    """The batches whose copy record exists."""
    folder = fs.join(manifest_uri.rsplit("/", 1)[0], RECORDS)
    return {
        int(entry.uri.rsplit("/", 1)[1].removesuffix(".json"))
        for entry in fs.list_files(folder)
        if entry.uri.endswith(".json")
    }
