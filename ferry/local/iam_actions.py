"""The IAM checks AWS makes for an HTTP request: its actions, resources and condition keys.

The emulator's front door (``ferry.local.emulator_iam``) reads who signed a request
(``signature_of``), turns the request into the checks AWS would evaluate (``checks_of``) and
hands them to ``ferry.local.authorization``. A request this module cannot map is
``Unmodelled``: refused with a message that names it, never silently allowed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote

import xmltodict

from ferry.local.authorization import Check


@dataclass(frozen=True)
class Unmodelled:
    """A request this module does not know the permissions of."""

    description: str


_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")


@dataclass(frozen=True)
class Signed:
    """What the signature of a request tells: who, where, to which service."""

    access_key_id: str
    region: str
    service: str


def signature_of(headers: dict[str, str], query: dict[str, list[str]]) -> Signed | None:
    authorization = headers.get("authorization", "")
    found = _CREDENTIAL.search(authorization)
    if found is None and "X-Amz-Credential" in query:
        found = _CREDENTIAL.search("Credential=" + query["X-Amz-Credential"][0])
    if found is None:
        return None
    return Signed(found.group(1), found.group(2), found.group(3))


@dataclass
class HttpRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    signed: Signed
    account: str

    def json(self) -> dict[str, Any]:
        return json.loads(self.body or b"{}")

    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}


def checks_of(request: HttpRequest) -> list[Check] | Unmodelled:
    """The IAM checks AWS makes for ``request``."""
    service = request.signed.service
    mapper = _MAPPERS.get(service)
    if mapper is None:
        return Unmodelled(f"{service} {request.method} {request.path}")
    return mapper(request)


def _arn(service: str, request: HttpRequest, resource: str, account: str | None = None) -> str:
    return f"arn:aws:{service}:{request.signed.region}:{account or request.account}:{resource}"


# S3 -----------------------------------------------------------------------------------------

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


def _s3(request: HttpRequest) -> list[Check] | Unmodelled:
    path = request.path.lstrip("/")
    bucket, _, key = path.partition("/")
    key = unquote(key)
    method, query = request.method, request.query
    if not bucket:
        if method == "GET":
            return [Check("s3:ListAllMyBuckets", "*")]
        return Unmodelled(f"s3 {method} /")
    bucket_arn = f"arn:aws:s3:::{bucket}"
    if not key:
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
    object_arn = f"{bucket_arn}/{key}"
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


def _bucket(name: str) -> Any:
    from moto.s3.models import s3_backends

    for account in list(s3_backends.keys()):
        found = s3_backends[account]["aws"].buckets.get(name)
        if found is not None:
            return found
    return None


def _via_s3(key_arn: str) -> dict[str, str]:
    """What S3 tells KMS when it uses a key on the caller's behalf (SSE-KMS)."""
    return {"kms:ViaService": f"s3.{key_arn.split(':')[3]}.amazonaws.com"}


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
    arn = _key_arn(key, request.signed.region, request.account)
    return [Check("kms:GenerateDataKey", arn, _via_s3(arn), account=arn.split(":")[4])]


def _decrypting(bucket_name: str, key_name: str) -> list[Check]:
    """The KMS decryption S3 asks for, with the caller's permissions, to read an SSE-KMS
    object."""
    bucket = _bucket(bucket_name)
    stored = bucket.keys.get(key_name) if bucket is not None else None
    if stored is None or getattr(stored, "encryption", None) != "aws:kms" or not stored.kms_key_id:
        return []
    arn = _key_arn(stored.kms_key_id, bucket.region_name, bucket.account_id)
    return [Check("kms:Decrypt", arn, _via_s3(arn), account=arn.split(":")[4])]


def _delete_keys(body: bytes) -> list[str]:
    """The keys of a ``DeleteObjects`` body, read as the emulator's S3 reads them (xmltodict),
    so that what is authorized is what is deleted."""
    objects = xmltodict.parse(body, strip_whitespace=False)["Delete"].get("Object") or []
    if not isinstance(objects, list):  # one <Object> is a mapping, not a list of one
        objects = [objects]
    return [entry.get("Key") or "" for entry in objects]


# JSON services: the operation in X-Amz-Target ------------------------------------------------


def _target(request: HttpRequest) -> str:
    return request.headers.get("x-amz-target", "").rsplit(".", 1)[-1]


