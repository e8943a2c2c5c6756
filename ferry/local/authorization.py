"""The emulator authorizes what the deployed roles do, as AWS does.

moto checks no policy. In the local runtime every request signed with the credentials of a
role the pipeline deployed (a function's, the Spark job's; ``ferry.local.emulator_lambda``
and ``emulator_emr_serverless`` give them out through the emulator's STS) is authorized
before moto serves it: this module names the IAM action(s), resource ARN(s) and condition
keys AWS would evaluate for the HTTP request, and asks the policy simulator
(``ferry.local.simulator``) with the role's identity policies and the resource's own policy
(a bucket policy, a topic policy, a key policy, a role's trust policy). A request AWS would
deny is answered as AWS answers it (403 ``AccessDenied``, ``AccessDeniedException``,
``AuthorizationError``), so the code under test sees what it would see on AWS.

What the services do on their own behalf is authorized too, by the emulator's extensions:
Step Functions invoking a function, reading an ``ItemReader``, writing a ``ResultWriter``,
starting a job run and passing its role (the state machine's role); an EventBridge rule
starting an execution (the rule's role); Lambda and EMR Serverless assuming a role (the
role's trust policy).

Requests with any other credentials (a person's, a test's, ``ferry replicate``'s) are not
the pipeline's and pass, as moto serves them. A request of a deployed role that this module
cannot map to an IAM action is refused with a message that says so: an unmodelled call is
a gap to close here, never a silent allow.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote
from xml.etree import ElementTree

from ferry.local.simulator import Decision, PolicySimulator, Request

logger = logging.getLogger(__name__)

#: Every request the pipeline makes on AWS goes over HTTPS; the emulator's is plain HTTP.
SECURE_TRANSPORT = {"aws:SecureTransport": "true"}
SERVICE_PRINCIPAL = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)*\.amazonaws\.com$")


@dataclass(frozen=True)
class Check:
    """One thing AWS evaluates for a request: an action on a resource, with its context."""

    action: str
    resource: str
    context: dict[str, Any] = field(default_factory=dict)
    #: The account that owns the resource (the request's account when None).
    account: str | None = None


@dataclass(frozen=True)
class Unmodelled:
    """A request this module does not know the permissions of."""

    description: str


@dataclass(frozen=True)
class Caller:
    """Who signed a request: a session of a role the pipeline deployed."""

    role_arn: str
    session_arn: str
    account: str


@dataclass(frozen=True)
class Denial:
    """A refused request, with AWS's words for it."""

    caller: str
    action: str
    resource: str
    reason: str

    @property
    def message(self) -> str:
        return (
            f"User: {self.caller} is not authorized to perform: {self.action} on resource: "
            f"{self.resource} because {self.reason}"
        )


