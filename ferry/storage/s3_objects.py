"""Reading and writing S3 objects: one request per small object, every body checked.

pyarrow's S3 streams cannot pin a read to an ETag nor send a ``Content-MD5``, and they ask
for an object's size (a HEAD) before reading it. Here every S3 object the inline copier
touches is one boto3 request where it can be:

- a read is one ``GetObject`` pinned to the planned ETag (``IfMatch``): S3 answers 412 when
  the object was replaced since planning; the bytes read are also checked against the
  ETag where the ETag is their MD5;
- a small object is written with one ``PutObject`` carrying the ``Content-MD5`` of the bytes
  read: S3 refuses a body that does not match it (``BadDigest``), so a corrupted or short
  body never becomes an object, and the response's ETag confirms what was stored;
- a large local file, where the copier chose so (``ferry.copying.concurrency.uploads``), is read
  once for its MD5 and then streamed from disk in one ``PutObject`` carrying it
  (``put_file``), checked as a small object's;
- any other large object is a multipart upload whose every part carries its
  ``Content-MD5`` and whose completed ETag (the MD5 of the parts' MD5s) is checked against
  the parts sent (``ferry.storage.s3_multipart``, whose ``multipart_upload`` the server-side
  copier's copies in parts use too).

What a response says is the verification: no second request looks at the target.

An ETag is the MD5 of the object's bytes only for objects stored in plain text or with
SSE-S3 (``AES256``) in one part; SSE-KMS and SSE-C give other ETags. The ETag comparisons
are made only where the response shows the ETag is an MD5; S3's own ``Content-MD5`` and
``IfMatch`` checks hold for every object.

moto (the local emulator) enforces ``IfMatch`` on ``GetObject`` but checks neither
``Content-MD5`` nor ``x-amz-checksum-*`` on writes; there, the ETag comparisons are what
catch a corrupted or short body.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from botocore.exceptions import BotoCoreError, ClientError

from ferry.core import faults
from ferry.core.errors import (
    CopyError,
    ReplicationInterruptedError,
    TargetNotWritableError,
    VerificationError,
)
from ferry.storage.s3 import (
    MD5_ETAG,
    MULTIPART_ETAG,
    Progress,
    Refusal,
    error_reason,
    etag_is_md5,
    parse_s3_uri,
    refusal,
    unquote_etag,
)


class S3Source:
    """One planned S3 object, read with a single ``GetObject`` pinned to its ETag.

    ``read(size)`` returns up to ``size`` bytes (``b""`` at the end); ``finish()`` checks
    that what was read is the object planned: its size and, where the ETag is the MD5 of
    the bytes, their MD5.
    """

    def __init__(self, client: Any, uri: str, size: int, marker: str | None):
        self.uri = uri
        self.size = size
        self.marker = unquote_etag(marker) or None
        location = parse_s3_uri(uri)
        pinned = {"IfMatch": f'"{self.marker}"'} if self.marker else {}
        try:
            response = client.get_object(Bucket=location.bucket, Key=location.key, **pinned)
        except ClientError as error:
            if refusal(error) is Refusal.CHANGED:
                raise VerificationError(
                    f"{uri}: the source changed since it was planned (its ETag is no longer "
                    f"{self.marker})"
                ) from None
            raise CopyError(f"cannot read source file {uri}: {error_reason(error)}") from None
        except BotoCoreError as error:
            raise CopyError(f"cannot read source file {uri}: {error_reason(error)}") from None
        self._body = response["Body"]
        etag = unquote_etag(response.get("ETag"))
        if self.marker and etag != self.marker:
            # A store that ignores If-Match (S3 answers 412 instead).
            self.close()
            raise VerificationError(
                f"{uri}: the source changed since it was planned (ETag {etag}, planned "
                f"{self.marker})"
            )
        if response.get("ContentLength") != size:
            self.close()
            raise VerificationError(
                f"{uri}: expected {size} bytes, found {response.get('ContentLength')} bytes "
                f"(the source changed since it was planned)"
            )
        checkable = etag_is_md5(response) and MD5_ETAG.match(etag) is not None
        self._expected_md5 = etag if checkable else None
        self._md5 = hashlib.md5(usedforsecurity=False) if checkable else None
        self._read = 0

    def read(self, size: int) -> bytes:
        """Up to ``size`` bytes: fewer only at the end (a part must be whole)."""
        chunks: list[bytes] = []
        wanted = size
        try:
            while wanted > 0 and (chunk := self._body.read(wanted)):
                chunks.append(chunk)
                wanted -= len(chunk)
        except (BotoCoreError, OSError) as error:
            raise CopyError(f"cannot read source file {self.uri}: {error_reason(error)}") from None
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        self._read += len(data)
        if self._md5 is not None:
            self._md5.update(data)
        return data

    def finish(self) -> None:
        """Raise ``VerificationError`` unless exactly the planned object was read."""
        if self._read != self.size:
            raise VerificationError(
                f"{self.uri}: expected {self.size} bytes, read {self._read} bytes"
            )
        if self._md5 is not None and self._md5.hexdigest() != self._expected_md5:
            raise VerificationError(
                f"{self.uri}: the bytes read have MD5 {self._md5.hexdigest()}, the object's "
                f"ETag is {self._expected_md5}"
            )

    def close(self) -> None:
        self._body.close()


def put_object(client: Any, uri: str, data: bytes) -> None:
    """Write ``data`` as the object ``uri`` with one ``PutObject``, verified by its answer."""
    digest = hashlib.md5(data, usedforsecurity=False)
    # The bytes as they leave: a fail point may corrupt or cut them after their MD5 was
    # taken, as a network could (the failure drills of tests/e2e/test_faults.py).
    _put(client, uri, faults.alter("copy.body", data), digest)


def put_file(
    client: Any,
    uri: str,
    handle: BinaryIO,
    size: int,
    digest: Any,
    *,
    progress: Progress | None = None,
    cancelled: threading.Event | None = None,
) -> None:
    """Stream the ``size`` bytes of ``handle`` (from its start) as the object ``uri``.

    One ``PutObject`` whatever the size (up to S3's 5 GiB), holding no more of the file in
    memory than a block: ``digest`` is the MD5 of those bytes, read beforehand, sent as
    ``Content-MD5`` and checked against the answered ETag as for ``put_object``. A file that
    changed since then is refused by S3 (its bytes no longer match that MD5), caught by the
    ETag where the store does not check (moto), or found short by the body itself.
    """
    _put(client, uri, StreamedBody(handle, uri, size, progress, cancelled), digest)


def _put(client: Any, uri: str, body: bytes | StreamedBody, digest: Any) -> None:
    target = parse_s3_uri(uri)
    try:
        response = write_request(
            uri,
            client.put_object,
            **target.address,
            Body=body,
            ContentMD5=base64.b64encode(digest.digest()).decode(),
        )
    except CopyError:
        # botocore reports a streamed body's own failure as a failure to send.
        if isinstance(body, StreamedBody) and body.failure is not None:
            raise body.failure from None
        raise
    check_etag(uri, response, digest.hexdigest(), "the object")


class StreamedBody:
    """``size`` bytes of an open local file as a request body, read from disk as they go.

    Seekable, so that a request sent again starts over. Never longer than ``size``, and a
    body that ends before ``size`` bytes raises ``VerificationError`` instead: a request
    that declared a length it cannot send would leave the server waiting for the rest.
    ``progress`` hears of each byte once, however often the body is read again; a set
    ``cancelled`` stops the request at its next block. At the ``copy.body`` fail point the
    last block may be corrupted or cut, as a network could.
    """

    def __init__(
        self,
        handle: BinaryIO,
        uri: str,
        size: int,
        progress: Progress | None = None,
        cancelled: threading.Event | None = None,
    ):
        self._handle = handle
        self._uri = uri
        self._size = size
        self._progress = progress
        self._cancelled = cancelled
        self._position = 0
        self._reported = 0
        #: The error this body raised, if any (the client may report it as another).
        self.failure: Exception | None = None
        handle.seek(0)

    def __len__(self) -> int:
        return self._size

    def read(self, amount: int | None = -1) -> bytes:
        wanted = self._size - self._position
        if amount is not None and amount >= 0:
            wanted = min(amount, wanted)
        if self._cancelled is not None and self._cancelled.is_set():
            self.failure = ReplicationInterruptedError(f"copying to {self._uri} was stopped")
            raise self.failure
        data = self._handle.read(wanted) if wanted else b""
        if data and self._position + len(data) == self._size:
            data = faults.alter("copy.body", data)
        if len(data) < wanted:
            self.failure = VerificationError(
                f"{self._uri}: the body ended after {self._position + len(data)} of the "
                f"{self._size} bytes declared (the source shrank since it was read)"
            )
            raise self.failure
        self._position += len(data)
        if self._progress is not None and self._position > self._reported:
            self._progress(self._position - self._reported)
            self._reported = self._position
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._position, os.SEEK_END: self._size}[whence]
        self._position = min(max(0, base + offset), self._size)
        self._handle.seek(self._position)
        return self._position

    def tell(self) -> int:
        return self._position


def delete_object(client: Any, uri: str) -> None:
    """Remove an object found wrong, so that nothing unverified stays (best effort)."""
    try:
        client.delete_object(**parse_s3_uri(uri).address)
    except (ClientError, BotoCoreError):
        pass  # the snapshot folder is removed with everything in it when the run aborts


def write_request(
    uri: str, call: Callable[..., dict[str, Any]], **arguments: Any
) -> dict[str, Any]:
    """One write request; S3's refusals as Ferry's errors. (botocore retries transient ones.)"""
    try:
        return call(**arguments)
    except (ClientError, BotoCoreError) as error:
        raise write_failure(uri, error) from None


def write_failure(uri: str, error: ClientError | BotoCoreError) -> CopyError:
    kind = refusal(error)
    if kind is Refusal.BAD_DIGEST:
        return VerificationError(
            f"{uri}: S3 received other bytes than were sent ({error_reason(error)})"
        )
    if kind is Refusal.NOT_ALLOWED:
        return TargetNotWritableError(f"cannot write {uri}: {error_reason(error)}")
    return CopyError(f"cannot write {uri}: {error_reason(error)}")


def check_etag(uri: str, response: dict[str, Any], expected: str, what: str) -> None:
    """The store's ETag must be the MD5 of what was sent (where its ETag is an MD5 at all).

    S3 already refused a body whose MD5 differs from ``Content-MD5``; this also catches a
    store that does not check it (moto).
    """
    etag = unquote_etag(response.get("ETag"))
    if not etag_is_md5(response) or not (MD5_ETAG.match(etag) or MULTIPART_ETAG.match(etag)):
        return
    if etag != expected:
        raise VerificationError(
            f"{uri}: {what} was stored with ETag {etag}, but the bytes sent have MD5 {expected}"
        )
