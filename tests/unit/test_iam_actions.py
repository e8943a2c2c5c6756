"""The IAM checks the local runtime makes of a request, read from what the SDK really sends."""

from __future__ import annotations

import boto3
import pytest

from ferry.local.iam_actions import checks_of
from ferry.local.iam_request import HttpRequest, Signed


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


def _sent(service: str, operation: str, call) -> HttpRequest:
    """What botocore sends for ``call(client)``, taken before it leaves, as the emulator's
    front door reads it."""
    from urllib.parse import parse_qs, urlsplit

    client = boto3.client(
        service, region_name="eu-west-1", endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret",
    )  # fmt: skip
    sent = []

    def capture(request, **_):
        sent.append(request)
        raise _Sent

    client.meta.events.register(f"before-send.{service}.{operation}", capture)
    with pytest.raises(_Sent):
        call(client)
    url = urlsplit(sent[0].url)
    body = sent[0].body or b""
    return HttpRequest(
        method=sent[0].method, path=url.path, query=parse_qs(url.query),
        headers={k.lower(): v.decode() if isinstance(v, bytes) else v
                 for k, v in sent[0].headers.items()},
        body=body.encode() if isinstance(body, str) else body,
        signed=Signed("AKIDEXAMPLE", "eu-west-1", service), account="123456789012",
    )  # fmt: skip


@pytest.mark.parametrize("operation", ["DisableRule", "EnableRule", "DescribeRule"])
def test_turning_a_rule_off_or_on_is_authorized_on_the_rule(operation):
    method = "".join(f"_{c.lower()}" if c.isupper() else c for c in operation).lstrip("_")
    request = _sent("events", operation, lambda c: getattr(c, method)(Name="ferry-dev-sales-s3-0"))

    assert [(c.action, c.resource) for c in checks_of(request)] == [
        (f"events:{operation}", "arn:aws:events:eu-west-1:123456789012:rule/ferry-dev-sales-s3-0")
    ]


def test_a_rule_of_another_bus_is_named_with_its_bus():
    request = _sent(
        "events", "DisableRule", lambda c: c.disable_rule(Name="r", EventBusName="forwarded")
    )

    [check] = checks_of(request)
    assert check.resource == "arn:aws:events:eu-west-1:123456789012:rule/forwarded/r"


def test_reading_a_schedule_is_authorized_on_the_schedule_of_its_group():
    request = _sent(
        "scheduler", "GetSchedule",
        lambda c: c.get_schedule(Name="ferry-dev-sales", GroupName="ferry-dev"),
    )  # fmt: skip

    assert [(c.action, c.resource) for c in checks_of(request)] == [
        ("scheduler:GetSchedule", "arn:aws:scheduler:eu-west-1:123456789012:schedule/ferry-dev/ferry-dev-sales")
    ]


def test_updating_a_schedule_passes_its_targets_role_to_scheduler():
    """UpdateSchedule replaces the whole schedule, its target's role too: AWS checks that the
    caller may pass that role to Scheduler."""
    role = "arn:aws:iam::123456789012:role/ferry-dev-schedules"
    request = _sent(
        "scheduler", "UpdateSchedule",
        lambda c: c.update_schedule(
            Name="ferry-dev-sales", GroupName="ferry-dev", ScheduleExpression="rate(1 hour)",
            FlexibleTimeWindow={"Mode": "OFF"}, State="DISABLED",
            Target={"Arn": "arn:aws:states:eu-west-1:123456789012:stateMachine:m", "RoleArn": role},
        ),
    )  # fmt: skip

    update, passing = checks_of(request)
    assert (update.action, update.resource) == (
        "scheduler:UpdateSchedule",
        "arn:aws:scheduler:eu-west-1:123456789012:schedule/ferry-dev/ferry-dev-sales",
    )
    assert (passing.action, passing.resource) == ("iam:PassRole", role)
    assert passing.context == {"iam:PassedToService": "scheduler.amazonaws.com"}


@pytest.mark.parametrize("external_id", ["ferry-prod", None])
def test_assume_role_names_the_role_its_account_and_the_external_id_given(external_id):
    """What botocore sends to STS for another account's role (``assume-role``), read as AWS
    authorizes it: the role's trust policy may ask for ``sts:ExternalId``."""
    role = "arn:aws:iam::333333333333:role/ferry-prod-dr"
    extra = {"ExternalId": external_id} if external_id else {}
    request = _sent(
        "sts", "AssumeRole",
        lambda c: c.assume_role(RoleArn=role, RoleSessionName="ferry", **extra),
    )  # fmt: skip

    [check] = checks_of(request)
    assert (check.action, check.resource, check.account) == (
        "sts:AssumeRole", role, "333333333333"
    )
    assert check.context == ({"sts:ExternalId": external_id} if external_id else {})


@pytest.mark.parametrize(
    ("operation", "also"),
    [
        ("GetColumnStatisticsForTable", "GetTable"),
        ("GetColumnStatisticsForPartition", "GetPartition"),
        ("UpdateColumnStatisticsForTable", "UpdateTable"),
        ("UpdateColumnStatisticsForPartition", "UpdatePartition"),
        ("DeleteColumnStatisticsForTable", "DeleteTable"),
        ("DeleteColumnStatisticsForPartition", "DeletePartition"),
    ],
)
def test_column_statistics_need_their_own_action_and_the_one_the_api_reference_names(
    operation, also
):
    import json

    request = HttpRequest(
        method="POST", path="/", query={}, headers={"x-amz-target": f"AWSGlue.{operation}"},
        body=json.dumps({"DatabaseName": "Sales", "TableName": "Orders"}).encode(),
        signed=Signed("AKIDEXAMPLE", "eu-west-1", "glue"), account="123456789012",
    )  # fmt: skip

    checks = checks_of(request)

    prefix = "arn:aws:glue:eu-west-1:123456789012"
    resources = [f"{prefix}:catalog", f"{prefix}:database/sales", f"{prefix}:table/sales/orders"]
    assert [(check.action, check.resource) for check in checks] == [
        (f"glue:{action}", resource) for action in (operation, also) for resource in resources
    ]
