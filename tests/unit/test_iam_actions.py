"""The IAM checks the local runtime makes of a request, read from what the SDK really sends."""

from __future__ import annotations

import boto3
import pytest

from ferry.local.iam_actions import HttpRequest, Signed, checks_of


class _Sent(Exception):
    pass


def _delete_objects_body(keys: list[str]) -> bytes:
    """The body boto3 sends for ``DeleteObjects`` of ``keys``, taken before it leaves."""
    client = boto3.client(
        "s3", region_name="eu-west-1", endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret",
    )
    sent: list[bytes] = []

    def capture(request, **_):
        sent.append(request.body)
        raise _Sent

    client.meta.events.register("before-send.s3.DeleteObjects", capture)
    with pytest.raises(_Sent):
        client.delete_objects(
            Bucket="replica", Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True}
        )
    return sent[0]


@pytest.mark.parametrize(
    "keys",
    [["warehouse/t/snapshot=1/part-0"], ["a/b c", "x&y/<z>", "ünï/cödé"]],
    ids=["one", "escaped"],
)
def test_delete_objects_is_authorized_key_by_key(keys):
    request = HttpRequest(
        method="POST", path="/replica", query={"delete": [""]}, headers={},
        body=_delete_objects_body(keys), signed=Signed("AKIDEXAMPLE", "eu-west-1", "s3"),
        account="123456789012",
    )

    checks = checks_of(request)

    assert [(check.action, check.resource) for check in checks] == [
        ("s3:DeleteObject", f"arn:aws:s3:::replica/{key}") for key in keys
    ]


def _dynamodb_request(operation: str, body: dict) -> HttpRequest:
    import json

    return HttpRequest(
        method="POST", path="/", query={},
        headers={"x-amz-target": f"DynamoDB_20120810.{operation}"},
        body=json.dumps(body).encode(), signed=Signed("AKIDEXAMPLE", "eu-west-1", "dynamodb"),
        account="123456789012",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("operation", "body", "leading"),
    [
        ("GetItem", {"Key": {"pk": {"S": "feed#sales"}, "sk": {"S": "position"}}}, "feed#sales"),
        ("UpdateItem", {"Key": {"pk": {"S": "changes#s3://w/c.yml"}, "sk": {"S": "t"}}},
         "changes#s3://w/c.yml"),
        ("DeleteItem", {"Key": {"pk": {"S": "glue:eu-west-1/db.t"}, "sk": {"S": "lock"}}},
         "glue:eu-west-1/db.t"),
        ("PutItem", {"Item": {"pk": {"S": "glue:eu-west-1/db.t"}, "sk": {"S": "lock"}}},
         "glue:eu-west-1/db.t"),
        ("Query", {"KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
                   "ExpressionAttributeValues": {":pk": {"S": "r"}, ":prefix": {"S": "s"}}}, "r"),
        ("Query", {"KeyConditionExpression": "#p = :v", "ExpressionAttributeNames": {"#p": "pk"},
                   "ExpressionAttributeValues": {":v": {"S": "r"}}}, "r"),
    ],
    ids=["get", "update", "delete", "put", "query", "query-named"],
)  # fmt: skip
def test_an_item_request_names_its_partition_key_as_dynamodb_leading_keys(operation, body, leading):
    [check] = checks_of(_dynamodb_request(operation, {"TableName": "ferry-dev-state", **body}))

    assert check.action == f"dynamodb:{operation}"
    assert check.resource == "arn:aws:dynamodb:eu-west-1:123456789012:table/ferry-dev-state"
    assert check.context == {"dynamodb:LeadingKeys": [leading]}


def test_a_redrive_is_authorized_as_states_redrive_execution_on_the_execution():
    import json

    arn = "arn:aws:states:eu-west-1:123456789012:execution:ferry-prod-replication:run-1"
    request = HttpRequest(
        method="POST", path="/", query={},
        headers={"x-amz-target": "AWSStepFunctions.RedriveExecution"},
        body=json.dumps({"executionArn": arn, "clientToken": "t"}).encode(),
        signed=Signed("AKIDEXAMPLE", "eu-west-1", "states"), account="123456789012",
    )  # fmt: skip

    assert [(c.action, c.resource) for c in checks_of(request)] == [
        ("states:RedriveExecution", arn)
    ]


def test_put_metric_data_is_authorized_on_every_resource_with_its_namespace():
    """What botocore sends to CloudWatch (JSON 1.0), read as AWS authorizes it."""
    client = boto3.client(
        "cloudwatch", region_name="eu-west-1", endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret",
    )  # fmt: skip
    sent = []

    def capture(request, **_):
        sent.append(request)
        raise _Sent

    client.meta.events.register("before-send.cloudwatch.PutMetricData", capture)
    with pytest.raises(_Sent):
        client.put_metric_data(Namespace="Ferry", MetricData=[{"MetricName": "Freshness", "Value": 1}])
    request = HttpRequest(
        method="POST", path="/", query={},
        headers={k.lower(): v.decode() if isinstance(v, bytes) else v
                 for k, v in sent[0].headers.items()},
        body=sent[0].body, signed=Signed("AKIDEXAMPLE", "eu-west-1", "monitoring"),
        account="123456789012",
    )  # fmt: skip

    [check] = checks_of(request)

    assert (check.action, check.resource) == ("cloudwatch:PutMetricData", "*")
    assert check.context == {"cloudwatch:namespace": "Ferry"}


@pytest.mark.parametrize("external_id", ["ferry-prod", None])
def test_assume_role_names_the_role_its_account_and_the_external_id_given(external_id):
    """What botocore sends to STS for another account's role (``assume-role``), read as AWS
    authorizes it: the role's trust policy may ask for ``sts:ExternalId``."""
    client = boto3.client(
        "sts", region_name="eu-west-1", endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret",
    )  # fmt: skip
    sent = []

    def capture(request, **_):
        sent.append(request)
        raise _Sent

    client.meta.events.register("before-send.sts.AssumeRole", capture)
    role = "arn:aws:iam::333333333333:role/ferry-prod-dr"
    extra = {"ExternalId": external_id} if external_id else {}
    with pytest.raises(_Sent):
        client.assume_role(RoleArn=role, RoleSessionName="ferry", **extra)
    request = HttpRequest(
        method="POST", path="/", query={},
        headers={k.lower(): v.decode() if isinstance(v, bytes) else v
                 for k, v in sent[0].headers.items()},
        body=body.encode() if isinstance(body := sent[0].body, str) else body,
        signed=Signed("AKIDEXAMPLE", "eu-west-1", "sts"),
        account="123456789012",
    )  # fmt: skip

    [check] = checks_of(request)
    assert (check.action, check.resource, check.account) == (
        "sts:AssumeRole", role, "333333333333"
    )
    assert check.context == ({"sts:ExternalId": external_id} if external_id else {})
