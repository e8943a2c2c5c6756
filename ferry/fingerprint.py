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
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ferry import fs

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


def of_entries(location: str, entries: Iterable[fs.FileEntry]) -> Fingerprint:
    """The fingerprint of the files listed below ``location``."""
    builder = FingerprintBuilder()
    for entry in entries:
        builder.add(fs.relative_path(entry.uri, location) or "", entry.size, entry.marker)
    return builder.value()


def of_locations(
    locations: Sequence[str], threads: int = 8, root: str | None = None
) -> dict[str, Fingerprint]:
    """The fingerprint of each location, by location.

    With ``root`` (a table's own location, given when every partition is selected),
    locations below it are fingerprinted from one walk of ``root`` grouped by location,
    far faster than a listing per partition on a table of many partitions; the others
    are listed one by one on a thread pool.
    """
    builders = {location: FingerprintBuilder() for location in locations}
    below: dict[str, str] = {}  # relative path below root → location
    if root:
        for location in locations:
            relative = fs.relative_path(location, root)
            if relative:  # the root itself is not a partition folder
                below[relative] = location
    if len(below) > 1:
        depths = sorted({relative.count("/") + 1 for relative in below})
        # The walk's URIs are spelled as the root's normal form: a slice, not a parse each.
        prefix = fs.normalise(root) + "/"  # type: ignore[arg-type]
        for entry in fs.list_files(root):  # type: ignore[arg-type]
            if entry.uri.startswith(prefix):
                relative = entry.uri[len(prefix) :]
            else:
                relative = fs.relative_path(entry.uri, root) or ""  # type: ignore[arg-type]
            parts = relative.split("/")
            for depth in depths:
                location = below.get("/".join(parts[:depth]))
                if location is not None and depth < len(parts):
                    builders[location].add("/".join(parts[depth:]), entry.size, entry.marker)
                    break
    else:
        below = {}
    walked = set(below.values())
    listed_apart = [location for location in locations if location not in walked]

    def listing(location: str) -> tuple[str, Fingerprint]:
        return location, of_entries(location, fs.list_files(location))

    with ThreadPoolExecutor(max(1, threads), thread_name_prefix="ferry-fingerprint") as pool:
        apart = dict(pool.map(listing, listed_apart))
    return {
        location: apart[location] if location in apart else builders[location].value()
        for location in locations
    }
