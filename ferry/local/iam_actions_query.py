"""The IAM checks of a request to a query service, whose operation is the form's ``Action``:
SNS, STS and CloudWatch (to which botocore speaks JSON 1.0 as well)."""

from __future__ import annotations

from ferry.local.authorization import Check
from ferry.local.iam_request import HttpRequest, Unmodelled, arn, target


def sns_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    form = request.form()
    operation = form.get("Action", "")
    topic = form.get("TopicArn") or form.get("TargetArn")
    if operation == "CreateTopic":
        topic = arn("sns", request, form["Name"])
    if not topic:
        return Unmodelled(f"sns {operation}")
    return [Check(f"sns:{operation}", topic)]


def sts_checks(request: HttpRequest) -> list[Check] | Unmodelled:
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


def monitoring_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    """CloudWatch (botocore speaks JSON 1.0 to it, the query protocol elsewhere): metric
    data is authorized on "*", with the namespace as ``cloudwatch:namespace``."""
    if request.headers.get("x-amz-target"):
        operation, body = target(request), request.json()
    else:
        body = request.form()
        operation = body.get("Action", "")
    if operation == "PutMetricData":
        namespace = str(body.get("Namespace", ""))
        return [Check("cloudwatch:PutMetricData", "*", {"cloudwatch:namespace": namespace})]
    return Unmodelled(f"monitoring {operation}")
