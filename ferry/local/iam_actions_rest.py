"""The IAM checks of a request to a REST service, whose operation is in its method and path:
Lambda, EMR Serverless and EventBridge Scheduler (the failover switch turns schedules off)."""

from __future__ import annotations

import re
from urllib.parse import unquote

from ferry.local.authorization import Check
from ferry.local.iam_request import HttpRequest, Unmodelled, arn


def lambda_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    found = re.fullmatch(r"/2015-03-31/functions/([^/]+)/invocations", request.path)
    if request.method == "POST" and found:
        name = unquote(found.group(1))
        function = name if name.startswith("arn:") else arn("lambda", request, f"function:{name}")
        return [Check("lambda:InvokeFunction", function)]
    return Unmodelled(f"lambda {request.method} {request.path}")


def emr_serverless_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    path, method = request.path, request.method
    found = re.fullmatch(r"/applications/([^/]+)/jobruns(?:/([^/]+))?", path)
    if found:
        application = arn("emr-serverless", request, f"/applications/{found.group(1)}")
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
            return [Check("emr-serverless:ListApplications", arn("emr-serverless", request, "/*"))]
        application = arn("emr-serverless", request, f"/applications/{found.group(1)}")
        return [Check("emr-serverless:GetApplication", application)]
    return Unmodelled(f"emr-serverless {method} {path}")


def scheduler_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    """A schedule's operations on ``schedule/<group>/<name>`` (the group ``default`` when none
    is named); creating or updating one also passes its target's role to Scheduler
    (``iam:PassRole``, ``iam:PassedToService``): ``UpdateSchedule`` replaces the whole
    schedule, its role included."""
    found = re.fullmatch(r"/schedules/([^/]+)", request.path)
    if found is None:
        return Unmodelled(f"scheduler {request.method} {request.path}")
    name = unquote(found.group(1))
    body = request.json() if request.method in ("POST", "PUT") else {}
    group = body.get("GroupName") or request.query.get("groupName", ["default"])[0]
    schedule = arn("scheduler", request, f"schedule/{group}/{name}")
    operation = {
        "GET": "GetSchedule", "PUT": "UpdateSchedule", "POST": "CreateSchedule",
        "DELETE": "DeleteSchedule",
    }.get(request.method)  # fmt: skip
    if operation is None:
        return Unmodelled(f"scheduler {request.method} {request.path}")
    checks = [Check(f"scheduler:{operation}", schedule)]
    role = (body.get("Target") or {}).get("RoleArn")
    if role:
        passed = {"iam:PassedToService": "scheduler.amazonaws.com"}
        checks.append(Check("iam:PassRole", role, passed, account=role.split(":")[4]))
    return checks
