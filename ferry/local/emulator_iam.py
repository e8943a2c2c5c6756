"""The AWS emulator enforces IAM for the pipeline's roles (``ferry.local.authorization``).

Two pieces, installed into the emulator's process:

- every HTTP request the server receives is authorized before moto serves it, when it is
  signed with credentials of a role session the emulator gave out (a function's, the Spark
  job's, a state machine's, a rule's): refused as AWS refuses it otherwise;
- Step Functions' own calls (invoking a function, ``ItemReader``, ``ResultWriter``,
  ``aws-sdk`` tasks) are made with the credentials of the execution's role, assumed by
  ``states.amazonaws.com``, so they are authorized the same way. (moto makes them with
  fixed dummy credentials.)

``GET /ferry-api/denials`` lists what was refused since the server started.
"""

from __future__ import annotations

import io
import json
import logging
import sys
import threading
from typing import Any

from ferry.local.authorization import Authorizer, Denial, denied_response
from ferry.local.iam_actions import checks_of
from ferry.local.iam_actions_s3 import bucket_region_of
from ferry.local.iam_request import Unmodelled, request_of, signature_of

logger = logging.getLogger(__name__)

DENIALS_PATH = "/ferry-api/denials"


def install(authorizer: Authorizer) -> None:
    """Authorize every request of a deployed role before the server's dispatcher serves it."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    _bucket_policies_by_the_simulator()
    dispatch = DomainDispatcherApplication.__call__

    def authorizing(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path == DENIALS_PATH:
            return _denials(authorizer, start_response)
        if path.startswith(("/moto-api", "/ferry-api")):
            return dispatch(self, environ, start_response)
        try:
            refused = _refusal(authorizer, environ)
        except Exception:  # a request this module cannot read: say so, refuse nothing
            logger.exception(
                "could not authorize %s %s (headers %s)",
                environ.get("REQUEST_METHOD"),
                path,
                {k: v for k, v in environ.items() if k.startswith(("HTTP_", "CONTENT_"))},
            )
            refused = None
        if refused is None:
            return dispatch(self, environ, start_response)
        status, headers, body = refused
        start_response(f"{status} Forbidden" if status == 403 else f"{status} Bad Request", headers)
        return [body]

    DomainDispatcherApplication.__call__ = authorizing


def _bucket_policies_by_the_simulator() -> None:
    """moto judges a bucket policy on its own, without its conditions: the stack's TLS-only
    ``Deny`` (``aws:SecureTransport`` false) would refuse every object request. Bucket
    policies are evaluated here instead, with their conditions, as the resource policy of
    every request of the pipeline's roles."""
    from moto.iam.access_control import PermissionResult
    from moto.s3.models import FakeBucket

    FakeBucket.get_permission = lambda self, action, resource: PermissionResult.NEUTRAL


def _refusal(authorizer: Authorizer, environ: dict[str, Any]) -> tuple[int, list, bytes] | None:
    from urllib.parse import parse_qs

    headers = {"authorization": environ.get("HTTP_AUTHORIZATION", "")}
    query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    signed = signature_of(headers, query)
    if signed is None:
        return None
    caller = authorizer.caller_of(signed.access_key_id)
    if caller is None:
        return None
    body = b""
    wants_body = signed.service != "s3" or (
        environ.get("REQUEST_METHOD") == "POST" and "delete" in query
    )
    if wants_body:
        length = environ.get("CONTENT_LENGTH")
        stream = environ["wsgi.input"]
        if length:
            body = stream.read(int(length))
        elif "chunked" in environ.get("HTTP_TRANSFER_ENCODING", ""):
            body = stream.read()
        else:
            # A request without a body (a REST GET: Scheduler's GetSchedule): reading the
            # stream to its end would wait for the client to close the connection.
            body = b""
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
    request = request_of(environ, body, signed, caller.account)
    checks = checks_of(request)
    if isinstance(checks, Unmodelled):
        denial = Denial(
            caller.session_arn,
            checks.description,
            "-",
            "the local runtime does not know which IAM permissions this request needs "
            "(add it to ferry/local/authorization.py)",
        )
        authorizer.record(denial)
    else:
        # HeadBucket answers a bucket's region whatever the caller may do (S3's documented
        # way to find it, ferry.storage.fs's): a refusal there is normal work, not a finding.
        region_lookup = (
            signed.service == "s3"
            and request.method == "HEAD"
            and ("/" not in request.path.strip("/"))
        )
        denial = authorizer.authorize(caller, checks, signed.region, record=not region_lookup)
    if denial is None:
        return None
    bucket_region = None
    if signed.service == "s3" and request.method == "HEAD":
        bucket = request.path.lstrip("/").split("/", 1)[0]
        bucket_region = bucket_region_of(bucket)
    return denied_response(signed.service, request.method, denial.message, bucket_region)


def _denials(authorizer: Authorizer, start_response: Any) -> list[bytes]:
    body = json.dumps(
        [
            {"caller": d.caller, "action": d.action, "resource": d.resource, "message": d.message}
            for d in authorizer.denials()
        ]
    ).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]


def _state_machine_of(role_arn: str, region: str) -> str | None:
    """The state machine that runs with ``role_arn`` (each of the stack's has its own role)."""
    from moto.stepfunctions.responses import get_backend

    account = role_arn.split(":")[4]
    for machine in get_backend(account, region).state_machines:
        if machine.roleArn == role_arn:
            return machine.arn
    return None


def install_state_machine_credentials(authorizer: Authorizer) -> None:
    """Make Step Functions call other services with the execution role's credentials."""
    # Import every module of the interpreter, so that each one's reference can be replaced.
    import moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval.resource_eval_s3  # noqa: F401, E501
    import moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.resource_eval.resource_eval_s3  # noqa: F401, E501
    import moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils  # noqa: F401
    import moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_factory  # noqa: F401, E501
    import moto.stepfunctions.parser.asl.utils.boto_client as boto_client_module

    original = boto_client_module.boto_client_for
    clients: dict[tuple[str, str, str], Any] = {}
    lock = threading.Lock()

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        role_arn = getattr(state_credentials, "role_arn", None)
        if not role_arn:
            return original(region=region, service=service, state_credentials=state_credentials)
        key = (role_arn, region, service)
        with lock:
            if key not in clients:
                found = authorizer.assume(
                    role_arn,
                    "states.amazonaws.com",
                    "step-functions",
                    region,
                    source_arn=_state_machine_of(role_arn, region),
                )
                template = original(region=region, service=service)
                import boto3

                # Clients are safe to share between threads; one per role, region, service.
                clients[key] = boto3.client(
                    service,
                    region_name=region,
                    endpoint_url=template.meta.endpoint_url,
                    aws_access_key_id=found["AWS_ACCESS_KEY_ID"],
                    aws_secret_access_key=found["AWS_SECRET_ACCESS_KEY"],
                    aws_session_token=found["AWS_SESSION_TOKEN"],
                    config=template.meta.config,
                )
            return clients[key]

    for name, module in list(sys.modules.items()):
        if name.startswith("moto.stepfunctions.parser") and (
            getattr(module, "boto_client_for", None) is original
        ):
            module.boto_client_for = boto_client_for  # type: ignore[attr-defined]
