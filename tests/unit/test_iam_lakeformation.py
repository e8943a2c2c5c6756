"""The IAM checks the local runtime makes of a Lake Formation request, read from what the SDK
really sends: the operation's action on ``*``, and Glue's read of the resource a grant is on."""

from __future__ import annotations

import boto3
import pytest

from ferry.local.iam_actions import checks_of
from ferry.local.iam_request import HttpRequest, Signed, Unmodelled

ACCOUNT = "123456789012"
GLUE = f"arn:aws:glue:eu-west-1:{ACCOUNT}"


class _Sent(Exception):
    pass


def _request(operation: str, **parameters) -> HttpRequest:
    """The request boto3 sends for ``operation``, taken before it leaves."""
    client = boto3.client(
        "lakeformation", region_name="eu-west-1", endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret",
    )  # fmt: skip
    sent = []

    def capture(request, **_):
        sent.append(request)
        raise _Sent

    client.meta.events.register(f"before-send.lakeformation.{operation}", capture)
    method = {api: name for name, api in client.meta.method_to_api_mapping.items()}[operation]
    with pytest.raises(_Sent):
        getattr(client, method)(**parameters)
    request = sent[0]
    return HttpRequest(
        method=request.method, path=request.url.split("127.0.0.1:9", 1)[1], query={},
        headers={k.lower(): v for k, v in request.headers.items()}, body=request.body,
        signed=Signed("AKIDEXAMPLE", "eu-west-1", "lakeformation"), account=ACCOUNT,
    )  # fmt: skip


def _pairs(checks) -> list[tuple[str, str]]:
    return [(check.action, check.resource) for check in checks]


def test_a_grant_on_a_table_needs_the_action_and_glues_read_of_the_table():
    request = _request(
        "GrantPermissions",
        Principal={"DataLakePrincipalIdentifier": "arn:aws:iam::123456789012:role/analyst"},
        Resource={"Table": {"DatabaseName": "Sales", "Name": "Orders"}},
        Permissions=["SELECT"],
    )
    assert _pairs(checks_of(request)) == [
        ("lakeformation:GrantPermissions", "*"),
        ("glue:GetTable", f"{GLUE}:catalog"),
        ("glue:GetTable", f"{GLUE}:database/sales"),
        ("glue:GetTable", f"{GLUE}:table/sales/orders"),
    ]


def test_a_batch_revoke_checks_each_resource_once_in_the_catalog_it_names():
    entry = {
        "Principal": {"DataLakePrincipalIdentifier": "IAM_ALLOWED_PRINCIPALS"},
        "Permissions": ["DESCRIBE"],
    }
    request = _request(
        "BatchRevokePermissions",
        CatalogId="210987654321",
        Entries=[
            {**entry, "Id": "0", "Resource": {"Database": {"Name": "sales"}}},
            {**entry, "Id": "1", "Resource": {"Database": {"Name": "sales"}}},
            {**entry, "Id": "2", "Resource": {"TableWithColumns": {
                "DatabaseName": "sales", "Name": "orders", "ColumnNames": ["id"]}}},
        ],
    )  # fmt: skip
    other = "arn:aws:glue:eu-west-1:210987654321"
    assert _pairs(checks_of(request)) == [
        ("lakeformation:BatchRevokePermissions", "*"),
        ("glue:GetDatabase", f"{other}:catalog"),
        ("glue:GetDatabase", f"{other}:database/sales"),
        ("glue:GetTable", f"{other}:catalog"),
        ("glue:GetTable", f"{other}:database/sales"),
        ("glue:GetTable", f"{other}:table/sales/orders"),
    ]


@pytest.mark.parametrize(
    ("operation", "parameters"),
    [
        ("ListPermissions", {"Resource": {"Database": {"Name": "sales"}}}),
        ("GetDataLakeSettings", {}),
        ("GetResourceLFTags", {"Resource": {"Database": {"Name": "sales"}}}),
        ("AddLFTagsToResource", {"Resource": {"Database": {"Name": "sales"}},
                                 "LFTags": [{"TagKey": "team", "TagValues": ["a"]}]}),
    ],
)  # fmt: skip
def test_the_other_operations_are_their_action_on_any_resource(operation, parameters):
    assert _pairs(checks_of(_request(operation, **parameters))) == [
        (f"lakeformation:{operation}", "*")
    ]


def test_an_operation_the_runtime_does_not_know_is_unmodelled():
    request = _request("SearchTablesByLFTags", Expression=[{"TagKey": "t", "TagValues": ["a"]}])
    assert checks_of(request) == Unmodelled("lakeformation POST /SearchTablesByLFTags")