class Authorizer:
    """Authorizes the deployed roles' requests against the emulator's IAM, as AWS would."""

    def __init__(self, simulator: PolicySimulator | None = None):
        self.simulator = simulator or PolicySimulator()
        self._cache: dict[str, Decision] = {}
        self._lock = threading.Lock()
        self._denials: list[Denial] = []

    # -- who ------------------------------------------------------------------------------

    @staticmethod
    def caller_of(access_key_id: str | None) -> Caller | None:
        """The role session behind ``access_key_id``, when it is one the emulator gave out."""
        if not access_key_id:
            return None
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.sts.models import sts_backends

        for account in {DEFAULT_ACCOUNT_ID, *sts_backends.keys()}:
            assumed = sts_backends[account]["aws"].get_assumed_role_from_access_key(access_key_id)
            if assumed is not None:
                return Caller(assumed.role_arn, assumed.arn, assumed.account_id)
        return None

    # -- the decisions --------------------------------------------------------------------

    def authorize(
        self, caller: Caller | str, checks: Iterable[Check], region: str, *, record: bool = True
    ) -> Denial | None:
        """The first check AWS would deny, or None when all are allowed.

        ``caller`` is a role session, or a service principal (``states.amazonaws.com``
        acting with a role is a role session; a service acting on its own, e.g. assuming a
        role, is its principal name). ``record``: keep the denial (``denials``; not for a
        refusal that is part of normal work, such as a bucket's region looked up).
        """
        for check in checks:
            decision = self._decide(caller, check, region)
            if not decision.allowed:
                principal = caller if isinstance(caller, str) else caller.session_arn
                denial = Denial(principal, check.action, check.resource, _reason(decision))
                if record:
                    self.record(denial)
                return denial
        return None

    #: Denials kept (a long-running emulator forgets the oldest).
    KEPT_DENIALS = 10_000

    def record(self, denial: Denial) -> None:
        """Keep ``denial`` for ``denials`` and log it."""
        logger.warning("denied: %s", denial.message)
        with self._lock:
            self._denials.append(denial)
            del self._denials[: -self.KEPT_DENIALS]

    def denials(self) -> list[Denial]:
        """What was refused, oldest first (``GET /ferry-api/denials``)."""
        with self._lock:
            return list(self._denials)

    def assume(
        self, role_arn: str, service: str, session: str, region: str, source_arn: str | None = None
    ) -> dict[str, str]:
        """Credentials of ``role_arn`` for ``service``, if the role's trust policy allows it.

        ``source_arn``: the resource the service acts for (a state machine, a rule), which AWS
        gives the trust policy as ``aws:SourceArn`` (with ``aws:SourceAccount``). Raises
        ``PermissionError`` with AWS's message when the trust policy does not allow it.
        """
        account = role_arn.split(":")[4]
        context = {}
        if source_arn:
            context = {"aws:SourceArn": source_arn, "aws:SourceAccount": source_arn.split(":")[4]}
        check = Check("sts:AssumeRole", role_arn, context, account=account)
        denial = self.authorize(service, [check], region)
        if denial is not None:
            raise PermissionError(denial.message)
        from moto.sts.models import sts_backends

        assumed = sts_backends[account]["aws"].assume_role(
            region_name=region,
            role_session_name=session[:64],
            role_arn=role_arn,
            policy=None,
            duration=43200,
            external_id=None,
        )
        return {
            "AWS_ACCESS_KEY_ID": assumed.access_key_id,
            "AWS_SECRET_ACCESS_KEY": assumed.secret_access_key,
            "AWS_SESSION_TOKEN": assumed.session_token,
        }

    def _decide(self, caller: Caller | str, check: Check, region: str) -> Decision:
        if isinstance(caller, Caller):
            principal, identity = caller.session_arn, _identity_policies(caller.role_arn)
            account = caller.account
        else:
            principal, identity, account = caller, (), check.account or ""
        resource_account = check.account or account
        resource_policy = _resource_policy(check.resource, region)
        context = {**SECURE_TRANSPORT, **check.context}
        if isinstance(caller, Caller):
            context.setdefault("aws:PrincipalArn", caller.role_arn)
            context.setdefault("aws:PrincipalAccount", caller.account)
        request = Request(
            principal=principal,
            action=check.action,
            resource=check.resource,
            resource_account=resource_account,
            identity_policies=identity,
            resource_policy=resource_policy,
            context=context,
        )
        key = hashlib.sha256(request.to_json(0).encode()).hexdigest()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        decision = self.simulator.decide(request)
        with self._lock:
            self._cache[key] = decision
        return decision


def _reason(decision: Decision) -> str:
    if decision.decision == "ExplicitlyDenied":
        return "an explicit deny in a policy denies it"
    if decision.decision == "Invalid":
        return f"the request could not be evaluated ({decision.detail})"
    return "no policy allows it"


# -- policies in the emulator ---------------------------------------------------------------


def _identity_policies(role_arn: str) -> tuple[dict[str, Any], ...]:
    """The role's inline and attached policies, as the emulator's IAM holds them now."""
    from moto.iam.models import iam_backends

    account = role_arn.split(":")[4]
    name = role_arn.rsplit("/", 1)[-1]
    try:
        role = iam_backends[account]["aws"].get_role(name)
    except Exception:  # noqa: BLE001 - a role that is gone grants nothing
        return ()
    documents = [_document(text) for text in role.policies.values()]
    for policy in role.managed_policies.values():
        documents.append(_document(policy.document))
    return tuple(documents)


