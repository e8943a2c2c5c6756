"""Reading and writing S3 objects for the inline copier: one request per small object.

pyarrow's S3 streams cannot pin a read to an ETag nor send a ``Content-MD5``, and they ask
for an object's size (a HEAD) before reading it. Here every S3 object the inline copier
touches is one boto3 request where it can be:

- a read is one ``GetObject`` pinned to the planned ETag (``IfMatch``): S3 answers 412 when
  the object was replaced since planning; the bytes read are also checked against the
  ETag where the ETag is their MD5;
- a small object is written with one ``PutObject`` carrying the ``Content-MD5`` of the bytes
  read: S3 refuses a body that does not match it (``BadDigest``), so a corrupted or short
  body never becomes an object, and the response's ETag confirms what was stored;
- a large local file, where the copier chose so (``ferry.concurrency.uploads``), is read
  once for its MD5 and then streamed from disk in one ``PutObject`` carrying it
  (``put_file``), checked as a small object's;
- any other large object is a multipart upload whose every part carries its
  ``Content-MD5`` and whose completed ETag (the MD5 of the parts' MD5s) is checked against
  the parts sent.

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
import queue
import re
import ssl
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Executor, Future, wait
from http.client import HTTPConnection, HTTPException, HTTPSConnection
from typing import Any, BinaryIO, NamedTuple
from urllib.parse import urlsplit
from xml.etree import ElementTree

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ferry import faults
from ferry.errors import (
    CopyError,
    ReplicationInterruptedError,
    TargetNotWritableError,
    VerificationError,
)
from ferry.s3_copy import MULTIPART_ETAG, error_code, error_reason, etag_is_md5, parse_s3_uri

Progress = Callable[[int], None]

_MD5_ETAG = re.compile(r"^[0-9a-f]{32}$")
#: Bytes a streamed body is read and sent in.
STREAM_BLOCK = 1024 * 1024
NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
CHANGED_CODES = frozenset({"PreconditionFailed", "412"})
DIGEST_CODES = frozenset({"BadDigest", "InvalidDigest"})
REFUSED_CODES = frozenset(
    {"NoSuchBucket", "AccessDenied", "403", "AllAccessDisabled", "InvalidBucketName"}
)


def unquote_etag(etag: str | None) -> str:
    return (etag or "").strip('"')


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
            if error_code(error) in CHANGED_CODES:
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
        checkable = etag_is_md5(response) and _MD5_ETAG.match(etag) is not None
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
    """Write ``data`` as the object ``uri`` with one ``PutObject``, verified by its answer.

    Sent directly (``DirectRequests``) where the client has that path, else by the client; an
    answer other than success is sent again by the client, which retries what is transient
    and whose error names the failure.
    """
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
    content_md5 = base64.b64encode(digest.digest()).decode()
    direct = direct_requests(client)
    response = direct.put(target.bucket, target.key, body, content_md5) if direct else None
    if response is None:
        if isinstance(body, StreamedBody):
            body.seek(0)
        try:
            response = _write(
                uri,
                client.put_object,
                Bucket=target.bucket,
                Key=target.key,
                Body=body,
                ContentMD5=content_md5,
            )
        except CopyError:
            # botocore reports a streamed body's own failure as a failure to send.
            if isinstance(body, StreamedBody) and body.failure is not None:
                raise body.failure from None
            raise
    _check_etag(uri, response, digest.hexdigest(), "the object")


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


class DirectRequests:
    """An object's one request — ``PutObject``, ``CopyObject`` — without the client's pipeline.

    A request through a boto3 client passes its event hooks, endpoint rules, serializer,
    retry handler and parser: about 2 ms of CPU per small ``PutObject`` on this project's
    development machine. Signed by botocore's ``S3SigV4Auth`` and sent on ``http.client``
    (``Connections``), the same request costs about a third of that
    (``docs/PERFORMANCE.md``). A small object is one such request, so that overhead was
    most of a copier's CPU.

    What stays the client's: each bucket's URL (from a presigned URL, once per bucket), the
    credentials and region, the User-Agent and timeouts, and the ``before-send`` handlers,
    which still see each request (an in-process emulator answers there). Anything but a
    success — an error status, a ``CopyObject`` whose 200 carries an error, a failure to
    send — returns None, and the caller sends the request again through the client, which
    retries what is transient and names what is not.
    """

    _PLACEHOLDER = "ferry-placeholder-key"

    def __init__(self, client: Any, credentials: Any, connections: int):
        config = client.meta.config
        # Weakly: this is the value of a weak mapping keyed by the client, and a strong
        # reference back would keep every client (and its pools) alive for good.
        self._client = weakref.ref(client)
        self._credentials = credentials
        self._region = client.meta.region_name
        self._user_agent = config.user_agent
        self._timeouts = (config.connect_timeout, config.read_timeout)
        self._size = connections
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[str, str, Connections]] = {}
        self._endpoints: dict[tuple[str, str], Connections] = {}
        pools = self._endpoints
        weakref.finalize(self, lambda: [pool.close() for pool in list(pools.values())])

    def put(
        self, bucket: str, key: str, body: bytes | StreamedBody, content_md5: str
    ) -> dict | None:
        """One ``PutObject``; its answer as the client's would be (the fields Ferry reads).

        A ``StreamedBody`` is sent as it is read, its payload unsigned (as botocore signs a
        streamed upload over HTTPS): hashing it for the signature would read the file a
        third time. Its ``Content-MD5`` is what the store checks.
        """
        response = self._send("PutObject", bucket, key, {"Content-MD5": content_md5}, body)
        return None if response is None else _encryption(response.headers)

    def copy(self, bucket: str, key: str, source_bucket: str, source_key: str, etag: str):
        """One ``CopyObject`` of the source pinned to ``etag``, keeping its metadata."""
        from botocore.utils import SAFE_CHARS, percent_encode

        headers = {
            "x-amz-copy-source": percent_encode(f"{source_bucket}/{source_key}", SAFE_CHARS + "/"),
            "x-amz-copy-source-if-match": f'"{etag}"',
            "x-amz-metadata-directive": "COPY",
        }
        response = self._send("CopyObject", bucket, key, headers, b"")
        if response is None:
            return None
        try:
            result = ElementTree.fromstring(response.content)
        except ElementTree.ParseError:
            return None
        copied = next((e.text for e in result.iter() if e.tag.endswith("ETag")), None)
        if result.tag.endswith("Error") or copied is None:
            return None  # S3 may report a failed copy in a 200's body
        return {"CopyObjectResult": {"ETag": copied}, **_encryption(response.headers)}

    def _send(self, operation: str, bucket: str, key: str, headers: dict, body: Any):
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.hooks import first_non_none_response
        from botocore.utils import percent_encode

        base_url, base_path, connections = self._bucket(bucket)
        path = base_path + percent_encode(key, safe="/~")
        request = AWSRequest(
            "PUT", base_url + path, data=body, headers={**headers, "User-Agent": self._user_agent}
        )
        if isinstance(body, StreamedBody):
            request.context["client_config"] = _UNSIGNED_PAYLOAD
        S3SigV4Auth(self._credentials.get_frozen_credentials(), "s3", self._region).add_auth(
            request
        )
        prepared = request.prepare()
        try:
            answered = first_non_none_response(
                self._client().meta.events.emit(f"before-send.s3.{operation}", request=prepared)
            )
            response = (
                answered
                if answered is not None
                else connections.send("PUT", path, prepared.headers, body)
            )
        except (BotoCoreError, OSError, HTTPException):
            return None
        return response if response.status_code == 200 else None

    def _bucket(self, bucket: str) -> tuple[str, str, Connections]:
        """The bucket's URL as the client addresses it: its origin, its path, its connections."""
        known = self._buckets.get(bucket)
        if known is not None:
            return known
        with self._lock:
            if bucket not in self._buckets:
                presigned = self._client().generate_presigned_url(
                    "put_object", Params={"Bucket": bucket, "Key": self._PLACEHOLDER}
                )
                url = urlsplit(presigned.split("?", 1)[0][: -len(self._PLACEHOLDER)])
                origin = (url.scheme, url.netloc)
                if origin not in self._endpoints:
                    self._endpoints[origin] = Connections(*origin, self._timeouts, self._size)
                self._buckets[bucket] = (
                    f"{url.scheme}://{url.netloc}",
                    url.path,
                    self._endpoints[origin],
                )
            return self._buckets[bucket]


