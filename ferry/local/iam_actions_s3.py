"""The IAM checks of an S3 request: the bucket's or the object's action, and the KMS key
S3 uses on the caller's behalf to read or write an SSE-KMS object."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import xmltodict

from ferry.local.authorization import Check
from ferry.local.iam_request import HttpRequest, Unmodelled, key_arn

#: Bucket sub-resources and the action that reads (GET) or writes (PUT) each.
_S3_BUCKET_SUBRESOURCES = {
    "location": ("s3:GetBucketLocation", None),
    "notification": ("s3:GetBucketNotification", "s3:PutBucketNotification"),
    "policy": ("s3:GetBucketPolicy", "s3:PutBucketPolicy"),
    "encryption": ("s3:GetEncryptionConfiguration", "s3:PutEncryptionConfiguration"),
    "versioning": ("s3:GetBucketVersioning", "s3:PutBucketVersioning"),
    "tagging": ("s3:GetBucketTagging", "s3:PutBucketTagging"),
    "lifecycle": ("s3:GetLifecycleConfiguration", "s3:PutLifecycleConfiguration"),
    "publicAccessBlock": ("s3:GetBucketPublicAccessBlock", "s3:PutBucketPublicAccessBlock"),
    "acl": ("s3:GetBucketAcl", "s3:PutBucketAcl"),
    "uploads": ("s3:ListBucketMultipartUploads", None),
    "versions": ("s3:ListBucketVersions", None),
}


def s3_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    path = request.path.lstrip("/")
    bucket, _, key = path.partition("/")
    key = unquote(key)
    if not bucket:
        if request.method == "GET":
            return [Check("s3:ListAllMyBuckets", "*")]
        return Unmodelled(f"s3 {request.method} /")
    if not key:
        return _bucket_checks(request, bucket)
    return _object_checks(request, bucket, key)


def _bucket_checks(request: HttpRequest, bucket: str) -> list[Check] | Unmodelled:
    method, query = request.method, request.query
    bucket_arn = f"arn:aws:s3:::{bucket}"
    if method == "HEAD":  # HeadBucket
        return [Check("s3:ListBucket", bucket_arn)]
    if method == "POST" and "delete" in query:  # DeleteObjects: each key
        keys = _delete_keys(request.body)
        return [Check("s3:DeleteObject", f"{bucket_arn}/{name}") for name in keys]
    for name, (read, write) in _S3_BUCKET_SUBRESOURCES.items():
        if name in query:
            action = read if method == "GET" else write if method == "PUT" else None
            if action is None:
                return Unmodelled(f"s3 {method} ?{name}")
            return [Check(action, bucket_arn)]
    if method == "GET":  # ListObjects(V2)
        context = {"s3:prefix": query.get("prefix", [""])[0]}
        if "delimiter" in query:
            context["s3:delimiter"] = query["delimiter"][0]
        if "max-keys" in query:
            context["s3:max-keys"] = query["max-keys"][0]
        return [Check("s3:ListBucket", bucket_arn, context)]
    if method == "PUT":
        return [Check("s3:CreateBucket", bucket_arn)]
    if method == "DELETE":
        return [Check("s3:DeleteBucket", bucket_arn)]
    return Unmodelled(f"s3 {method} bucket {bucket}")


def _object_checks(request: HttpRequest, bucket: str, key: str) -> list[Check] | Unmodelled:
    method, query = request.method, request.query
    object_arn = f"arn:aws:s3:::{bucket}/{key}"
    versioned = "versionId" in query
    if method in ("GET", "HEAD"):
        if "uploadId" in query:
            return [Check("s3:ListMultipartUploadParts", object_arn)]
        if "tagging" in query:
            return [Check("s3:GetObjectTagging", object_arn)]
        if "acl" in query:
            return [Check("s3:GetObjectAcl", object_arn)]
        return [
            Check("s3:GetObjectVersion" if versioned else "s3:GetObject", object_arn),
            *_decrypting(bucket, key),
        ]
    if method == "PUT":
        return _object_write_checks(request, bucket, object_arn)
    if method == "POST":
        if "uploads" in query or "uploadId" in query:  # create / complete a multipart upload
            return [Check("s3:PutObject", object_arn), *_encrypting(bucket, request)]
        return Unmodelled(f"s3 POST object ?{'&'.join(query)}")
    if method == "DELETE":
        if "uploadId" in query:
            return [Check("s3:AbortMultipartUpload", object_arn)]
        if "tagging" in query:
            return [Check("s3:DeleteObjectTagging", object_arn)]
        return [Check("s3:DeleteObjectVersion" if versioned else "s3:DeleteObject", object_arn)]
    return Unmodelled(f"s3 {method} object")


def _object_write_checks(request: HttpRequest, bucket: str, object_arn: str) -> list[Check]:
    """A PUT on an object: its tags, its ACL, or its data (a copy reads its source too)."""
    query = request.query
    if "tagging" in query:
        return [Check("s3:PutObjectTagging", object_arn)]
    if "acl" in query:
        return [Check("s3:PutObjectAcl", object_arn)]
    checks = [Check("s3:PutObject", object_arn), *_encrypting(bucket, request)]
    source = request.headers.get("x-amz-copy-source")
    if source:  # CopyObject, UploadPartCopy: the source is read as well
        source_path, _, source_query = unquote(source).lstrip("/").partition("?")
        action = "s3:GetObjectVersion" if "versionId=" in source_query else "s3:GetObject"
        checks.append(Check(action, f"arn:aws:s3:::{source_path}"))
        source_bucket, _, source_key = source_path.partition("/")
        checks += _decrypting(source_bucket, source_key)
    elif "uploadId" in query:  # UploadPart: S3 decrypts the upload's data key
        checks += [
            Check("kms:Decrypt", check.resource, check.context)
            for check in _encrypting(bucket, request)
        ]
    return checks


def _bucket(name: str) -> Any:
    from moto.s3.models import s3_backends

    for account in list(s3_backends.keys()):
        found = s3_backends[account]["aws"].buckets.get(name)
        if found is not None:
            return found
    return None


def bucket_region_of(bucket: str) -> str | None:
    found = _bucket(bucket)
    return found.region_name if found is not None else None


def _via_s3(key: str) -> dict[str, str]:
    """What S3 tells KMS when it uses the key ``key`` (an ARN) on the caller's behalf
    (SSE-KMS)."""
    return {"kms:ViaService": f"s3.{key.split(':')[3]}.amazonaws.com"}


def _encrypting(bucket_name: str, request: HttpRequest) -> list[Check]:
    """The KMS data key S3 generates, with the caller's permissions, for an SSE-KMS write."""
    key = request.headers.get("x-amz-server-side-encryption-aws-kms-key-id")
    if key is None:
        bucket = _bucket(bucket_name)
        encryption = (getattr(bucket, "encryption", None) or {}).get("Rule") or {}
        default = encryption.get("ApplyServerSideEncryptionByDefault") or {}
        if default.get("SSEAlgorithm") != "aws:kms":
            return []
        key = default.get("KMSMasterKeyID")
    if not key:
        return []
    arn = key_arn(key, request.signed.region, request.account)
    return [Check("kms:GenerateDataKey", arn, _via_s3(arn), account=arn.split(":")[4])]


def _decrypting(bucket_name: str, key_name: str) -> list[Check]:
    """The KMS decryption S3 asks for, with the caller's permissions, to read an SSE-KMS
    object."""
    bucket = _bucket(bucket_name)
    stored = bucket.keys.get(key_name) if bucket is not None else None
    if stored is None or getattr(stored, "encryption", None) != "aws:kms" or not stored.kms_key_id:
        return []
    arn = key_arn(stored.kms_key_id, bucket.region_name, bucket.account_id)
    return [Check("kms:Decrypt", arn, _via_s3(arn), account=arn.split(":")[4])]


def _delete_keys(body: bytes) -> list[str]:
    """The keys of a ``DeleteObjects`` body, read as the emulator's S3 reads them (xmltodict),
    so that what is authorized is what is deleted."""
    objects = xmltodict.parse(body, strip_whitespace=False)["Delete"].get("Object") or []
    if not isinstance(objects, list):  # one <Object> is a mapping, not a list of one
        objects = [objects]
    return [entry.get("Key") or "" for entry in objects]
