"""Checks made before a replication writes anything: can the replica location be written?

Planning only reads, so a dry run learns everything about a replication except whether the
target accepts writes (a missing bucket, a read-only mount, no ``s3:PutObject``).
``check_writable`` finds out by writing a small probe below the replica table location and
deleting it again, leaving the location as it found it: no probe, no folder, no S3 folder
marker. The probe's name starts with ``.`` so that Hive, Spark and Ferry's own listing of
snapshots would skip it even if a crash left it behind.
"""

from __future__ import annotations

import os
import uuid
from typing import Any
from urllib.parse import urlparse

from pyarrow import fs as pafs

from ferry.core.errors import TargetNotWritableError
from ferry.storage import file_systems, fs

PROBE_PREFIX = ".ferry-write-probe-"


def check_writable(location: str, s3: Any | None = None) -> None:
    """Raise ``TargetNotWritableError`` unless a file can be written and deleted below ``location``.

    ``s3`` is a boto3 S3 client for ``s3://`` locations (one is built when omitted): pyarrow
    deletes an object by recreating its folder's marker object when the folder becomes
    empty, which would leave an empty ``location/`` object behind; S3's own DeleteObject
    leaves nothing.
    """
    probe = fs.join(location, f"{PROBE_PREFIX}{uuid.uuid4().hex}")
    filesystem, path = fs.resolve(probe)
    is_s3 = fs.scheme_of(location) in fs.S3_SCHEMES
    # Folders the write creates (file systems with real folders); removed again afterwards.
    created = [] if is_s3 else _missing_folders(filesystem, path.rsplit("/", 1)[0])
    try:
        fs.write_bytes(probe, b"")
    except OSError as error:
        _remove_empty_folders(filesystem, created)
        raise TargetNotWritableError(
            f"cannot write replica table location {location}: {_reason(error)}"
        ) from None
    try:
        if is_s3:
            _delete_s3_object(probe, s3)
        else:
            filesystem.delete_file(path)
    except Exception as error:  # S3 AccessDenied is a botocore error, not an OSError
        raise TargetNotWritableError(
            f"wrote {probe} but cannot delete it ({_reason(error)}); Ferry deletes to clean up "
            "failed copies and retired snapshots"
        ) from None
    _remove_empty_folders(filesystem, created)


def _missing_folders(filesystem: pafs.FileSystem, folder: str) -> list[str]:
    """``folder`` and its ancestors that do not exist yet, deepest first."""
    missing: list[str] = []
    while folder and folder not in ("/", "."):
        try:
            if filesystem.get_file_info(folder).type != pafs.FileType.NotFound:
                break
        except OSError:  # e.g. a path through a file: the write will fail and say why
            break
        missing.append(folder)
        parent = folder.rsplit("/", 1)[0]
        if parent == folder:
            break
        folder = parent
    return missing


def _remove_empty_folders(filesystem: pafs.FileSystem, folders: list[str]) -> None:
    """Remove the folders the probe created, deepest first, each only while it is empty.

    Locally ``os.rmdir`` refuses a folder that is not empty, so a file someone else wrote
    meanwhile is never removed; elsewhere the folder is listed first.
    """
    for folder in folders:
        try:
            if file_systems.is_local(filesystem):
                os.rmdir(folder)
            elif not filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True)):
                filesystem.delete_dir(folder)
        except OSError:
            return  # not empty (someone else writes there now) or already gone


def _delete_s3_object(uri: str, s3: Any | None) -> None:
    if s3 is None:
        from ferry.storage.aws import AwsClients

        s3 = AwsClients().client("s3")
    parsed = urlparse(uri)
    s3.delete_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))


def _reason(error: BaseException) -> str:
    # pyarrow's messages repeat the path and add a detail line; keep the first line.
    return str(error).splitlines()[0] if str(error) else type(error).__name__