#: Glue operations by the resources AWS authorizes them on: the database's, or the table's.
_GLUE_DATABASE_OPERATIONS = {"GetDatabase", "CreateDatabase", "UpdateDatabase"}
_GLUE_TABLE_OPERATIONS = {
    "GetTable", "CreateTable", "UpdateTable", "DeleteTable", "GetTableVersions",
    "GetPartition", "GetPartitions", "BatchGetPartition", "CreatePartition",
    "BatchCreatePartition", "UpdatePartition", "BatchUpdatePartition", "DeletePartition",
    "BatchDeletePartition", "GetColumnStatisticsForTable",
}  # fmt: skip


def _glue(request: HttpRequest) -> list[Check] | Unmodelled:
    operation = _target(request)
    body = request.json()
    account = body.get("CatalogId") or request.account
    catalog = _arn("glue", request, "catalog", account)
    action = f"glue:{operation}"

    def on(*resources: str) -> list[Check]:
        return [Check(action, catalog, account=account)] + [
            Check(action, _arn("glue", request, r, account), account=account) for r in resources
        ]

    if operation in _GLUE_DATABASE_OPERATIONS:
        name = body.get("Name") or (body.get("DatabaseInput") or {}).get("Name", "")
        return on(f"database/{name.lower()}")
    if operation == "DeleteDatabase":
        name = body["Name"].lower()
        return on(f"database/{name}", f"table/{name}/*", f"userDefinedFunction/{name}/*")
    if operation == "GetDatabases":
        return on("database/*")
    database = str(body.get("DatabaseName", "")).lower()
    if operation == "GetTables":
        return on(f"database/{database}", f"table/{database}/*")
    if operation in _GLUE_TABLE_OPERATIONS:
        table = (
            body.get("TableName")
            or body.get("Name")
            or (body.get("TableInput") or {}).get("Name", "")
        )
        return on(f"database/{database}", f"table/{database}/{str(table).lower()}")
    if operation == "BatchDeleteTable":
        return on(
            f"database/{database}",
            *(f"table/{database}/{t.lower()}" for t in body["TablesToDelete"]),
        )
    return Unmodelled(f"glue {operation}")


def _dynamodb(request: HttpRequest) -> list[Check] | Unmodelled:
    operation = _target(request)
    body = request.json()
    action = f"dynamodb:{operation}"
    if operation in ("BatchWriteItem", "BatchGetItem"):
        return [
            Check(action, _arn("dynamodb", request, f"table/{t}")) for t in body["RequestItems"]
        ]
    if operation == "ListTables":
        return [Check(action, "*")]
    if "TableName" in body:
        table = _arn("dynamodb", request, f"table/{body['TableName']}")
        return [Check(action, table, _leading_keys(operation, body))]
    return Unmodelled(f"dynamodb {operation}")


#: The partition key of Ferry's state table (``ferry.replicas.ledger``'s key design). The mapping
#: sees a request, not the table's key schema: the condition key is given for this name.
_PARTITION_KEY = "pk"


def _leading_keys(operation: str, body: dict[str, Any]) -> dict[str, Any]:
    """``dynamodb:LeadingKeys``, the partition key values a request touches, as AWS gives it
    for item reads and writes and for a Query's key condition (``pk = :value``)."""
    item = body.get("Item") if operation == "PutItem" else body.get("Key")
    if operation in ("GetItem", "PutItem", "UpdateItem", "DeleteItem") and isinstance(item, dict):
        value = item.get(_PARTITION_KEY, {}).get("S")
        return {"dynamodb:LeadingKeys": [value]} if value is not None else {}
    if operation == "Query":
        condition = body.get("KeyConditionExpression", "")
        names = {v: k for k, v in body.get("ExpressionAttributeNames", {}).items()}
        for name, placeholder in re.findall(r"([#\w]+)\s*=\s*(:\w+)", condition):
            if names.get(_PARTITION_KEY) == name or name == _PARTITION_KEY:
                value = body.get("ExpressionAttributeValues", {}).get(placeholder, {}).get("S")
                if value is not None:
                    return {"dynamodb:LeadingKeys": [value]}
    return {}


def _secretsmanager(request: HttpRequest) -> list[Check] | Unmodelled:
    operation = _target(request)
    body = request.json()
    if "SecretId" not in body:
        return Unmodelled(f"secretsmanager {operation}")
    return [Check(f"secretsmanager:{operation}", _secret_arn(body["SecretId"], request))]


def _secret_arn(identifier: str, request: HttpRequest) -> str:
    if identifier.startswith("arn:"):
        return identifier
    from moto.secretsmanager.models import secretsmanager_backends

    backend = secretsmanager_backends[request.account][request.signed.region]
    if identifier in backend.secrets:
        return backend.secrets[identifier].arn
    return _arn("secretsmanager", request, f"secret:{identifier}")


