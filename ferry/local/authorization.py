"""The emulator authorizes what the deployed roles do, as AWS does.

moto checks no policy. In the local runtime every request signed with the credentials of a
role the pipeline deployed (a function's, the Spark job's; ``ferry.local.emulator_lambda``
and ``emulator_emr_serverless`` give them out through the emulator's STS) is authorized
before moto serves it: ``ferry.local.iam_actions`` names the IAM action(s), resource ARN(s)
and condition keys AWS would evaluate for the HTTP request, and this module asks the policy
simulator (``ferry.local.simulator``) with the role's identity policies and the resource's
own policy (a bucket policy, a topic policy, a queue policy, a key policy, a role's trust
policy, a function's policy). A request AWS would deny is answered as AWS answers it (403
``AccessDenied``, ``AccessDeniedException``, ``AuthorizationError``), so the code under test
sees what it would see on AWS.

What the services do on their own behalf is authorized too, by the emulator's extensions:
Step Functions invoking a function, reading an ``ItemReader``, writing a ``ResultWriter``,
starting a job run and passing its role (the state machine's role); an EventBridge rule
starting an execution (the rule's role) or invoking a function (the function's policy); a
schedule starting an execution or invoking a function (the schedule's role); Lambda, EMR
Serverless and EventBridge Scheduler assuming a role (the role's trust policy).

Requests with any other credentials (a person's, a test's, ``ferry replicate``'s) are not
the pipeline's and pass, as moto serves them. A request of a deployed role that cannot be
mapped to an IAM action is refused with a message that says so: an unmodelled call is
a gap to close here, never a silent allow.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from ferry.local.simulator import Decision, PolicySimulator, Request

logger = logging.getLogger(__name__)

#: Every request the pipeline makes on AWS goes over HTTPS; the emulator's is plain HTTP.
SECURE_TRANSPORT = {"aws:SecureTransport": "true"}


@dataclass(frozen=True)
class Check:
    """One thing AWS evaluates for a request: an action on a resource, with its context."""

    action: str
    resource: str
    context: dict[str, Any] = field(default_factory=dict)
    #: The account that owns the resource (the request's account when None).
    account: str | None = None


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
        self,
        role_arn: str,
        service: str,
        session: str,
        region: str,
        source_arn: str | None = None,
        source_account: str | None = None,
    ) -> dict[str, str]:
        """Credentials of ``role_arn`` for ``service``, if the role's trust policy allows it.

        ``source_arn``: the resource the service acts for (a state machine, a rule, an EMR
        Serverless application), which AWS gives the trust policy as ``aws:SourceArn`` (with
        ``aws:SourceAccount``, its account). ``source_account`` alone: a service that names
        the account it acts for but no resource (Lambda, for a function's execution role).
        Raises ``PermissionError`` with AWS's message when the trust policy does not allow it.
        """
        account = role_arn.split(":")[4]
        context = {}
        if source_account:
            context = {"aws:SourceAccount": source_account}
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
        resource_account = check.account or _owner_of(check.resource) or account
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


def _owner_of(resource: str) -> str | None:
    """The account of a resource whose ARN names none: an S3 bucket's owner, so that a
    request for another account's bucket is judged as cross-account (its bucket policy must
    allow it too)."""
    if resource.startswith("arn:aws:s3:::"):
        return bucket_owner(resource.removeprefix("arn:aws:s3:::").split("/", 1)[0])
    return None


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
            owner = account or bucket_owner(bucket_name) or _default_account()
            bucket = s3_backends[owner]["aws"].buckets.get(bucket_name)
            return json.loads(bucket.policy) if bucket is not None and bucket.policy else None
        if service == "sns":
            from moto.sns.models import sns_backends

            topic = sns_backends[account][resource_region].topics.get(resource)
            return topic._policy_json if topic is not None else None
        if service == "sqs":
            from moto.sqs.models import sqs_backends

            queue = sqs_backends[account][resource_region].get_queue(rest)
            return queue._policy_json if queue._policy_json.get("Statement") else None
        if service == "kms" and rest.startswith("key/"):
            from moto.kms.models import kms_backends

            key = kms_backends[account][resource_region].keys.get(rest.removeprefix("key/"))
            return json.loads(key.policy) if key is not None else None
        if service == "lambda" and rest.startswith("function:"):
            from moto.awslambda.models import lambda_backends

            name = rest.split(":")[1]
            function = lambda_backends[account][resource_region].get_function(name)
            return function.policy.get_policy()["Policy"] if function.policy.statements else None
        if service == "iam" and rest.startswith("role/"):
            from moto.iam.models import iam_backends

            role = iam_backends[account]["aws"].get_role(rest.rsplit("/", 1)[-1])
            return _document(role.assume_role_policy_document)
    except Exception:  # noqa: BLE001 - no such resource: no resource policy
        return None
    return None


def bucket_owner(bucket: str) -> str | None:
    """The account that owns ``bucket`` in the emulator (S3 ARNs name no account), or None."""
    from moto.s3.models import s3_backends

    owner = s3_backends.bucket_accounts.get(bucket)
    return owner[1] if owner else None


def _default_account() -> str:
    from moto.core import DEFAULT_ACCOUNT_ID

    return DEFAULT_ACCOUNT_ID


# -- answers as AWS gives them ----------------------------------------------------------------

#: How each service says "denied": (HTTP status, error code, JSON or XML).
_QUERY_CODES = {"sns": "AuthorizationError"}
_REST_JSON = {"lambda", "emr-serverless", "scheduler", "lakeformation"}


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
