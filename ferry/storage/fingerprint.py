"""Data fingerprints: has a partition's data changed since it was replicated?

A fingerprint is computed from a listing alone — each file's path relative to its
partition, its size, and the store's own change marker (the ETag on S3, the modification
time elsewhere) — so deciding what changed reads no data. It is stored on the replica
partition (``ferry.partition.fingerprint``; ``ferry.table.fingerprint`` for an unpartitioned
table) and compared with the source's on the next run.

Circus Train's diff stored a checksum of the same kind. Its users met two problems, which
this avoids: S3 "directory" modification times made every partition look changed (only
files count here), and listing a large table one partition at a time was slow (a table
whose partitions live below its own location is listed in one walk, grouped by partition).
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from ferry.core.errors import CopyError
from ferry.storage import fs
from ferry.storage.listing import FileEntry

VERSION = "v1"
_MODULUS = 2**256


@dataclass(frozen=True)
class Fingerprint:
    """What was listed: number of files, bytes, and a digest of (path, size, marker)."""

    files: int
    bytes: int
    digest: str

    def __str__(self) -> str:
        return f"{VERSION}:{self.files}:{self.bytes}:{self.digest}"


class FingerprintBuilder:
    """Adds files in any order: the digest is a sum of per-file hashes (order-free)."""

    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0
        self._sum = 0

    def add(self, relative_path: str, size: int, marker: str | None) -> None:
        line = f"{relative_path}\0{size}\0{marker or ''}".encode()
        self._sum = (self._sum + int.from_bytes(hashlib.sha256(line).digest(), "big")) % _MODULUS
        self.files += 1
        self.bytes += size

    def value(self) -> Fingerprint:
        return Fingerprint(self.files, self.bytes, f"{self._sum:064x}")


def of_entries(location: str, entries: Iterable[FileEntry]) -> Fingerprint:
    """The fingerprint of the files listed below ``location``."""
    builder = FingerprintBuilder()
    base = location.rstrip("/") + "/"
    for entry in entries:
        # A listing spells its URIs as its location plus the path below: a slice, not a parse.
        if entry.uri.startswith(base):
            relative = entry.uri[len(base) :]
        else:
            relative = fs.relative_path(entry.uri, location) or ""
        builder.add(relative, entry.size, entry.marker)
    return builder.value()


#: Told each location's fingerprint and files once they are all listed: one location's at a time.
Listed = Callable[[str, Fingerprint, list[FileEntry]], None]


def of_locations(
    locations: Sequence[str],
    threads: int = 8,
    root: str | None = None,
    listed: Listed | None = None,
) -> dict[str, Fingerprint]:
    """The fingerprint of each location, by location, from one listing of each file.

    With ``root`` (a table's own location, given when every partition is selected),
    locations below it are fingerprinted from one streamed walk of ``root``, far faster
    than a listing per partition on a table of many partitions; the others are listed one
    by one on a thread pool, a few per thread ahead. ``listed`` is told each location's
    files as soon as they are known, so a caller can use the same listing (the plan writes
    its manifest from it) while memory holds only a few locations' files.
    """
    printed: dict[str, Fingerprint] = {}

    def done(location: str, value: Fingerprint, entries: list[FileEntry]) -> None:
        printed[location] = value
        if listed is not None:
            listed(location, value, entries)

    below: dict[str, str] = {}  # relative path below root → location
    if root:
        for location in dict.fromkeys(locations):
            relative = fs.relative_path(location, root)
            if relative:  # the root itself is not a partition folder
                below[relative] = location
    if len(below) > 1:
        _walk(root, below, done)  # type: ignore[arg-type]
    else:
        below = {}
    walked = set(below.values())
    apart = [location for location in dict.fromkeys(locations) if location not in walked]

    def listing(location: str) -> list[FileEntry]:
        try:
            return fs.list_files(location)
        except OSError as error:
            raise CopyError(f"cannot list source files at {location}: {error}") from None

    def take(pending: deque) -> None:
        location, future = pending.popleft()
        entries = future.result()
        done(location, of_entries(location, entries), entries)

    with ThreadPoolExecutor(max(1, threads), thread_name_prefix="ferry-fingerprint") as pool:
        pending: deque = deque()
        for location in apart:
            pending.append((location, pool.submit(listing, location)))
            if len(pending) >= max(1, threads) * 4:
                take(pending)
        while pending:
            take(pending)
    return {location: printed[location] for location in locations}


def _walk(root: str, below: dict[str, str], done: Callable[..., None]) -> None:
    """Fingerprint the locations ``below`` root (by their path below it) from one walk.

    The walk gives the files below one folder together, so each location is complete (and
    handed to ``done``) when the walk moves on; locations with no file are empty.
    """
    depths = sorted({relative.count("/") + 1 for relative in below})
    base = root.rstrip("/") + "/"  # how fs.iter_files spells every URI below root
    # A location spelled otherwise than the walk (file:/p and file:///p) gets its own spelling.
    respelled = {
        location: location.rstrip("/") + "/"
        for relative, location in below.items()
        if location.rstrip("/") != base + relative
    }
    finished: set[str] = set()
    current: str | None = None
    inside = "\0"  # the walk's spelling of the current location's folder, with a slash
    builder = FingerprintBuilder()
    entries: list[FileEntry] = []

    def finish() -> None:
        if current is None:
            return
        if current in finished:
            raise RuntimeError(f"the walk of {root} gave the files of {current} apart")
        finished.add(current)
        files = entries
        if current in respelled:
            files = [replace(e, uri=respelled[current] + e.uri[len(inside) :]) for e in entries]
        done(current, builder.value(), files)

    try:
        for entry in fs.iter_files(root):
            if not entry.uri.startswith(inside):  # the walk has moved on to another folder
                parts = entry.uri[len(base) :].split("/")
                for depth in depths:
                    location = below.get("/".join(parts[:depth])) if depth < len(parts) else None
                    if location is not None:
                        break
                else:
                    continue  # a file of the table's folder that is no selected partition's
                finish()
                current, builder, entries = location, FingerprintBuilder(), []
                inside = base + "/".join(parts[:depth]) + "/"
            builder.add(entry.uri[len(inside) :], entry.size, entry.marker)
            entries.append(entry)
    except OSError as error:
        raise CopyError(f"cannot list source files at {root}: {error}") from None
    finish()
    for location in below.values():
        if location not in finished:
            done(location, FingerprintBuilder().value(), [])