def _document(text: Any) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    return json.loads(unquote(text) if str(text).startswith("%7B") else text)


def _resource_policy(resource: str, region: str) -> dict[str, Any] | None:
    """The policy attached to the resource itself, where its service has one."""
    parts = resource.split(":", 5)
    if len(parts) < 6:
        return None
    service, resource_region, account, rest = parts[2], parts[3], parts[4], parts[5]
    try:
        if service == "s3":
            from moto.s3.models import s3_backends

            bucket_name = rest.split("/", 1)[0]
            bucket = s3_backends[account or _default_account()]["aws"].buckets.get(bucket_name)
            return json.loads(bucket.policy) if bucket is not None and bucket.policy else None
        if service == "sns":
            from moto.sns.models import sns_backends

            topic = sns_backends[account][resource_region].topics.get(resource)
            return topic._policy_json if topic is not None else None
        if service == "kms" and rest.startswith("key/"):
            from moto.kms.models import kms_backends

            key = kms_backends[account][resource_region].keys.get(rest.removeprefix("key/"))
            return json.loads(key.policy) if key is not None else None
        if service == "iam" and rest.startswith("role/"):
            from moto.iam.models import iam_backends

            role = iam_backends[account]["aws"].get_role(rest.rsplit("/", 1)[-1])
            return _document(role.assume_role_policy_document)
    except Exception:  # noqa: BLE001 - no such resource: no resource policy
        return None
    return None


def _default_account() -> str:
    from moto.core import DEFAULT_ACCOUNT_ID

    return DEFAULT_ACCOUNT_ID


# -- HTTP requests to IAM checks --------------------------------------------------------------

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
    root = ElementTree.fromstring(body)
    return [
        element.text or "" for element in root.iter() if element.tag.rsplit("}", 1)[-1] == "Key"
    ]


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
        return [Check(action, _arn("dynamodb", request, f"table/{body['TableName']}"))]
    return Unmodelled(f"dynamodb {operation}")


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
        return [Check("sts:AssumeRole", role, account=role.split(":")[4])]
    return Unmodelled(f"sts {operation}")


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


_MAPPERS = {
    "s3": _s3,
    "glue": _glue,
    "dynamodb": _dynamodb,
    "secretsmanager": _secretsmanager,
    "states": _states,
    "kms": _kms,
    "sns": _sns,
    "sts": _sts,
    "lambda": _lambda,
    "emr-serverless": _emr_serverless,
}


# -- answers as AWS gives them ----------------------------------------------------------------

#: How each service says "denied": (HTTP status, error code, JSON or XML).
_QUERY_CODES = {"sns": "AuthorizationError"}
_REST_JSON = {"lambda", "emr-serverless", "scheduler"}


def denied_response(service: str, method: str, message: str, bucket_region: str | None = None):
    """``(status, headers, body)`` of AWS's answer to a denied request of ``service``."""
    request_id = uuid.uuid4().hex.upper()
    if service == "s3":
        headers = [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)]
        if bucket_region:  # S3 names the bucket's region even when it refuses (HeadBucket)
            headers.append(("x-amz-bucket-region", bucket_region))
        body = (
            b""
            if method == "HEAD"
            else (
                '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                f"<Message>{_xml(message)}</Message><RequestId>{request_id}</RequestId></Error>"
            ).encode()
        )
        return 403, headers, body
    if service in ("sns", "sts", "iam", "monitoring"):
        code = _QUERY_CODES.get(service, "AccessDenied")
        body = (
            f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code>"
            f"<Message>{_xml(message)}</Message></Error><RequestId>{request_id}</RequestId>"
            "</ErrorResponse>"
        ).encode()
        return 403, [("Content-Type", "text/xml"), ("x-amzn-RequestId", request_id)], body
    body = json.dumps({"__type": "AccessDeniedException", "message": message, "Message": message})
    status = 403 if service in _REST_JSON else 400
    headers = [
        ("Content-Type", "application/x-amz-json-1.1"),
        ("x-amzn-RequestId", request_id),
        ("x-amzn-ErrorType", "AccessDeniedException"),
    ]
    return status, headers, body.encode()


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


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
