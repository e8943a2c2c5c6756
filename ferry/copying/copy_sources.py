"""The sources of a copy: a planned file opened for reading and checked as it is read.

``open_source`` opens a task's source where it lives: an S3 object is read with one
``GetObject`` pinned to its planned ETag (``ferry.storage.s3_objects.S3Source``); a local
file is read with its size and modification time checked against the plan; a file of any
other file system pyarrow reaches has its size checked. ``finish`` raises
``VerificationError`` when the source is not the file planned.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any, Protocol

from pyarrow import fs as pafs

from ferry.copying.copy_tasks import CopyTask
from ferry.core.errors import CopyError, ReplicationInterruptedError, VerificationError
from ferry.storage import file_systems, fs
from ferry.storage.s3 import parse_s3_uri
from ferry.storage.s3_objects import S3Source


class Source(Protocol):
    """A planned source file being read: ``read`` up to n bytes, then ``finish`` checks it."""

    def read(self, size: int) -> bytes: ...

    def finish(self) -> None: ...

    def close(self) -> None: ...


def open_source(task: CopyTask, connections: int = 1) -> Source:
    """Open ``task``'s source for reading; ``CopyError`` when it cannot be read."""
    scheme = fs.scheme_of(task.source)
    if scheme in fs.S3_SCHEMES:
        client = fs.default().s3_client(parse_s3_uri(task.source).bucket, connections * 2)
        return S3Source(client, task.source, task.size, task.marker)
    source_fs, source_path = fs.resolve(task.source)
    if file_systems.is_local(source_fs):
        return LocalSource(task, source_path)
    try:
        # open_input_file (not open_input_stream): ranged reads of a known size are far
        # faster against S3 emulators and avoid a second request for the length.
        return ArrowSource(task, source_fs.open_input_file(source_path))
    except OSError as error:
        raise CopyError(f"cannot read source file {task.source}: {reason(error)}") from None


class ArrowSource:
    """A file of any file system pyarrow reaches (HDFS, GCS…): its size is checked."""

    def __init__(self, task: CopyTask, handle: pafs.NativeFile):
        self.task = task
        self._handle = handle
        self._read = 0

    def read(self, size: int) -> bytes:
        try:
            data = self._handle.read(size)
        except OSError as error:
            raise CopyError(
                f"cannot read source file {self.task.source}: {self._describe(error)}"
            ) from None
        self._read += len(data)
        return data

    @staticmethod
    def _describe(error: OSError) -> str:
        return reason(error)

    def finish(self) -> None:
        if self._read != self.task.size:
            raise VerificationError(
                f"{self.task.source}: expected {self.task.size} bytes, read {self._read} "
                f"bytes (the source changed since it was planned)"
            )

    def close(self) -> None:
        self._handle.close()


class LocalSource(ArrowSource):
    """A local file: its size, and its modification time against the planned marker."""

    def __init__(self, task: CopyTask, path: str):
        try:
            handle: Any = open(path, "rb")  # noqa: SIM115 - closed by close()
        except OSError as error:
            raise CopyError(
                f"cannot read source file {task.source}: {LocalSource._describe(error)}"
            ) from None
        super().__init__(task, handle)

    @staticmethod
    def _describe(error: OSError) -> str:
        return str(error.strerror or error)

    @property
    def handle(self) -> Any:
        """The open file, to be read again from its start (``digest`` checked it first)."""
        return self._handle

    def digest(self, chunk_size: int, cancelled: threading.Event | None = None) -> Any:
        """Read the whole file into its MD5, then ``finish``: the size and time planned."""
        md5 = hashlib.md5(usedforsecurity=False)
        while chunk := self.read(chunk_size):
            if cancelled is not None and cancelled.is_set():
                raise ReplicationInterruptedError(f"copying {self.task.source} was stopped")
            md5.update(chunk)
        self.finish()
        return md5

    def finish(self) -> None:
        super().finish()
        marker = self.task.marker
        if marker and marker.isdigit():
            modified = os.fstat(self._handle.fileno()).st_mtime_ns
            if str(modified) != marker:
                raise VerificationError(
                    f"{self.task.source}: the source changed since it was planned (modified "
                    f"at {modified} ns, planned {marker})"
                )


def reason(error: BaseException) -> str:
    """The first line of ``error``'s message (its type when it has none)."""
    # pyarrow's messages repeat the path and add a detail line; keep the first line.
    return str(error).splitlines()[0] if str(error) else type(error).__name__
