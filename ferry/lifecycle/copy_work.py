"""The copy states' work: the whole manifest here, batch by batch (Inline copy), or one
batch of it server-side (Copy batch, one item of the S3 copy Map).

Both record each batch they finished (a copy record, ``ferry.copying.manifest``) — its files copied
and verified, and its rewrites (an Iceberg table's manifests, ``ferry.iceberg.pipeline``)
written — which Commit checks before it writes anything, and both resume where a retry left
off.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ferry.config import CopierOptions
from ferry.copying import concurrency
from ferry.copying.copier import Progress
from ferry.copying.copy_records import recorded_batches, write_copy_record
from ferry.copying.manifest import (
    DIGEST,
    batch_rewrites,
    batch_tasks,
    batch_work,
    read_batches,
    whole_at_target,
)
from ferry.core import faults
from ferry.statemachine.replication_payloads import CopyBatchResult, InlineCopyResult
from ferry.storage import fs
from ferry.storage.s3 import MiB


def copy_inline(
    manifest_uri: str, options: CopierOptions, progress: Progress | None = None
) -> InlineCopyResult:
    """Copy every batch of the manifest without a copy record, in this process."""
    from ferry.copying.copier import InlineCopier, Manifest

    copier = InlineCopier(threads=options.threads, chunk_size=options.chunk_size_mib * MiB)
    batches = read_batches(manifest_uri)
    done = recorded_batches(manifest_uri, [batch.get(DIGEST, "") for batch in batches])
    pending = [batch for batch in batches if batch["batch"] not in done]
    tasks = {batch["batch"]: tuple(batch_tasks(batch)) for batch in batches}
    # A resumed run: the files its failed attempt copied whole from the same source version.
    reused: dict[int, list[Any]] = {}
    to_copy: dict[int, tuple[Any, ...]] = {}
    for batch in pending:
        reused[batch["batch"]], remaining = batch_work(batch)
        to_copy[batch["batch"]] = tuple(remaining)
    if progress is not None:
        for batch in batches:
            if batch["batch"] in done:
                progress(sum(task.size for task in tasks[batch["batch"]]))
            elif reused.get(batch["batch"]):
                progress(sum(task.size for task in reused[batch["batch"]]))

    def record(index: int) -> None:
        batch = pending[index]
        copied = tasks[batch["batch"]]
        rewritten = _rewrite(batch)
        write_copy_record(
            manifest_uri, batch, len(copied), sum(task.size for task in copied), rewritten
        )
        faults.point("copy.batch")

    # Every pending batch on the same pools: no batch waits for the last file of the one
    # before it, and each is recorded as soon as its own files are verified.
    copier.copy_batches(
        [Manifest(batch["eventId"], to_copy[batch["batch"]]) for batch in pending],
        progress,
        record,
    )
    return InlineCopyResult(
        files=sum(len(batch_files) for batch_files in tasks.values()),
        bytes=sum(task.size for batch_files in tasks.values() for task in batch_files),
        copied_files=sum(len(batch_files) for batch_files in to_copy.values()),
        copied_bytes=sum(task.size for batch_files in to_copy.values() for task in batch_files),
    )


def copy_batch_server_side(
    batch: dict[str, Any],
    manifest_uri: str,
    options: CopierOptions,
    *,
    resume: bool,
    s3_client: Callable[[str | None, int], Any],
    progress: Progress | None = None,
) -> CopyBatchResult:
    """Copy one batch S3 to S3 (``s3_client(region, connections)``), then record it.

    ``resume``: a retry (the Lambda ran out of time, or failed part-way), which skips the
    objects already at the target, whole.
    """
    from ferry.copying.copier import Manifest
    from ferry.copying.s3_copy import S3ServerSideCopier

    done, tasks = batch_work(batch)
    if resume:
        # The target is this event's own new folder, and S3 stores an object only once it
        # is complete: an object there with the planned size is copied.
        more, tasks = already_copied(tasks)
        done += more
    region = fs.bucket_region(tasks[0].target) if tasks else None
    # The threads fit this batch (many small objects, or a few large ones); the client's
    # connections fit the threads (objects and their parts run on two pools).
    multipart_threshold = options.multipart_threshold_mib * MiB
    threads = concurrency.copy_threads(
        [task.size for task in tasks], multipart_threshold, options.threads
    )
    copier = S3ServerSideCopier(
        s3_client(region, 2 * threads),
        threads=threads,
        multipart_threshold=multipart_threshold,
        part_size=options.part_size_mib * MiB,
    )
    if progress is not None and done:
        progress(sum(task.size for task in done))
    report = copier.copy(Manifest(batch["eventId"], tuple(tasks)), progress)
    rewritten = _rewrite(batch)
    faults.point("copy.batch")
    files = report.files + len(done)
    size = report.bytes + sum(task.size for task in done)
    write_copy_record(manifest_uri, batch, files, size, rewritten)
    return CopyBatchResult(files=files, bytes=size, resumed=len(done))


def _rewrite(batch: dict[str, Any]) -> int:
    """The batch's Iceberg manifest rewrites, written here (``ferry.iceberg.pipeline``); how
    many. A batch without any (every Hive table's) does without pyiceberg's import, which
    would otherwise be part of the S3 copy function's every cold start."""
    if not batch_rewrites(batch)[1]:
        return 0
    from ferry.iceberg.pipeline import rewrite_batch

    return rewrite_batch(batch)


def already_copied(tasks: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """``(done, pending)``: the tasks whose target is there with the planned size, the rest
    (``ferry.copying.manifest.whole_at_target``)."""
    return whole_at_target(tasks)
