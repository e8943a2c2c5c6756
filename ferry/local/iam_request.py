"""An HTTP request to the emulator as the IAM checks read it: who signed it, for which
service and region, and what it asks (``ferry.local.iam_actions`` turns it into checks).

The mappers of each service (``iam_actions_s3``, ``iam_actions_json``, ``iam_actions_query``,
``iam_actions_rest``) share what is here: the request, the ARN of a resource in the request's
account and region, the operation a JSON request names, a KMS key's ARN from any of its names.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs


@dataclass(frozen=True)
class Unmodelled:
    """A request no mapper knows the permissions of."""

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


def arn(service: str, request: HttpRequest, resource: str, account: str | None = None) -> str:
    return f"arn:aws:{service}:{request.signed.region}:{account or request.account}:{resource}"


def target(request: HttpRequest) -> str:
    """The operation of a JSON service's request, from its ``X-Amz-Target``."""
    return request.headers.get("x-amz-target", "").rsplit(".", 1)[-1]


def key_arn(key: str, region: str, account: str) -> str:
    """A key's ARN from any of its names (id, ARN, alias, alias ARN)."""
    if key.startswith("arn:") and ":key/" in key:
        return key
    from moto.kms.models import kms_backends

    try:
        key_id = kms_backends[account][region].any_id_to_key_id(key)
    except Exception:  # noqa: BLE001 - an unknown key: its name stands for it
        key_id = key
    return f"arn:aws:kms:{region}:{account}:key/{key_id}"
