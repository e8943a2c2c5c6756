"""Files by URI, for the domain: one spelling per location, and the process's file systems.

The domain reads, writes and lists by URI and nothing else (``read_bytes``, ``list_files``,
``delete_tree``, ...): these functions use the process default file systems
(``ferry.storage.file_systems.FileSystems``) that ``configure`` sets. Nothing here reads the
environment. Where S3 is (AWS, or an emulator's endpoint) is decided at the program's edge --
the CLI's ``main``, the Lambda runtime's settings, the Spark job's ``main`` -- which hands
``S3Settings`` to ``configure`` once. Until an edge configures it, the default is AWS's own
endpoints.

Locations are compared in one spelling (``normalise``: ``file:/p`` is ``file:///p``,
``s3a://`` is ``s3://``), joined with one slash (``join``), and local ones written as Hive
writes them (``local_uri``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from pyarrow import fs as pafs

from ferry.storage.file_systems import FileSystems, S3Settings
from ferry.storage.listing import FileEntry

# Also the file systems' own answer to which schemes are S3 (``fs.S3_SCHEMES``).
from ferry.storage.s3 import S3_SCHEMES

if TYPE_CHECKING:
    from ferry.storage.aws import AwsClients


def local_uri(path: str | os.PathLike[str]) -> str:
    """``file://`` plus the absolute path, as Hive writes locations: never percent-encoded.

    Hive escapes partition values into folder names with ``%XX`` (``k=a%2Fb``), so a
    location's path is taken literally; ``Path.as_uri()`` would encode ``=`` and ``%``.
    """
    return "file://" + os.path.abspath(path)


def nearest_existing(path: os.PathLike[str] | str) -> tuple[Path, str | None]:
    """The nearest existing file or folder at or above ``path`` (absolute), and None; or the
    folder above it that cannot be searched, and why (nothing below it can be reached, and
    ``Path.exists`` would raise ``PermissionError`` there)."""
    folder = Path(path).absolute()
    blocked = False
    while True:
        try:
            folder.stat()
        except PermissionError:
            blocked = True
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError as error:  # a name too long, a loop of links
            return folder, f"{folder}: {error.strerror}"
        else:
            return folder, f"{folder} cannot be searched (permission denied)" if blocked else None
        if folder == folder.parent:
            return folder, None
        folder = folder.parent


def why_not_creatable(path: os.PathLike[str] | str) -> str | None:
    """Why a local file or folder could not be created at ``path``, or None when it could:
    the nearest existing folder above it must be a folder, and writable."""
    folder, problem = nearest_existing(path)
    if problem:
        return problem
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not writable"
    return None


def scheme_of(uri: str) -> str:
    return urlparse(uri).scheme.lower() or "file"


def object_location(uri: str) -> tuple[str, str]:
    """``(bucket, key)`` of an ``s3://`` URI, as Step Functions' ``ItemReader`` and
    ``ResultWriter`` name an object; ``("", path)`` of a local one (the in-process driver's
    work folder), which ``object_uri`` turns back."""
    bucket, _, key = uri.split("://", 1)[1].partition("/")
    return bucket, key


def object_uri(bucket: str, key: str) -> str:
    """The URI of ``object_location``'s ``(bucket, key)``."""
    return f"s3://{bucket}/{key}" if bucket else f"file:///{key.lstrip('/')}"


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
    location, base = normalise(location), normalise(base)
    if location == base:
        return ""
    if location.startswith(base + "/"):
        return location[len(base) + 1 :]
    return None


@lru_cache(maxsize=1 << 16)
def _normalise(uri: str) -> str:
    # Cached: a plan of many partitions compares the same locations many times.
    parsed = urlparse(uri.rstrip("/"))
    scheme = parsed.scheme.lower()
    if scheme in S3_SCHEMES:
        scheme = "s3"
    if scheme in ("", "file"):
        return "file://" + os.path.normpath(parsed.path)
    return f"{scheme}://{parsed.netloc}{parsed.path}"


