"""Listings: the files and folders below a location, as ``FileEntry`` values, streamed.

S3 is listed with its own requests (``ListObjectsV2``, whose pages give each object's ETag,
the change marker the copiers pin a copy to); other file systems through ``pyarrow.fs``,
whose listings run without the GIL, so a walk lists the next folders on a thread while its
reader works on the last ones. ``ferry.storage.file_systems`` decides which file system and
client a location gets; here is what is done with them.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from pyarrow import fs as pafs

from ferry.storage.s3 import Refusal, error_code, refusal

#: A streamed listing (``walk``) hands its reader batches of at least this many files
#: (a folder's files are never split), listed at most this many batches ahead.
WALK_BATCH = 1000
WALK_AHEAD = 4


@dataclass(frozen=True)
class FileEntry:
    """A file found under a location: its full URI, size, modification time, change marker.

    ``marker`` is the store's own sign that the content changed: the ETag on S3, the
    modification time elsewhere (what a listing gives without reading a byte).
    """

    uri: str
    size: int
    mtime_ns: int | None
    marker: str | None = None


def walk(filesystem: pafs.FileSystem, path: str, location: str) -> Iterator[FileEntry]:
    """Every file below ``path`` of ``filesystem`` (spelled ``location`` plus their path below
    it), streamed: the folders directly below are listed whole, in name order, by a thread
    that runs a few batches ahead of the reader (``WALK_BATCH``, ``WALK_AHEAD``)."""
    base = location.rstrip("/")
    selector = pafs.FileSelector(path, recursive=False, allow_not_found=True)
    try:
        children = sorted(filesystem.get_file_info(selector), key=lambda info: info.path)
    except NotADirectoryError:
        return

    def batches() -> Iterator[list[FileEntry]]:
        batch: list[FileEntry] = []
        for info in children:
            uri = f"{base}/{info.path.rstrip('/').rsplit('/', 1)[-1]}"
            if info.type == pafs.FileType.Directory:
                batch.extend(files_below(filesystem, info.path, uri))
            elif info.type == pafs.FileType.File:
                batch.append(entry_of(uri, info))
            # Whole batches, not a folder each: a hand-over between threads costs more
            # than listing a folder of one file.
            if len(batch) >= WALK_BATCH:
                yield batch
                batch = []
        yield batch

    for batch in ahead(batches(), WALK_AHEAD):
        yield from batch


def files_below(filesystem: pafs.FileSystem, path: str, base: str) -> list[FileEntry]:
    """The files below ``path`` (spelled ``base`` plus their path below it), by URI."""
    selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
    cut = len(path.rstrip("/")) + 1
    entries = [
        entry_of(f"{base}/{info.path[cut:]}", info)
        for info in filesystem.get_file_info(selector)
        if info.type == pafs.FileType.File
    ]
    entries.sort(key=lambda entry: entry.uri)
    return entries


def entry_of(uri: str, info: pafs.FileInfo) -> FileEntry:
    """A listed file of a file system other than S3: its change marker is its modification time."""
    return FileEntry(uri, info.size, info.mtime_ns, str(info.mtime_ns))


def ahead(items: Iterator[Any], limit: int) -> Iterator[Any]:
    """``items``, produced on a thread up to ``limit`` ahead of the reader.

    pyarrow lists without the GIL, so the next folders are listed while the reader works.
    The thread stops when the reader does; its error is raised to the reader.
    """
    ready: queue.Queue = queue.Queue(limit)
    stop = threading.Event()
    end = object()

    def hand(item: Any) -> None:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def produce() -> None:
        try:
            for item in items:
                hand([item])
                if stop.is_set():
                    return
            hand(end)
        except BaseException as error:  # handed to the reader, who raises it
            hand(error)

    thread = threading.Thread(target=produce, name="ferry-walk", daemon=True)
    thread.start()
    try:
        while (item := ready.get()) is not end:
            if isinstance(item, BaseException):
                raise item
            yield item[0]
    finally:
        stop.set()
        thread.join()


def folders_below(filesystem: pafs.FileSystem, path: str, location: str) -> list[FileEntry]:
    """The folders directly below ``path`` of ``filesystem`` (spelled ``location`` plus their
    name), by URI: each entry's ``mtime_ns`` is the folder's own where the file system has
    one, else None; ``size`` is 0."""
    selector = pafs.FileSelector(path, recursive=False, allow_not_found=True)
    base = location.rstrip("/")
    folders = [
        FileEntry(f"{base}/{info.path.rstrip('/').rsplit('/', 1)[-1]}", 0, info.mtime_ns)
        for info in filesystem.get_file_info(selector)
        if info.type == pafs.FileType.Directory
    ]
    return sorted(folders, key=lambda entry: entry.uri)


def s3_objects_below(client: Any, location: str) -> Iterator[FileEntry]:
    """The objects below ``location`` (``s3://bucket/prefix``), with ``client`` (its bucket's):
    S3's own listing (ListObjectsV2, 1000 keys a page): it gives each object's ETag.

    Folder marker objects (keys ending in ``/``) are not files.
    """
    parsed = urlparse(location)
    bucket, prefix = parsed.netloc, parsed.path.lstrip("/").rstrip("/")
    base = location.rstrip("/")
    pages = client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=f"{prefix}/" if prefix else ""
    )
    try:
        for page in pages:
            for item in page.get("Contents", []):
                key = item["Key"]
                if key.endswith("/"):
                    continue
                relative = key[len(prefix) + 1 :] if prefix else key
                modified = item.get("LastModified")
                yield FileEntry(
                    f"{base}/{relative.lstrip('/')}",  # as ``fs.join`` spells it
                    item["Size"],
                    int(modified.timestamp() * 1e9) if modified else None,
                    item.get("ETag", "").strip('"') or None,
                )
    except Exception as error:  # botocore's errors, as the OSError pyarrow would raise
        if error_code(error) == "NoSuchBucket":
            raise FileNotFoundError(f"no bucket {bucket}") from None
        raise OSError(str(error).splitlines()[0]) from None


def delete_s3_objects(client: Any, bucket: str, key: str) -> None:
    """Delete the object ``key`` and every object below ``key/`` with S3's own requests
    (``DeleteObjects``, 1000 keys a request); ``OSError`` names the first refused."""
    key = key.rstrip("/")
    keys = []
    if key:
        try:
            client.head_object(Bucket=bucket, Key=key)
            keys.append(key)
        except client.exceptions.ClientError as error:
            if refusal(error) is not Refusal.NOT_FOUND:
                raise
    paginator = client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=f"{key}/" if key else ""):
        keys.extend(item["Key"] for item in page.get("Contents", []))
    for start in range(0, len(keys), 1000):  # DeleteObjects takes 1000 keys at most
        batch = keys[start : start + 1000]
        reply = client.delete_objects(
            Bucket=bucket,
            Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True},
        )
        errors = reply.get("Errors") or []
        if errors:
            first = errors[0]
            raise OSError(
                f"could not delete s3://{bucket}/{first.get('Key')}: "
                f"{first.get('Code')} {first.get('Message', '')}".rstrip()
                + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
            )
