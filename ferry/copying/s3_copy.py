"""S3 server-side copier: S3 copies the bytes, no compute moves them (cross-region DR).

Used when a manifest's sources and targets are all on S3: one Lambda runs ``copy`` on a batch
of the manifest, a Step Functions Map runs many batches. Objects up to ``multipart_threshold``
are copied with one ``CopyObject``, and that is the only request they cost; larger ones with
a multipart upload whose parts are ``UploadPartCopy`` ranges of the source. Every request is
pinned to the ETag the plan listed, so a source replaced since planning fails the copy
instead of producing another version (or a mix of two), and no object counts as copied
before the answer to its copy (or, for a copy in parts, the target itself) confirms it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ferry.copying import concurrency
from ferry.copying.copy_tasks import CopyReport, CopyTask, Manifest
from ferry.core.errors import CopyError, TargetNotWritableError, VerificationError
from ferry.storage.s3 import (
    MAX_PART_SIZE,
    MAX_PARTS,
    MAX_SINGLE_REQUEST_SIZE,
    MIN_PART_SIZE,
    MULTIPART_ETAG,
    MiB,
    Progress,
    Refusal,
    S3Object,
    error_code,
    error_reason,
    etag_is_md5,
    parse_s3_uri,
    refusal,
)
from ferry.storage.s3_multipart import multipart_upload
from ferry.storage.s3_objects import delete_object

#: CopyObject copies at most this much; a larger object is copied in parts.
MAX_COPY_OBJECT_SIZE = MAX_SINGLE_REQUEST_SIZE

# Headers CopyObject keeps with MetadataDirective=COPY but a new multipart upload does not.
CARRIED_HEADERS = (
    "ContentType",
    "ContentEncoding",
    "ContentDisposition",
    "ContentLanguage",
    "CacheControl",
    "Metadata",
)


@dataclass(frozen=True)
class _Job:
    """One manifest task with both ends parsed."""

    task: CopyTask
    source: S3Object
    target: S3Object


class S3ServerSideCopier:
    """Copies S3 objects to S3 with ``CopyObject`` / ``UploadPartCopy``, ``threads`` at a time.

    ``threads`` None: chosen from the manifest (``ferry.copying.concurrency``). ``client`` is a
    boto3 S3 client in the target buckets' region (a copy request goes to the target bucket), with
    ``max_pool_connections`` of at least ``2 * threads`` (objects and parts run on two pools
    of ``threads`` each; ``AwsClients.client(..., connections=...)`` sizes it). A request that
    fails with a transient error (throttling, 5xx, a dropped connection) is retried by the
    client (``ferry.storage.aws``): only that request of that object, never the batch.
    """

    def __init__(
        self,
        client: Any,
        threads: int | None = None,
        multipart_threshold: int = MAX_COPY_OBJECT_SIZE,
        part_size: int = 512 * MiB,
    ):
        if threads is not None and threads < 1:
            raise ValueError("threads must be at least 1")
        if not 0 <= multipart_threshold <= MAX_COPY_OBJECT_SIZE:
            raise ValueError(f"multipart_threshold must be at most {MAX_COPY_OBJECT_SIZE} bytes")
        if not MIN_PART_SIZE <= part_size <= MAX_PART_SIZE:
            raise ValueError(f"part_size must be {MIN_PART_SIZE} to {MAX_PART_SIZE} bytes")
        self.client = client
        self.threads = threads
        self.multipart_threshold = multipart_threshold
        self.part_size = part_size

    def copy(self, manifest: Manifest, progress: Progress | None = None) -> CopyReport:
        """Copy every task of ``manifest``; ``progress`` gets the bytes of each object or part.

        One object's failure does not stop the others. Once all have finished, the failure of
        the first failed task (in manifest order) is raised. ``progress`` is called from worker
        threads.
        """
        # Parse everything first: a non-S3 URI refuses the batch before any byte is copied.
        jobs = [
            _Job(task, parse_s3_uri(task.source), parse_s3_uri(task.target))
            for task in manifest.tasks
        ]
        threads = self.threads_for(manifest.tasks)
        # Two pools: an object waits for its parts, so parts on the objects' pool could
        # deadlock it once every worker is an object waiting for parts still queued.
        with (
            ThreadPoolExecutor(threads, thread_name_prefix="ferry-s3-copy") as objects,
            ThreadPoolExecutor(threads, thread_name_prefix="ferry-s3-part") as parts,
        ):
            futures = [objects.submit(self._copy_in_turn, job, parts, progress) for job in jobs]
            wait(futures)
        failure = _first_failure(futures)
        if failure is not None:
            raise failure
        return CopyReport(files=len(manifest.tasks), bytes=manifest.total_bytes)

    def threads_for(self, tasks: Sequence[CopyTask]) -> int:
        """Objects copied at once for ``tasks``: the configured number, else chosen from them.

        Every object up to the multipart threshold is one request whatever its size (S3
        moves the bytes), so such batches count as many small objects.
        """
        sizes = [task.size for task in tasks]
        return concurrency.copy_threads(sizes, self.multipart_threshold, self.threads)

    def _copy_in_turn(self, job: _Job, parts: ThreadPoolExecutor, progress: Progress | None):
        """``_copy_object`` within the process's objects in flight (``PROCESS_OBJECTS``)."""
        with concurrency.process_objects:
            self._copy_object(job, parts, progress)

    def _copy_object(self, job: _Job, parts: ThreadPoolExecutor, progress: Progress | None) -> None:
        """Copy one object (whole or in parts), pinned to the planned version and verified.

        An object up to ``multipart_threshold`` with its ETag in the manifest is exactly one
        request: a ``CopyObject`` pinned to that ETag (``CopySourceIfMatch``), which S3
        refuses (412) when the source is no longer the object planned. Its answer is the
        verification: the copy's ETag is the source's for an object stored in one part
        without KMS, and the pin vouches for the rest. Without a planned ETag (a manifest of
        an older Ferry), and for copies in parts (which need the source's headers), the
        source is read with a HEAD first, and a copy in parts is checked at the target.
        """
        task = job.task
        planned = task.marker.strip('"') if task.marker else None
        whole = task.size <= self.multipart_threshold
        head = None
        if planned is None or not whole:
            head = self._head_source(job, planned)
            planned = head["ETag"].strip('"')
        try:
            if whole:
                copied = self._copy_whole(job, planned, progress)
            else:
                self._copy_in_parts(job, head, parts, progress)  # type: ignore[arg-type]
        except (ClientError, BotoCoreError) as error:
            if (
                head is None
                and refusal(error) is Refusal.NOT_ALLOWED
                and error_code(error) != "NoSuchBucket"
            ):
                # Refused without a HEAD before: one now tells which side was refused.
                self._head_source(job, planned)
                raise _copy_failure(job, error, source_readable=True) from None
            raise _copy_failure(job, error, source_readable=head is not None) from None
        if whole:
            self._check_copy(job, planned, copied)
        else:
            self._verify(job)

    def _head_source(self, job: _Job, planned: str | None) -> dict:
        """The source's headers; it must still have the planned size (and ETag, if known)."""
        try:
            head = self.client.head_object(**job.source.address)
        except (ClientError, BotoCoreError) as error:
            raise CopyError(
                f"cannot read source file {job.task.source}: {error_reason(error)}"
            ) from None
        if head["ContentLength"] != job.task.size:
            raise VerificationError(
                f"{job.task.source}: expected {job.task.size} bytes, found "
                f"{head['ContentLength']} bytes (the source changed since it was listed)"
            )
        if planned is not None and head["ETag"].strip('"') != planned:
            raise VerificationError(
                f"{job.task.source}: the source changed since it was planned (ETag "
                f"{head['ETag'].strip(chr(34))}, planned {planned})"
            )
        return head

    def _copy_whole(self, job: _Job, etag: str, progress: Progress | None) -> dict:
        """One ``CopyObject``, pinned to the source's ETag, keeping its metadata."""
        response = self.client.copy_object(
            **job.target.address,
            CopySource=job.source.address,
            # S3 answers 412 PreconditionFailed when the source is no longer this version.
            # moto ignores CopySourceIfMatch (it checks only CopySourceIfNoneMatch): there,
            # _check_copy's comparison of ETags is what catches a replaced source.
            CopySourceIfMatch=f'"{etag}"',
            MetadataDirective="COPY",
        )
        _report(progress, job.task.size)
        return response

    def _check_copy(self, job: _Job, planned: str, response: dict) -> None:
        """The copy's ETag must be the planned source's, or the source must still be it.

        S3 gives a copy the source's ETag when that ETag is the MD5 of the bytes (one part,
        no KMS on either side), so equal ETags prove the planned bytes arrived. Where the
        ETags cannot be compared — a source uploaded in parts (its ETag ends in ``-N``), a
        copy under SSE-KMS or SSE-C — the pin (``CopySourceIfMatch``, which S3 enforces) is
        the proof; moto does not enforce it, so there a replaced multipart source is not
        caught. ETags that differ otherwise mean a store ignored the pin, or a source under
        SSE-KMS (whose ETag is no MD5): only then is the source asked, with one HEAD.
        """
        copied = response.get("CopyObjectResult", {}).get("ETag", "").strip('"')
        if copied == planned or not etag_is_md5(response) or MULTIPART_ETAG.match(planned):
            return
        try:
            head = self.client.head_object(**job.source.address)
            found = head["ETag"].strip('"')
        except ClientError as error:
            if refusal(error) is not Refusal.NOT_FOUND:
                raise CopyError(
                    f"cannot verify the copy of {job.task.source}: {error_reason(error)}"
                ) from None
            found = "none: the source is gone"
        except BotoCoreError as error:
            raise CopyError(
                f"cannot verify the copy of {job.task.source}: {error_reason(error)}"
            ) from None
        if found == planned:
            return
        # Only a store that ignores CopySourceIfMatch gets here: the copy is of another
        # version, and must not stay.
        delete_object(self.client, job.task.target)
        raise VerificationError(
            f"{job.task.source}: the source changed since it was planned (ETag {found}, "
            f"planned {planned})"
        )

    def _copy_in_parts(
        self, job: _Job, head: dict, parts: ThreadPoolExecutor, progress: Progress | None
    ) -> None:
        """A multipart upload of ``UploadPartCopy`` ranges (``s3_multipart.multipart_upload``)."""
        carried = {name: head[name] for name in CARRIED_HEADERS if head.get(name)}
        multipart_upload(
            self.client,
            job.target,
            lambda upload_id: self._copy_parts(job, head, upload_id, parts, progress),
            **carried,
        )

    def _copy_parts(
        self,
        job: _Job,
        head: dict,
        upload_id: str,
        parts: ThreadPoolExecutor,
        progress: Progress | None,
    ) -> list[str]:
        """Copy every part on the parts pool; returns their ETags in part order.

        On the first failure the parts not yet started are cancelled and the running ones are
        waited for, so that the caller aborts the upload only once no part can still land in it
        (S3 may keep a part that was in flight during the abort; moto fails such a part with a
        bare KeyError instead of NoSuchUpload).
        """
        size = head["ContentLength"]
        ranges = part_ranges(size, max(self.part_size, math.ceil(size / MAX_PARTS)))
        cancelled = threading.Event()
        futures = [
            parts.submit(
                self._copy_part,
                job,
                head["ETag"],
                upload_id,
                number,
                byte_range,
                cancelled,
                progress,
            )
            for number, byte_range in enumerate(ranges, start=1)
        ]
        wait(futures, return_when=FIRST_EXCEPTION)
        # Chosen before cancelling, so it is a real failure, not a part refused as cancelled.
        failure = _first_failure(futures)
        if failure is not None:
            cancelled.set()
            for future in futures:
                future.cancel()
            wait(futures)
            raise failure
        return [future.result() for future in futures]

    def _copy_part(
        self,
        job: _Job,
        source_etag: str,
        upload_id: str,
        number: int,
        byte_range: tuple[int, int],
        cancelled: threading.Event,
        progress: Progress | None,
    ) -> str:
        """Copy one byte range of the source into part ``number``; returns the part's ETag."""
        if cancelled.is_set():
            raise CopyError(f"copying {job.task.source} was cancelled")
        first, last = byte_range
        response = self.client.upload_part_copy(
            **job.target.address,
            UploadId=upload_id,
            PartNumber=number,
            CopySource=job.source.address,
            CopySourceIfMatch=source_etag,
            CopySourceRange=f"bytes={first}-{last}",
        )
        _report(progress, last - first + 1)
        return response["CopyPartResult"]["ETag"]

    def _verify(self, job: _Job) -> None:
        """The target must exist with the size the manifest expects."""
        try:
            head = self.client.head_object(**job.target.address)
        except ClientError as error:
            if refusal(error) is Refusal.NOT_FOUND:
                raise VerificationError(
                    f"{job.task.target}: expected {job.task.size} bytes, found no object"
                ) from None
            raise CopyError(f"cannot verify {job.task.target}: {error_reason(error)}") from None
        except BotoCoreError as error:
            raise CopyError(f"cannot verify {job.task.target}: {error_reason(error)}") from None
        if head["ContentLength"] != job.task.size:
            raise VerificationError(
                f"{job.task.target}: expected {job.task.size} bytes, "
                f"found {head['ContentLength']} bytes"
            )