#: What makes botocore's ``S3SigV4Auth`` sign a request's payload as ``UNSIGNED-PAYLOAD``.
_UNSIGNED_PAYLOAD = Config(s3={"payload_signing_enabled": False})


class Answer(NamedTuple):
    """An HTTP answer, as the direct path reads it (the fields of botocore's ``AWSResponse``)."""

    status_code: int
    headers: Any
    content: bytes


class Connections:
    """Connections to one endpoint for the direct path: ``http.client``, kept alive, reused.

    botocore's HTTP session (urllib3 under its own wrapper) costs about 0.3 ms of CPU per
    small request above what ``http.client`` costs for the same request
    (``docs/PERFORMANCE.md``), and a small object's request is all a copier sends. A
    connection is taken for one request and given back if the server keeps it open (S3
    does); one the server closes (the local emulator closes each) opens again on its next
    request. At most ``size`` idle connections are kept. Any failure closes the
    connection and raises: the caller sends the request again through the client.
    """

    def __init__(self, scheme: str, netloc: str, timeouts: tuple[float, float], size: int):
        self._netloc = netloc
        self._connect_timeout, self._read_timeout = timeouts
        self._context = None
        if scheme == "https":
            from botocore.httpsession import get_cert_path

            bundle = get_cert_path(os.environ.get("AWS_CA_BUNDLE") or True)
            self._context = ssl.create_default_context(cafile=bundle)
        self._idle: queue.LifoQueue[HTTPConnection] = queue.LifoQueue(max(1, size))

    def send(self, method: str, target: str, headers: Any, body: bytes) -> Answer:
        try:
            connection = self._idle.get_nowait()
        except queue.Empty:
            connection = self._new()
        try:
            if connection.sock is None:
                connection.connect()
                connection.sock.settimeout(self._read_timeout)
            connection.request(method, target, body=body, headers=dict(headers.items()))
            response = connection.getresponse()
            answer = Answer(response.status, response.headers, response.read())
        except BaseException:
            connection.close()
            raise
        try:
            self._idle.put_nowait(connection)
        except queue.Full:
            connection.close()
        return answer

    def _new(self) -> HTTPConnection:
        if self._context is not None:
            return HTTPSConnection(
                self._netloc,
                timeout=self._connect_timeout,
                context=self._context,
                blocksize=STREAM_BLOCK,
            )
        return HTTPConnection(self._netloc, timeout=self._connect_timeout, blocksize=STREAM_BLOCK)

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


