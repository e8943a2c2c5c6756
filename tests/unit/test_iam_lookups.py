"""The IAM checks the local runtime makes of IAM's look-ups of a principal (a mapped
principal checked before Lake Formation grants to it), read from what the SDK really sends:
``iam:GetRole`` / ``GetUser`` on the role's or user's ARN, and nothing else of IAM."""

from __future__ import annotations

import boto3
import pytest

from ferry.local.iam_actions import checks_of
from ferry.local.iam_request import HttpRequest, Signed, Unmodelled

ACCOUNT = "123456789012"


class _Sent(Exception):
    pass


def _request(method: str, **parameters) -> HttpRequest:
    """The request boto3 sends for IAM's ``method``, taken before it leaves."""
    client = boto3.client(
        "iam", region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret",
    )  # fmt: skip
    sent = []

    def capture(request, **_):
        sent.append(request)
        raise _Sent

    client.meta.events.register("before-send.iam", capture)
    with pytest.raises(_Sent):
        getattr(client, method)(**parameters)
    request = sent[0]
    body = request.body if isinstance(request.body, bytes) else request.body.encode()
    return HttpRequest(
        method=request.method, path="/", query={},
        headers={k.lower(): v for k, v in request.headers.items()}, body=body,
        signed=Signed("AKIDEXAMPLE", "us-east-1", "iam"), account=ACCOUNT,
    )  # fmt: skip


def test_a_role_or_user_is_looked_up_on_its_own_arn():
    [role] = checks_of(_request("get_role", RoleName="analyst-dr"))
    assert (role.action, role.resource) == ("iam:GetRole", f"arn:aws:iam::{ACCOUNT}:role/analyst-dr")
    [user] = checks_of(_request("get_user", UserName="etl"))
    assert (user.action, user.resource) == ("iam:GetUser", f"arn:aws:iam::{ACCOUNT}:user/etl")


def test_any_other_iam_request_is_refused_as_unmodelled():
    assert isinstance(checks_of(_request("list_roles")), Unmodelled)