def _states(request: HttpRequest) -> list[Check] | Unmodelled:
    operation = _target(request)
    body = request.json()
    arn = body.get("stateMachineArn") or body.get("executionArn") or body.get("mapRunArn")
    if not arn:
        return Unmodelled(f"states {operation}")
    return [Check(f"states:{operation}", arn)]


def _kms(request: HttpRequest) -> list[Check] | Unmodelled:
    operation = _target(request)
    key = request.json().get("KeyId")
    if not key:
        return Unmodelled(f"kms {operation}")
    return [Check(f"kms:{operation}", _key_arn(key, request.signed.region, request.account))]


def _key_arn(key: str, region: str, account: str) -> str:
    """A key's ARN from any of its names (id, ARN, alias, alias ARN)."""
    if key.startswith("arn:") and ":key/" in key:
        return key
    from moto.kms.models import kms_backends

    try:
        key_id = kms_backends[account][region].any_id_to_key_id(key)
    except Exception:  # noqa: BLE001 - an unknown key: its name stands for it
        key_id = key
    return f"arn:aws:kms:{region}:{account}:key/{key_id}"


# Query services: the operation in the form's Action ------------------------------------------


def _sns(request: HttpRequest) -> list[Check] | Unmodelled:
    form = request.form()
    operation = form.get("Action", "")
    arn = form.get("TopicArn") or form.get("TargetArn")
    if operation == "CreateTopic":
        arn = _arn("sns", request, form["Name"])
    if not arn:
        return Unmodelled(f"sns {operation}")
    return [Check(f"sns:{operation}", arn)]


def _sts(request: HttpRequest) -> list[Check] | Unmodelled:
    form = request.form()
    operation = form.get("Action", "")
    if operation == "GetCallerIdentity":
        return []  # needs no permission
    if operation == "AssumeRole":
        role = form["RoleArn"]
        # A trust policy may ask for the external id the caller gives (a role in another
        # account, ``assume-role.external-id``).
        context = {"sts:ExternalId": form["ExternalId"]} if form.get("ExternalId") else {}
        return [Check("sts:AssumeRole", role, context, account=role.split(":")[4])]
    return Unmodelled(f"sts {operation}")


def _monitoring(request: HttpRequest) -> list[Check] | Unmodelled:
    """CloudWatch (botocore speaks JSON 1.0 to it, the query protocol elsewhere): metric
    data is authorized on "*", with the namespace as ``cloudwatch:namespace``."""
    if request.headers.get("x-amz-target"):
        operation, body = _target(request), request.json()
    else:
        body = request.form()
        operation = body.get("Action", "")
    if operation == "PutMetricData":
        namespace = str(body.get("Namespace", ""))
        return [Check("cloudwatch:PutMetricData", "*", {"cloudwatch:namespace": namespace})]
    return Unmodelled(f"monitoring {operation}")


# REST services: the operation in the path ---------------------------------------------------


def _lambda(request: HttpRequest) -> list[Check] | Unmodelled:
    found = re.fullmatch(r"/2015-03-31/functions/([^/]+)/invocations", request.path)
    if request.method == "POST" and found:
        name = unquote(found.group(1))
        arn = name if name.startswith("arn:") else _arn("lambda", request, f"function:{name}")
        return [Check("lambda:InvokeFunction", arn)]
    return Unmodelled(f"lambda {request.method} {request.path}")


def _emr_serverless(request: HttpRequest) -> list[Check] | Unmodelled:
    path, method = request.path, request.method
    found = re.fullmatch(r"/applications/([^/]+)/jobruns(?:/([^/]+))?", path)
    if found:
        application = _arn("emr-serverless", request, f"/applications/{found.group(1)}")
        if found.group(2) is None and method == "POST":
            role = request.json().get("executionRoleArn", "")
            return [
                Check("emr-serverless:StartJobRun", application),
                Check(
                    "iam:PassRole",
                    role,
                    {"iam:PassedToService": "emr-serverless.amazonaws.com"},
                ),
            ]
        if found.group(2) is None and method == "GET":
            return [Check("emr-serverless:ListJobRuns", application)]
        job_run = f"{application}/jobruns/{found.group(2)}"
        action = {"GET": "GetJobRun", "DELETE": "CancelJobRun"}.get(method)
        if action:
            return [Check(f"emr-serverless:{action}", job_run)]
    found = re.fullmatch(r"/applications(?:/([^/]+))?", path)
    if found and method == "GET":
        if found.group(1) is None:
            return [Check("emr-serverless:ListApplications", _arn("emr-serverless", request, "/*"))]
        application = _arn("emr-serverless", request, f"/applications/{found.group(1)}")
        return [Check("emr-serverless:GetApplication", application)]
    return Unmodelled(f"emr-serverless {method} {path}")


