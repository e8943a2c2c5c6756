"""``ferry doctor``'s checks made from inside the VPC: a deployed function invoked in its check
mode, per config — the Plan function asks each metastore of the config, the CatalogPoller asks
each Hive source whose config declares ``catalog-events`` whether it writes its notification
log."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ferry.commands.doctor_findings import FAILED, OK, SKIPPED, Deployment, Finding, guarded
from ferry.storage.aws import AwsClients

#: Reads a function's answer: (check, function name, its payload) → the finding.
Judge = Callable[[str, str, dict[str, Any]], Finding]


def check_catalogs(aws: AwsClients, settings: Any, deployment: Deployment | None) -> list[Finding]:
    """Does every metastore of each config answer the deployed Plan function?"""
    if deployment is None:
        return [Finding("catalogs", SKIPPED, "not deployed yet")]

    def judge(check: str, function: str, payload: dict[str, Any]) -> Finding:
        failing = [c for c in payload.get("catalogs", []) if not c["ok"]]
        answered = ", ".join(c["catalog"] for c in payload.get("catalogs", []))
        if failing:
            return Finding(
                check,
                FAILED,
                "; ".join(f"{c['catalog']}: {c['detail']}" for c in failing),
                "open the metastores' port to the functions' security groups, "
                "and check the secret's URIs",
            )
        return Finding(check, OK, f"{answered} answered {function}")

    return ask_deployed(
        aws, settings, deployment, list(settings.configs), "plan", "catalogs", "catalogs of",
        judge,
    )  # fmt: skip


def polled_configs(settings: Any) -> list[Any]:
    """The configs whose Hive source's notification log the deployment polls."""
    return [
        path for path, config in settings.configs.items()
        if config.triggers.catalog_events is not None and config.source_catalog.glue is None
    ]  # fmt: skip


def check_notification_logs(
    aws: AwsClients, settings: Any, deployment: Deployment | None
) -> list[Finding]:
    """For each config with ``catalog-events`` and a Hive source: does its metastore write
    the notification log the poller reads, and is the log not behind the poller?"""
    polled = polled_configs(settings)
    if not polled:
        return []
    if deployment is None:
        return [Finding("notification logs", SKIPPED, "not deployed yet")]

    def judge(check: str, function: str, payload: dict[str, Any]) -> Finding:
        if not payload.get("ok"):
            return Finding(
                check,
                FAILED,
                payload.get("detail", "no answer"),
                "register Hive's DbNotificationListener on the source metastore "
                "(hive.metastore.transactional.event.listeners), restart it, then run "
                "the doctor again",
            )
        return Finding(check, OK, f"{payload['detail']}, answered {function}")

    return ask_deployed(
        aws, settings, deployment, polled, "catalog-poller", "notification-log",
        "notification log of", judge,
    )  # fmt: skip


def ask_deployed(
    aws: AwsClients,
    settings: Any,
    deployment: Deployment,
    paths: list[Any],
    function_name: str,
    request: str,
    what: str,
    judge: Judge,
) -> list[Finding]:
    """Invoke a deployed function in its check mode (``{"check": request, "configUri"}``)
    for each config, from where it runs (its VPC); ``judge`` reads the answer."""
    function = f"ferry-{settings.name}-{function_name}"
    findings = []
    for path in paths:
        key = "ConfigUri" + path.stem.title().replace("-", "")
        uri = deployment.outputs.get(key)
        check = f"{what} {path.name}"
        if uri is None:
            findings.append(Finding(check, FAILED, f"the stack has no output {key}"))
            continue

        def body(uri: str = uri, check: str = check) -> Finding:
            reply = aws.client("lambda", settings.region).invoke(
                FunctionName=function,
                Payload=json.dumps({"check": request, "configUri": uri}).encode(),
            )
            payload = json.loads(reply["Payload"].read() or b"{}")
            if reply.get("FunctionError"):
                return Finding(
                    check,
                    FAILED,
                    f"{function} failed: {payload.get('errorType')}: {payload.get('errorMessage')}",
                )
            return judge(check, function, payload)

        findings.append(guarded(check, body))
    return findings
