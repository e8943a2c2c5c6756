"""Copiers: move the files of a manifest into the new snapshot folder.

The manifest is the contract between planning and copying: a list of (source, target, size)
that any copier can execute. ``InlineCopier`` streams files with ``pyarrow.fs`` on a bounded
thread pool, never holding a whole file in memory, and verifies every file's size at the
target before it reports success.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Protocol

from pyarrow import fs as pafs

from ferry import faults, fs
from ferry.errors import (
    CopyError,
    ReplicationInterruptedError,
    TargetNotWritableError,
    VerificationError,
)

Progress = Callable[[int], None]


@dataclass(frozen=True)
class CopyTask:
    source: str
    target: str
    size: int


@dataclass(frozen=True)
class Manifest:
    """Files for a copier to copy, for one event (a batch, or a whole manifest read back)."""

    event_id: str
    tasks: tuple[CopyTask, ...]

    @property
    def total_bytes(self) -> int:
        return sum(task.size for task in self.tasks)


@dataclass(frozen=True)
class CopyReport:
    files: int
    bytes: int


class Copier(Protocol):
    def copy(self, manifest: Manifest, progress: Progress | None = None) -> CopyReport: ...


class InlineCopier:
    """Copies in this process: streaming, ``threads`` files at a time."""

    def __init__(self, threads: int = 8, chunk_size: int = 8 * 1024 * 1024):
        self.threads = threads
        self.chunk_size = chunk_size

    def copy(self, manifest: Manifest, progress: Progress | None = None) -> CopyReport:
        cancelled = threading.Event()
        with ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="ferry-copy") as pool:
            futures = [
                pool.submit(self._copy_one, task, progress, cancelled) for task in manifest.tasks
            ]
            try:
                done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            except BaseException:
                # Ctrl-C: stop the workers after their current chunk, not after every file.
                cancelled.set()
                for future in futures:
                    future.cancel()
                raise
            failed = [f for f in done if f.exception() is not None]
            if failed:
                cancelled.set()
                for future in futures:
                    future.cancel()
                raise failed[0].exception()  # type: ignore[misc]
        return CopyReport(files=len(manifest.tasks), bytes=manifest.total_bytes)

    def _copy_one(
        self, task: CopyTask, progress: Progress | None, cancelled: threading.Event
    ) -> None:
        if cancelled.is_set():
            return
        copy_file(task, self.chunk_size, progress, cancelled)


def copy_file(
    task: CopyTask,
    chunk_size: int,
    progress: Progress | None = None,
    cancelled: threading.Event | None = None,
) -> None:
    """Stream one file from source to target, then verify its size at the target.

    A failure is the source's when reading fails and the target's when opening, writing
    or closing it fails: object stores may report a missing bucket only on the first
    write or on close (pyarrow opens S3 objects lazily, so a small file is one PUT).
    """
    source_fs, source_path = fs.resolve(task.source)
    target_fs, target_path = fs.resolve(task.target)
    try:
        # open_input_file (not open_input_stream): ranged reads of a known size are far
        # faster against S3 emulators and avoid a second request for the length.
        reader = source_fs.open_input_file(source_path)
    except OSError as error:
        raise CopyError(f"cannot read source file {task.source}: {_reason(error)}") from None
    with reader:
        try:
            with fs.open_output(task.target) as writer:
                while chunk := _read(reader, chunk_size, task):
                    if cancelled is not None and cancelled.is_set():
                        raise ReplicationInterruptedError(f"copying {task.source} was stopped")
                    faults.point("copy.file")
                    writer.write(chunk)
                    if progress is not None:
                        progress(len(chunk))
        except OSError as error:
            raise TargetNotWritableError(f"cannot write {task.target}: {_reason(error)}") from None
    verify(task, target_fs, target_path)


def _read(reader: pafs.NativeFile, size: int, task: CopyTask) -> bytes:
    try:
        return reader.read(size)
    except OSError as error:
        raise CopyError(f"cannot read source file {task.source}: {_reason(error)}") from None


def verify(task: CopyTask, target_fs: pafs.FileSystem, target_path: str) -> None:
    info = target_fs.get_file_info(target_path)
    if info.type != pafs.FileType.File or info.size != task.size:
        found = "no file" if info.type != pafs.FileType.File else f"{info.size} bytes"
        raise VerificationError(f"{task.target}: expected {task.size} bytes, found {found}")


def verify_all(tasks: Sequence[CopyTask], threads: int = 8) -> None:
    """Check every file of a manifest at its target (after copies made elsewhere)."""

    def check(task: CopyTask) -> None:
        target_fs, target_path = fs.resolve(task.target)
        verify(task, target_fs, target_path)

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ferry-verify") as pool:
        list(pool.map(check, tasks))


def _reason(error: BaseException) -> str:
    # pyarrow's messages repeat the path and add a detail line; keep the first line.
    return str(error).splitlines()[0] if str(error) else type(error).__name__
