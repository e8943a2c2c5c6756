"""The IAM checks of a request to a query service, whose operation is the form's ``Action``:
SNS, STS, IAM and CloudWatch (to which botocore speaks JSON 1.0 as well)."""

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


def iam_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    """IAM's reads Ferry makes (a mapped principal looked up before it is granted to:
    ``ferry.catalog.grants_lakeformation``): ``iam:GetRole`` / ``GetUser`` on the role or
    user of the caller's account (IAM's ARNs name no region)."""
    form = request.form()
    operation = form.get("Action", "")
    kinds = {"GetRole": ("role", "RoleName"), "GetUser": ("user", "UserName")}
    if operation not in kinds or not form.get(kinds[operation][1]):
        return Unmodelled(f"iam {operation}")
    kind, name = kinds[operation][0], form[kinds[operation][1]]
    return [Check(f"iam:{operation}", f"arn:aws:iam::{request.account}:{kind}/{name}")]