def normalise(uri: str) -> str:
    """One spelling per location: ``file:/p`` and ``file:///p`` agree, ``s3a://`` is ``s3://``.

    A URI already in its normal form is not parsed: a plan compares hundreds of thousands
    of distinct locations (every partition on both sides, every file of a walk), more than
    the parse's cache holds, and a parse each costs seconds.
    """
    if "?" not in uri and "#" not in uri and not uri.endswith("/"):
        if uri.startswith("s3://"):
            return uri
        if uri.startswith("file:///") and os.path.normpath(uri[7:]) == uri[7:]:
            return uri
        # Hive spells local locations file:/path.
        if uri.startswith("file:/") and uri[6:7] != "/" and os.path.normpath(uri[5:]) == uri[5:]:
            return "file://" + uri[5:]
    return _normalise(uri)


# -- the process default ---------------------------------------------------------------------

_default: FileSystems | None = None
_default_lock = threading.Lock()


def bucket_region(uri: str) -> str | None:
    """The region of an ``s3://`` URI's bucket (looked up once per bucket, the default's)."""
    return default().region_of(urlparse(uri).netloc)


def default() -> FileSystems:
    """The process's file systems: what ``configure`` set, else AWS's own endpoints."""
    global _default
    with _default_lock:
        if _default is None:
            _default = FileSystems()
        return _default


def set_default(file_systems: FileSystems | None) -> FileSystems | None:
    """Make ``file_systems`` the process default (None: unconfigured); returns the one before."""
    global _default
    with _default_lock:
        previous, _default = _default, file_systems
        return previous


def configure(settings: S3Settings, aws: AwsClients | None = None) -> FileSystems:
    """Point the process default at ``settings``, with ``aws``' clients when given (an edge's
    own, so that the process holds one S3 client per region); a no-op (caches kept) when it
    already is."""
    global _default
    with _default_lock:
        if (
            _default is None
            or _default.settings != settings
            or (aws is not None and _default._aws is not aws)
        ):
            _default = FileSystems(settings, aws=aws)
        return _default


def reach_bucket_with(bucket: str, clients: AwsClients) -> None:
    """Reach ``bucket`` with ``clients`` (a role's) in the process default
    (``FileSystems.reach_bucket_with``)."""
    default().reach_bucket_with(bucket, clients)


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The file system and the path within it for ``uri`` (the process default's)."""
    return default().resolve(uri)


def open_output(uri: str) -> pafs.NativeFile:
    """A stream writing ``uri``; on a local file system its folder is created first."""
    return default().open_output(uri)


def write_bytes(uri: str, data: bytes) -> None:
    default().write_bytes(uri, data)


def read_bytes(uri: str, limit: int | None = None) -> bytes:
    """The file's bytes; at most ``limit`` of them when given (its start)."""
    return default().read_bytes(uri, limit)


def list_files(location: str) -> list[FileEntry]:
    """Every file below ``location`` (recursively); none when the location does not exist."""
    return default().list_files(location)


def iter_files(location: str) -> Iterator[FileEntry]:
    """Every file below ``location``, streamed; the files below one folder come together."""
    return default().iter_files(location)


def delete_tree(location: str) -> None:
    """Delete ``location`` and everything below it; nothing when it does not exist."""
    default().delete_tree(location)


def exists(uri: str) -> bool:
    """True when a file or folder is at ``uri``."""
    return default().exists(uri)


def list_folders(location: str) -> list[FileEntry]:
    """The folders directly below ``location``; none when it does not exist."""
    return default().list_folders(location)


#: How a file being written ends (``partial_name``).
PARTIAL = ".ferry-partial"


def partial_name(target: str) -> str:
    """Where the inline copier writes a local file before it renames it to ``target``:
    hidden (a leading dot, which Hive's and Spark's readers skip) in the same folder."""
    folder, _, name = target.rpartition("/")
    return f"{folder}/.{name}{PARTIAL}"
