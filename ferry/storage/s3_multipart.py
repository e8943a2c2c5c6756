"""Multipart uploads to S3: every part carries its ``Content-MD5``, any failure aborts.

``upload_in_parts`` sends a large object read from anywhere as parts (on the copier's shared
thread pool when it has one, bounded in memory by ``PartSlots``); each part's answered ETag
is checked, and so is the completed object's (the MD5 of the parts' MD5s).
``multipart_upload`` is the upload itself (create, complete, abort on any failure), which
the server-side copier's copies in parts use too. Single requests, and what an answer must
say, are ``ferry.storage.s3_objects``'.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, wait
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ferry.core import faults
from ferry.core.errors import ReplicationInterruptedError, VerificationError
from ferry.storage.s3 import Progress, S3Object, parse_s3_uri
from ferry.storage.s3_objects import check_etag, write_failure, write_request

logger = logging.getLogger(__name__)


class PartSlots:
    """Bounds the parts held in memory by every upload of one copier (a semaphore)."""

    def __init__(self, parts: int):
        self._semaphore = threading.BoundedSemaphore(max(1, parts))

    def acquire(self) -> None:
        self._semaphore.acquire()

    def release(self) -> None:
        self._semaphore.release()


def multipart_upload(
    client: Any,
    target: S3Object,
    send_parts: Callable[[str], list[str]],
    **create_arguments: Any,
) -> dict[str, Any]:
    """One multipart upload of ``target``: create it, send its parts, complete it.

    ``send_parts(upload_id)`` sends every part (``UploadPart`` or ``UploadPartCopy``) and
    returns their ETags in part order, once none can still land. Any failure aborts the
    upload, so no part is left behind (nor billed). Returns the completion's answer;
    requests fail with botocore's errors, for the caller to name.
    """
    upload_id = client.create_multipart_upload(**target.address, **create_arguments)["UploadId"]
    try:
        etags = send_parts(upload_id)
        return client.complete_multipart_upload(
            **target.address,
            UploadId=upload_id,
            MultipartUpload={
                "Parts": [
                    {"PartNumber": number, "ETag": etag}
                    for number, etag in enumerate(etags, start=1)
                ]
            },
        )
    except BaseException:
        _abort(client, target, upload_id)
        raise


def upload_in_parts(
    client: Any,
    uri: str,
    read: Callable[[int], bytes],
    size: int,
    part_size: int,
    *,
    parts: Executor | None = None,
    slots: PartSlots | None = None,
    progress: Progress | None = None,
    cancelled: threading.Event | None = None,
) -> None:
    """Upload ``size`` bytes from ``read`` as the object ``uri``, ``part_size`` at a time.

    Parts go to ``parts`` (a thread pool shared by the copier's files) when given, else
    are sent one after another. ``slots`` bounds the parts in memory. Each part carries its
    ``Content-MD5`` and its answered ETag is checked; so is the completed object's (the MD5
    of the parts' MD5s). Any failure aborts the upload (``multipart_upload``).
    """
    target = parse_s3_uri(uri)
    digests: list[bytes] = []

    def send_parts(upload_id: str) -> list[str]:
        futures: list[Future] = []
        try:
            total = 0
            while True:
                if cancelled is not None and cancelled.is_set():
                    raise ReplicationInterruptedError(f"copying to {uri} was stopped")
                if slots is not None:
                    slots.acquire()
                try:
                    data = read(part_size)
                    total += len(data)
                    if total > size:
                        raise VerificationError(
                            f"{uri}: the source holds more than the {size} bytes planned"
                        )
                    if data:
                        faults.point("copy.file")
                except BaseException:
                    if slots is not None:
                        slots.release()
                    raise
                if not data:
                    if slots is not None:
                        slots.release()
                    break
                number = len(futures) + 1
                arguments = (client, uri, target, upload_id, number, data, slots, progress)
                if parts is None:
                    future: Future = Future()
                    future.set_result(_upload_part(*arguments))
                else:
                    future = parts.submit(_upload_part, *arguments)
                futures.append(future)
                _raise_first_failure(futures, running_ok=True)
            wait(futures)
            _raise_first_failure(futures)
        except BaseException:
            # No part may still be on its way when the upload is aborted.
            for future in futures:
                future.cancel()
            wait(futures)
            raise
        if total != size:
            raise VerificationError(f"{uri}: expected {size} bytes, read {total} bytes")
        done = [future.result() for future in futures]
        digests.extend(digest for _, digest in done)
        return [etag for etag, _ in done]

    try:
        response = multipart_upload(client, target, send_parts)
    except (ClientError, BotoCoreError) as error:
        raise write_failure(uri, error) from None
    whole = hashlib.md5(b"".join(digests), usedforsecurity=False)
    check_etag(uri, response, f"{whole.hexdigest()}-{len(digests)}", "the completed object")


def _upload_part(
    client: Any,
    uri: str,
    target: S3Object,
    upload_id: str,
    number: int,
    data: bytes,
    slots: PartSlots | None,
    progress: Progress | None,
) -> tuple[str, bytes]:
    """Upload one part with its ``Content-MD5``; returns its ETag and its MD5."""
    try:
        digest = hashlib.md5(data, usedforsecurity=False)
        response = write_request(
            uri,
            client.upload_part,
            **target.address,
            UploadId=upload_id,
            PartNumber=number,
            Body=faults.alter("copy.body", data),
            ContentMD5=base64.b64encode(digest.digest()).decode(),
        )
        check_etag(uri, response, digest.hexdigest(), f"part {number}")
        if progress is not None:
            progress(len(data))
        return response["ETag"], digest.digest()
    finally:
        if slots is not None:
            slots.release()


def _raise_first_failure(futures: list[Future], running_ok: bool = False) -> None:
    for future in futures:
        if running_ok and not future.done():
            continue
        if not future.cancelled() and future.exception() is not None:
            raise future.exception()  # type: ignore[misc]


def _abort(client: Any, target: S3Object, upload_id: str) -> None:
    try:
        client.abort_multipart_upload(**target.address, UploadId=upload_id)
    except (ClientError, BotoCoreError) as error:
        # The copy's own failure is the one to report; a lifecycle rule
        # (AbortIncompleteMultipartUpload) on the bucket collects what remains.
        logger.warning("could not abort upload %s of %s: %s", upload_id, target.key, error)
