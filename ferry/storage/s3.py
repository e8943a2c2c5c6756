"""S3's vocabulary, below every module that talks to it: addresses, limits, answers.

An ``s3://`` URI and its bucket and key; S3's multipart limits; what an ETag says about the
bytes it names; and what an error code means for a copy. Nothing here sends a request.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from ferry.core.errors import CopyError

MiB = 1024 * 1024
GiB = 1024 * MiB

S3_SCHEMES = ("s3", "s3a", "s3n")

#: S3's limits: one request (PutObject, CopyObject) writes at most 5 GiB; a multipart upload
#: has at most 10,000 parts of 5 MiB to 5 GiB each (the last part may be smaller).
MAX_SINGLE_REQUEST_SIZE = 5 * GiB
MIN_PART_SIZE = 5 * MiB
MAX_PART_SIZE = 5 * GiB
MAX_PARTS = 10_000

#: Told the bytes copied as they are copied (called from worker threads).
Progress = Callable[[int], None]

#: An ETag that is the MD5 of the object's bytes (one part, no KMS), and one of a multipart
#: upload: the MD5 of its parts' MD5s, and the number of parts.
MD5_ETAG = re.compile(r"^[0-9a-f]{32}$")
MULTIPART_ETAG = re.compile(r"^[0-9a-f]{32}-[0-9]+$")


@dataclass(frozen=True)
class S3Object:
    """An object's address: bucket and key."""

    bucket: str
    key: str

    @property
    def address(self) -> dict[str, str]:
        """The ``Bucket`` and ``Key`` arguments of a request about this object."""
        return {"Bucket": self.bucket, "Key": self.key}


def parse_s3_uri(uri: str) -> S3Object:
    """Split an ``s3://``, ``s3a://`` or ``s3n://`` URI into bucket and key.

    Raises ``CopyError`` for any other scheme, or a URI without a bucket or a key.
    """
    # Not urlparse: keys may hold '?', '#' and '%XX' (Hive escapes partition values in paths)
    # and all of them belong to the key.
    scheme, separator, rest = uri.partition("://")
    if not separator or scheme.lower() not in S3_SCHEMES:
        raise CopyError(f"{uri} is not an S3 URI: the S3 server-side copier copies only S3 objects")
    bucket, _, key = rest.partition("/")
    if not bucket or not key:
        raise CopyError(f"{uri} does not name an S3 bucket and key")
    return S3Object(bucket, key)


def unquote_etag(etag: str | None) -> str:
    return (etag or "").strip('"')


def etag_is_md5(response: dict) -> bool:
    """Whether an object's ETag, as this response describes it, can be derived from MD5s.

    True for objects stored in plain text or with SSE-S3 (``AES256``); SSE-KMS
    (``aws:kms``, ``aws:kms:dsse``) and SSE-C give ETags that are not.
    """
    encryption = response.get("ServerSideEncryption")
    return encryption in (None, "AES256") and not response.get("SSECustomerAlgorithm")


class Refusal(Enum):
    """What an S3 error means for a copy (the transient ones are botocore's to retry)."""

    #: No such object. (A HEAD's answer has no body: botocore names it by its status.)
    NOT_FOUND = "not found"
    #: A pinned request (``IfMatch``, ``CopySourceIfMatch``) found another version.
    CHANGED = "changed"
    #: The body received is not the one whose checksum was sent.
    BAD_DIGEST = "bad digest"
    #: The bucket is missing or the request is not allowed.
    NOT_ALLOWED = "not allowed"


#: The one table of S3 error codes Ferry tells apart.
REFUSALS: dict[str, Refusal] = {
    "NoSuchKey": Refusal.NOT_FOUND,
    "NotFound": Refusal.NOT_FOUND,
    "404": Refusal.NOT_FOUND,
    "PreconditionFailed": Refusal.CHANGED,
    "412": Refusal.CHANGED,
    "BadDigest": Refusal.BAD_DIGEST,
    "InvalidDigest": Refusal.BAD_DIGEST,
    "NoSuchBucket": Refusal.NOT_ALLOWED,
    "AccessDenied": Refusal.NOT_ALLOWED,
    "403": Refusal.NOT_ALLOWED,
    "AllAccessDisabled": Refusal.NOT_ALLOWED,
    "InvalidBucketName": Refusal.NOT_ALLOWED,
}


def refusal(error: BaseException) -> Refusal | None:
    """What ``error`` means for a copy; None for anything else."""
    return REFUSALS.get(error_code(error))


def error_code(error: BaseException) -> str:
    """S3's error code (``NoSuchKey``, ``PreconditionFailed``…); "" for other errors."""
    return _details(error).get("Code", "")


def error_reason(error: BaseException) -> str:
    """One line: S3's code and message, or botocore's own message."""
    details = _details(error)
    if details:
        return ": ".join(part for part in (details.get("Code"), details.get("Message")) if part)
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _details(error: BaseException) -> dict:
    # Read from the answer botocore's ClientError carries, without importing botocore: the
    # file systems import this module, and reading local files needs no AWS SDK.
    response = getattr(error, "response", None)
    details = response.get("Error") if isinstance(response, dict) else None
    return details if isinstance(details, dict) else {}
