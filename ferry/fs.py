"""One file-system layer for every scheme Ferry copies between (``pyarrow.fs``).

``file://`` and ``s3://`` (also ``s3a://``, ``s3n://``) are built here so S3 honours the
standard ``AWS_ENDPOINT_URL`` variables like boto3 does; other schemes (``hdfs://``, ``gs://``)
go through ``pyarrow.fs.FileSystem.from_uri``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlparse

from pyarrow import fs as pafs

S3_SCHEMES = ("s3", "s3a", "s3n")


@dataclass(frozen=True)
class FileEntry:
    """A file found under a location: its full URI, size and modification time."""

    uri: str
    size: int
    mtime_ns: int | None


def local_uri(path: str | os.PathLike[str]) -> str:
    """``file://`` plus the absolute path, as Hive writes locations: never percent-encoded.

    Hive escapes partition values into folder names with ``%XX`` (``k=a%2Fb``), so a
    location's path is taken literally; ``Path.as_uri()`` would encode ``=`` and ``%``.
    """
    return "file://" + os.path.abspath(path)


def scheme_of(uri: str) -> str:
    return urlparse(uri).scheme.lower() or "file"


def join(base: str, *parts: str) -> str:
    """Join URI path segments with exactly one slash between them."""
    result = base.rstrip("/")
    for part in parts:
        part = part.strip("/")
        if part:
            result = f"{result}/{part}"
    return result


def relative_path(location: str, base: str) -> str | None:
    """``location``'s path below ``base``, or None when it is not below it."""
    location, base = _normalise(location), _normalise(base)
    if location == base:
        return ""
    if location.startswith(base + "/"):
        return location[len(base) + 1 :]
    return None


def _normalise(uri: str) -> str:
    parsed = urlparse(uri.rstrip("/"))
    scheme = parsed.scheme.lower()
    if scheme in S3_SCHEMES:
        scheme = "s3"
    if scheme in ("", "file"):
        return "file://" + os.path.normpath(parsed.path)
    return f"{scheme}://{parsed.netloc}{parsed.path}"


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The file system and the path within it for ``uri``."""
    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file"):
        return _local(), parsed.path
    if scheme in S3_SCHEMES:
        return _s3(_s3_endpoint(), _region()), f"{parsed.netloc}{parsed.path}".rstrip("/")
    filesystem, path = pafs.FileSystem.from_uri(uri)
    return filesystem, path


def is_local(filesystem: pafs.FileSystem) -> bool:
    return filesystem.type_name == "local"


def open_output(uri: str) -> pafs.NativeFile:
    """A stream writing ``uri``; on a local file system its folder is created first.

    (Object stores have no folders, and an empty "folder" marker object would only
    clutter the bucket.)
    """
    filesystem, path = resolve(uri)
    if is_local(filesystem):
        filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
    return filesystem.open_output_stream(path)


def write_bytes(uri: str, data: bytes) -> None:
    with open_output(uri) as out:
        out.write(data)


def read_bytes(uri: str) -> bytes:
    filesystem, path = resolve(uri)
    with filesystem.open_input_file(path) as handle:
        return handle.read()


def list_files(location: str) -> list[FileEntry]:
    """Every file below ``location`` (recursively); none when the location does not exist."""
    filesystem, path = resolve(location)
    selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
    base = location.rstrip("/")
    entries = []
    for info in filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        relative = info.path[len(path.rstrip("/")) + 1 :]
        entries.append(FileEntry(join(base, relative), info.size, info.mtime_ns))
    entries.sort(key=lambda entry: entry.uri)
    return entries


def delete_tree(location: str) -> None:
    """Delete ``location`` and everything below it; nothing when it does not exist."""
    filesystem, path = resolve(location)
    info = filesystem.get_file_info(path)
    if info.type == pafs.FileType.Directory:
        filesystem.delete_dir(path)
    elif info.type == pafs.FileType.File:
        filesystem.delete_file(path)
    elif not is_local(filesystem):
        # S3 has no directories: objects below the prefix may exist without a marker.
        for entry in filesystem.get_file_info(
            pafs.FileSelector(path, recursive=True, allow_not_found=True)
        ):
            if entry.type == pafs.FileType.File:
                filesystem.delete_file(entry.path)


def _s3_endpoint() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")


def _region() -> str | None:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")


@lru_cache(maxsize=1)
def _local() -> pafs.LocalFileSystem:
    return pafs.LocalFileSystem()


@lru_cache(maxsize=8)
def _s3(endpoint: str | None, region: str | None) -> pafs.S3FileSystem:
    options: dict[str, object] = {}
    if region:
        options["region"] = region
    if endpoint:
        parsed = urlparse(endpoint)
        options["endpoint_override"] = parsed.netloc or parsed.path
        options["scheme"] = parsed.scheme or "https"
        # Emulators serve every bucket from one host; virtual-host addressing would not resolve.
        options["force_virtual_addressing"] = False
    # Open objects lazily: a small file becomes one PutObject instead of a multipart upload's
    # three requests (errors such as a missing bucket then surface on write or close).
    return pafs.S3FileSystem(allow_delayed_open=True, **options)