def _encryption(headers: Any) -> dict[str, Any]:
    """How the answered object is encrypted (what says whether its ETag is an MD5)."""
    return {
        "ETag": headers.get("ETag"),
        "ServerSideEncryption": headers.get("x-amz-server-side-encryption"),
        "SSECustomerAlgorithm": headers.get("x-amz-server-side-encryption-customer-algorithm"),
    }


_direct: weakref.WeakKeyDictionary[Any, DirectRequests] = weakref.WeakKeyDictionary()


def direct_requests(client: Any) -> DirectRequests | None:
    """The direct path of ``client``'s small-object requests, if it has one."""
    return _direct.get(client)


def send_small_requests_directly(client: Any, credentials: Any, connections: int) -> None:
    """Send ``client``'s small-object requests directly (``DirectRequests``) where possible.

    Not without credentials or a region, nor where a proxy is configured (proxies stay the
    client's).
    """
    from botocore.utils import get_environ_proxies

    if credentials is None or not client.meta.region_name:
        return
    if get_environ_proxies(client.meta.endpoint_url) or client.meta.config.proxies:
        return
    _direct[client] = DirectRequests(client, credentials, connections)


class PartSlots:
    """Bounds the parts held in memory by every upload of one copier (a semaphore)."""

    def __init__(self, parts: int):
        self._semaphore = threading.BoundedSemaphore(max(1, parts))

    def acquire(self) -> None:
        self._semaphore.acquire()

    def release(self) -> None:
        self._semaphore.release()


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
    are sent one after another. ``slots`` bounds the parts in memory. Any failure aborts
    the upload, so no part is left behind (nor billed).
    """
    target = parse_s3_uri(uri)
    address = {"Bucket": target.bucket, "Key": target.key}
    upload_id = _write(uri, client.create_multipart_upload, **address)["UploadId"]
    futures: list[Future] = []
    done: list[tuple[str, bytes]] = []
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
            arguments = (client, uri, address, upload_id, number, data, slots, progress)
            if parts is None:
                future: Future = Future()
                future.set_result(_upload_part(*arguments))
            else:
                future = parts.submit(_upload_part, *arguments)
            futures.append(future)
            _raise_first_failure(futures, running_ok=True)
        wait(futures)
        _raise_first_failure(futures)
        done = [future.result() for future in futures]
        if total != size:
            raise VerificationError(f"{uri}: expected {size} bytes, read {total} bytes")
        response = _write(
            uri,
            client.complete_multipart_upload,
            **address,
            UploadId=upload_id,
            MultipartUpload={
                "Parts": [
                    {"PartNumber": number, "ETag": etag}
                    for number, (etag, _) in enumerate(done, start=1)
                ]
            },
        )
    except BaseException:
        for future in futures:
            future.cancel()
        wait(futures)
        _abort(client, address, upload_id)
        raise
    whole = hashlib.md5(b"".join(digest for _, digest in done), usedforsecurity=False)
    _check_etag(uri, response, f"{whole.hexdigest()}-{len(done)}", "the completed object")


def _upload_part(
    client: Any,
    uri: str,
    address: dict[str, str],
    upload_id: str,
    number: int,
    data: bytes,
    slots: PartSlots | None,
    progress: Progress | None,
) -> tuple[str, bytes]:
    """Upload one part with its ``Content-MD5``; returns its ETag and its MD5."""
    try:
        digest = hashlib.md5(data, usedforsecurity=False)
        response = _write(
            uri,
            client.upload_part,
            **address,
            UploadId=upload_id,
            PartNumber=number,
            Body=faults.alter("copy.body", data),
            ContentMD5=base64.b64encode(digest.digest()).decode(),
        )
        _check_etag(uri, response, digest.hexdigest(), f"part {number}")
        if progress is not None:
            progress(len(data))
        return response["ETag"], digest.digest()
    finally:
        if slots is not None:
            slots.release()


def delete_object(client: Any, uri: str) -> None:
    """Remove an object found wrong, so that nothing unverified stays (best effort)."""
    target = parse_s3_uri(uri)
    try:
        client.delete_object(Bucket=target.bucket, Key=target.key)
    except (ClientError, BotoCoreError):
        pass  # the snapshot folder is removed with everything in it when the run aborts


def _write(uri: str, call: Callable[..., dict[str, Any]], **arguments: Any) -> dict[str, Any]:
    """One write request; S3's refusals as Ferry's errors. (botocore retries transient ones.)"""
    try:
        return call(**arguments)
    except ClientError as error:
        code = error_code(error)
        if code in DIGEST_CODES:
            raise VerificationError(
                f"{uri}: S3 received other bytes than were sent ({error_reason(error)})"
            ) from None
        if code in REFUSED_CODES:
            raise TargetNotWritableError(f"cannot write {uri}: {error_reason(error)}") from None
        raise CopyError(f"cannot write {uri}: {error_reason(error)}") from None
    except BotoCoreError as error:
        raise CopyError(f"cannot write {uri}: {error_reason(error)}") from None


def _check_etag(uri: str, response: dict[str, Any], expected: str, what: str) -> None:
    """The store's ETag must be the MD5 of what was sent (where its ETag is an MD5 at all).

    S3 already refused a body whose MD5 differs from ``Content-MD5``; this also catches a
    store that does not check it (moto).
    """
    etag = unquote_etag(response.get("ETag"))
    if not etag_is_md5(response) or not (_MD5_ETAG.match(etag) or MULTIPART_ETAG.match(etag)):
        return
    if etag != expected:
        raise VerificationError(
            f"{uri}: {what} was stored with ETag {etag}, but the bytes sent have MD5 {expected}"
        )


def _raise_first_failure(futures: list[Future], running_ok: bool = False) -> None:
    for future in futures:
        if running_ok and not future.done():
            continue
        if not future.cancelled() and future.exception() is not None:
            raise future.exception()  # type: ignore[misc]


def _abort(client: Any, address: dict[str, str], upload_id: str) -> None:
    try:
        client.abort_multipart_upload(**address, UploadId=upload_id)
    except (ClientError, BotoCoreError):
        # The copy's own failure is the one to report; a lifecycle rule
        # (AbortIncompleteMultipartUpload) on the bucket collects what remains.
        pass