# EventBridge and EventBridge Scheduler (the failover switch turns rules and schedules off) --

#: EventBridge operations on one rule, named in the body (``Name``, or ``Rule`` for targets).
_EVENTS_RULE_OPERATIONS = {
    "DescribeRule", "DisableRule", "EnableRule", "PutRule", "DeleteRule", "PutTargets",
    "RemoveTargets", "ListTargetsByRule",
}  # fmt: skip


def _events(request: HttpRequest) -> list[Check] | Unmodelled:
    """A rule's operations on the rule (``rule/<name>`` on the default bus,
    ``rule/<bus>/<name>`` on another); ``PutEvents`` on each bus it puts on."""
    operation = _target(request)
    body = request.json()
    action = f"events:{operation}"
    if operation in _EVENTS_RULE_OPERATIONS:
        name = body.get("Name") or body.get("Rule")
        if not name:
            return Unmodelled(f"events {operation}")
        bus = str(body.get("EventBusName") or "default").rsplit("/", 1)[-1]
        rule = f"rule/{name}" if bus == "default" else f"rule/{bus}/{name}"
        return [Check(action, _arn("events", request, rule))]
    if operation == "PutEvents":
        buses = {str(entry.get("EventBusName") or "default") for entry in body.get("Entries", [])}
        return [
            Check(
                action,
                bus if bus.startswith("arn:") else _arn("events", request, f"event-bus/{bus}"),
            )
            for bus in sorted(buses)
        ]
    return Unmodelled(f"events {operation}")


def _scheduler(request: HttpRequest) -> list[Check] | Unmodelled:
    """A schedule's operations on ``schedule/<group>/<name>`` (the group ``default`` when none
    is named); creating or updating one also passes its target's role to Scheduler
    (``iam:PassRole``, ``iam:PassedToService``): ``UpdateSchedule`` replaces the whole
    schedule, its role included."""
    found = re.fullmatch(r"/schedules/([^/]+)", request.path)
    if found is None:
        return Unmodelled(f"scheduler {request.method} {request.path}")
    name = unquote(found.group(1))
    body = request.json() if request.method in ("POST", "PUT") else {}
    group = body.get("GroupName") or request.query.get("groupName", ["default"])[0]
    schedule = _arn("scheduler", request, f"schedule/{group}/{name}")
    operation = {
        "GET": "GetSchedule", "PUT": "UpdateSchedule", "POST": "CreateSchedule",
        "DELETE": "DeleteSchedule",
    }.get(request.method)  # fmt: skip
    if operation is None:
        return Unmodelled(f"scheduler {request.method} {request.path}")
    checks = [Check(f"scheduler:{operation}", schedule)]
    role = (body.get("Target") or {}).get("RoleArn")
    if role:
        passed = {"iam:PassedToService": "scheduler.amazonaws.com"}
        checks.append(Check("iam:PassRole", role, passed, account=role.split(":")[4]))
    return checks


_MAPPERS = {
    "s3": _s3,
    "glue": _glue,
    "dynamodb": _dynamodb,
    "secretsmanager": _secretsmanager,
    "states": _states,
    "kms": _kms,
    "sns": _sns,
    "sts": _sts,
    "monitoring": _monitoring,
    "lambda": _lambda,
    "emr-serverless": _emr_serverless,
    "events": _events,
    "scheduler": _scheduler,
}


def bucket_region_of(bucket: str) -> str | None:
    found = _bucket(bucket)
    return found.region_name if found is not None else None


def request_of(environ: dict[str, Any], body: bytes, signed: Signed, account: str) -> HttpRequest:
    headers = {
        key[5:].replace("_", "-").lower(): value
        for key, value in environ.items()
        if key.startswith("HTTP_")
    }
    if environ.get("CONTENT_TYPE"):
        headers["content-type"] = environ["CONTENT_TYPE"]
    query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    path = environ.get("PATH_INFO", "/")
    host = headers.get("host", "")
    if signed.service == "s3":
        path = _path_style(host, path)
    return HttpRequest(
        environ.get("REQUEST_METHOD", "GET"), path, query, headers, body, signed, account
    )


def _path_style(host: str, path: str) -> str:
    """``/bucket/key`` whether the request addressed the bucket in its path or its host."""
    name = host.split(":", 1)[0]
    if re.fullmatch(r"[\d.]+|localhost|[^.]*", name) or name.startswith("s3."):
        return path
    bucket = name.split(".", 1)[0]
    return f"/{bucket}{path}"
