"""The inline copier: move the files of a manifest into the new snapshot folder, here.

``InlineCopier`` copies a manifest (``ferry.copying.copy_tasks``) on bounded thread pools, never
holding more than a part of a file in memory, and a file counts as copied only once it is
verified at the target:

- to S3, a file is sent whole in one ``PutObject`` with its ``Content-MD5``, a large local
  one streamed from disk in one ``PutObject``, or any other in a multipart upload whose
  parts carry theirs, as ``ferry.copying.concurrency.uploads`` chooses from the manifest's sizes;
  what S3 answers is the verification (``ferry.storage.s3_objects``,
  ``ferry.storage.s3_multipart``), no second request looks at the target;
- to any other file system, the file is streamed through ``pyarrow.fs`` and its size is
  checked at the target.

Every source is checked to be the file planned (``ferry.copying.copy_sources``): its size,
and its change marker where reading it tells that for free (an S3 read pinned to the planned
ETag; a local file's modification time, from the open file).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Executor, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyarrow import fs as pafs

from ferry.copying import concurrency
from ferry.copying.copy_sources import LocalSource, Source, open_source, reason
from ferry.copying.copy_tasks import CopyReport, CopyTask, Manifest
from ferry.core import faults
from ferry.core.errors import (
    ReplicationInterruptedError,
    TargetNotWritableError,
    VerificationError,
)
from ferry.storage import fs
from ferry.storage.s3 import MiB, Progress, parse_s3_uri
from ferry.storage.s3_multipart import PartSlots, upload_in_parts
from ferry.storage.s3_objects import delete_object, put_file, put_object


class InlineCopier:
    """Copies in this process, ``threads`` files at a time (None: chosen from the manifest).

    Parts of large uploads to S3 run on a second pool of as many threads, so that a few
    large files keep every thread busy; the parts held in memory are bounded.
    """

    def __init__(self, threads: int | None = None, chunk_size: int = 8 * MiB):
        self.threads = threads
        self.chunk_size = chunk_size

    def copy(self, manifest: Manifest, progress: Progress | None = None) -> CopyReport:
        return self.copy_batches([manifest], progress)

    def copy_batches(
        self,
        batches: Sequence[Manifest],
        progress: Progress | None = None,
        copied: Callable[[int], None] | None = None,
    ) -> CopyReport:
        """Copy the files of every batch on the same pools, with no wait between batches.

        ``copied(index)`` is called (from a worker thread) as soon as every file of
        ``batches[index]`` is copied and verified, so a batch can be recorded while the
        others go on. On the first failure the files not yet started are cancelled and it is
        raised.
        """
        tasks = [(index, task) for index, batch in enumerate(batches) for task in batch.tasks]
        sizes = [task.size for _, task in tasks]
        threads = concurrency.copy_threads(sizes, self.chunk_size, self.threads)
        remaining = [len(batch.tasks) for batch in batches]
        lock = threading.Lock()
        cancelled = threading.Event()

        def copy_one(index: int, task: CopyTask, transfer: Transfer) -> None:
            if cancelled.is_set():
                return
            copy_file(task, self.chunk_size, progress, cancelled, transfer=transfer)
            with lock:
                remaining[index] -= 1
                finished = remaining[index] == 0
            if finished and copied is not None:
                copied(index)

        # The files' pool is left (and waited for) before the parts' pool: a file still
        # running may hand its parts over until it is done.
        with (
            ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ferry-part") as parts,
            ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ferry-copy") as pool,
        ):
            uploads = concurrency.uploads(sizes, threads, self.chunk_size)
            transfer = Transfer(self.chunk_size, threads, parts, uploads=uploads)
            futures = [pool.submit(copy_one, index, task, transfer) for index, task in tasks]
            if copied is not None:
                for index, batch in enumerate(batches):
                    if not batch.tasks:
                        copied(index)
            try:
                done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            except BaseException:
                # Ctrl-C: stop the workers after their current chunk, not after every file.
                cancelled.set()
                for future in futures:
                    future.cancel()
                raise
            failed = [f for f in futures if f in done and f.exception() is not None]
            if failed:
                cancelled.set()
                for future in futures:
                    future.cancel()
                raise failed[0].exception()  # type: ignore[misc]
        return CopyReport(files=len(tasks), bytes=sum(batch.total_bytes for batch in batches))


@dataclass(frozen=True)
class Transfer:
    """What the files of one copy share: chunk size, threads, the parts pool and its bound."""

    chunk_size: int
    threads: int = 1
    #: Where parts of large S3 uploads run; None: one after another in the file's thread.
    parts: Executor | None = None
    slots: PartSlots | None = None
    #: How files go to S3 (None: whole up to the chunk size, a local file streamed up to
    #: ``concurrency.ALWAYS_STREAMED``, else in a part per thread).
    uploads: concurrency.Uploads | None = None

    def __post_init__(self) -> None:
        if self.slots is None and self.parts is not None:
            object.__setattr__(self, "slots", PartSlots(self.threads))
        if self.uploads is None:
            chosen = concurrency.Uploads(self.chunk_size, threads=self.threads, parts=self.threads)
            object.__setattr__(self, "uploads", chosen)


_process_transfers: dict[tuple[int, int, concurrency.Uploads | None], Transfer] = {}
_process_transfers_lock = threading.Lock()


def process_transfer(
    chunk_size: int, threads: int, uploads: concurrency.Uploads | None = None
) -> Transfer:
    """One ``Transfer`` (its parts pool) per process and settings, made on first use.

    For copies that arrive one file at a time from elsewhere, such as the tasks a Spark
    Python worker runs: their large files share one pool of parts and its memory bound.
    (Here, in an importable module, not in the job's script: Spark pickles the script's
    functions with the globals they use, and a lock cannot be pickled.)
    """
    with _process_transfers_lock:
        key = (chunk_size, threads, uploads)
        if key not in _process_transfers:
            parts = ThreadPoolExecutor(threads, thread_name_prefix="ferry-part")
            if uploads is None:
                uploads = concurrency.uploads((), threads, chunk_size)
            _process_transfers[key] = Transfer(chunk_size, threads, parts, uploads=uploads)
        return _process_transfers[key]


def copy_file(
    task: CopyTask,
    chunk_size: int,
    progress: Progress | None = None,
    cancelled: threading.Event | None = None,
    *,
    transfer: Transfer | None = None,
) -> None:
    """Copy one file from source to target; it counts as copied only once verified.

    A failure is the source's when reading fails and the target's when opening, writing
    or closing it fails: object stores may report a missing bucket only on the first
    write or on close. A source that is not the file planned (another size, another change
    marker) is a ``VerificationError``.
    """
    transfer = transfer or Transfer(chunk_size)
    source = open_source(task, transfer.threads)
    try:
        if fs.scheme_of(task.target) in fs.S3_SCHEMES:
            _copy_to_s3(task, source, transfer, progress, cancelled)
            return
        target_fs, target_path = fs.resolve(task.target)
        # Written beside the target under a hidden name, then renamed into place: a file at
        # the target is always whole (a resumed run reuses what is there), and a copy killed
        # part-way leaves only a name every Hive reader skips.
        partial = fs.partial_name(task.target)
        _, partial_path = fs.resolve(partial)
        try:
            with fs.open_output(partial) as writer:
                while chunk := source.read(chunk_size):
                    if cancelled is not None and cancelled.is_set():
                        raise ReplicationInterruptedError(f"copying {task.source} was stopped")
                    faults.point("copy.file")
                    writer.write(chunk)
                    if progress is not None:
                        progress(len(chunk))
                source.finish()
            verify(task, target_fs, partial_path)
            target_fs.move(partial_path, target_path)
        except OSError as error:
            _discard(target_fs, partial_path)
            raise TargetNotWritableError(f"cannot write {task.target}: {reason(error)}") from None
        except BaseException:
            _discard(target_fs, partial_path)
            raise
    finally:
        source.close()


def _discard(target_fs: pafs.FileSystem, path: str) -> None:
    """Remove a partial file a failed copy left (best effort: a killed one stays, hidden)."""
    try:
        target_fs.delete_file(path)
    except OSError:
        pass


def _copy_to_s3(
    task: CopyTask,
    source: Source,
    transfer: Transfer,
    progress: Progress | None,
    cancelled: threading.Event | None,
) -> None:
    """One ``PutObject`` for a small file, a multipart upload for a large one.

    A large local file streams in one ``PutObject`` instead where the transfer says so.
    """
    client = fs.default().s3_client(parse_s3_uri(task.target).bucket, _connections(transfer))
    uploads = transfer.uploads
    assert uploads is not None  # set by Transfer itself
    if task.size <= uploads.whole:
        # Read one byte more than planned: a source that grew is caught, not cut short.
        data = source.read(task.size + 1)
        source.finish()
        if cancelled is not None and cancelled.is_set():
            raise ReplicationInterruptedError(f"copying {task.source} was stopped")
        faults.point("copy.file")
        with _removed_if_wrong(client, task.target):
            put_object(client, task.target, data)
        if progress is not None:
            progress(len(data))
        return
    if task.size <= uploads.streamed and isinstance(source, LocalSource):
        digest = source.digest(transfer.chunk_size, cancelled)
        faults.point("copy.file")
        with _removed_if_wrong(client, task.target):
            put_file(
                client,
                task.target,
                source.handle,
                task.size,
                digest,
                progress=progress,
                cancelled=cancelled,
            )
        return
    part_size = uploads.part_size(task.size, transfer.chunk_size)
    with _removed_if_wrong(client, task.target):
        upload_in_parts(
            client,
            task.target,
            source.read,
            task.size,
            part_size,
            parts=transfer.parts,
            slots=transfer.slots,
            progress=progress,
            cancelled=cancelled,
        )
        # Its size was counted as it was read; its modification time is checked here.
        source.finish()


@contextmanager
def _removed_if_wrong(client: Any, uri: str) -> Iterator[None]:
    """Remove the object ``uri`` when its write is found wrong (``VerificationError``).

    S3 refuses a body that fails its Content-MD5 and stores nothing; a store that does not
    check it (moto) stored it, and it must not stay.
    """
    try:
        yield
    except VerificationError:
        delete_object(client, uri)
        raise


def _connections(transfer: Transfer) -> int:
    # Files and their parts run on two pools of `threads` each.
    return transfer.threads * (2 if transfer.parts is not None else 1)


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