def part_ranges(size: int, part_size: int) -> list[tuple[int, int]]:
    """Inclusive byte ranges ``(first, last)`` of ``part_size`` covering ``size`` bytes."""
    return [(first, min(first + part_size, size) - 1) for first in range(0, size, part_size)]


def _copy_failure(
    job: _Job, error: ClientError | BotoCoreError, source_readable: bool
) -> CopyError:
    """Ferry's error for a failed copy request, blaming the side S3 blamed.

    ``source_readable``: the source was just read (a HEAD needs s3:GetObject, like a copy
    source), so a refusal is about the target.
    """
    kind = refusal(error)
    reason = error_reason(error)
    # moto answers UploadPartCopy of a missing source with a bare 404; S3 with NoSuchKey.
    if kind is Refusal.NOT_FOUND or _names_only_source_bucket(job, error):
        return CopyError(f"cannot read source file {job.task.source}: {reason}")
    if kind is Refusal.CHANGED:
        return VerificationError(
            f"source file {job.task.source} changed since it was planned: {reason}"
        )
    if error_code(error) == "NoSuchBucket" or (kind is Refusal.NOT_ALLOWED and source_readable):
        return TargetNotWritableError(f"cannot write {job.task.target}: {reason}")
    if kind is Refusal.NOT_ALLOWED:
        return CopyError(
            f"cannot copy {job.task.source} to {job.task.target} (reading the source or "
            f"writing the target was refused): {reason}"
        )
    return CopyError(f"copying {job.task.source} to {job.task.target} failed: {reason}")


def _names_only_source_bucket(job: _Job, error: ClientError | BotoCoreError) -> bool:
    """A NoSuchBucket naming the source bucket (which was there a moment ago), not the target."""
    if error_code(error) != "NoSuchBucket" or job.source.bucket == job.target.bucket:
        return False
    return error.response["Error"].get("BucketName") == job.source.bucket  # type: ignore[union-attr]


def _first_failure(futures: Sequence[Future]) -> BaseException | None:
    """The exception of the first future (in submission order) that failed, if any."""
    for future in futures:
        if not future.cancelled() and future.exception() is not None:
            return future.exception()
    return None


def _report(progress: Progress | None, length: int) -> None:
    if progress is not None:
        progress(length)
