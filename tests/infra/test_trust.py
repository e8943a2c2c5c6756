"""Every role a service assumes names the account (and, where the service gives it, the
resource) it acts for: ``aws:SourceAccount`` and ``aws:SourceArn`` in its trust policy, so
no other account's rule, schedule, state machine or job can use it (the confused deputy).
Read from every stack the app synthesizes: each environment's, and its event forwarders."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.infra

#: Services that set ``aws:SourceAccount`` but no ``aws:SourceArn`` when they assume a role,
#: each with its reason.
NO_SOURCE_ARN = {
    # Lambda's documentation names aws:SourceArn for its resource policy only (who may
    # invoke a function); assuming a function's execution role, it gives the account alone.
    "lambda.amazonaws.com": "Lambda names no resource when it assumes an execution role",
}
SOURCE_ARN_OPERATORS = ("ArnLike", "ArnEquals", "StringEquals", "StringLike")


def trusted_services(template: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(role, service, conditions) of every service principal a role of ``template`` trusts."""
    found = []
    for logical, resource in template["Resources"].items():
        if resource["Type"] != "AWS::IAM::Role":
            continue
        document = resource["Properties"]["AssumeRolePolicyDocument"]
        for statement in document["Statement"]:
            services = statement.get("Principal", {}).get("Service", [])
            for service in [services] if isinstance(services, str) else services:
                found.append((logical, service, statement.get("Condition", {})))
    return found


def test_every_role_a_service_assumes_names_the_account_and_the_resource(app):
    stacks = app.synth().stacks
    seen = set()
    for stack in stacks:
        account = stack.environment.account
        for role, service, conditions in trusted_services(stack.template):
            seen.add(service)
            where = f"{stack.stack_name} {role} ({service})"
            assert conditions.get("StringEquals", {}).get("aws:SourceAccount") == account, where
            has_arn = any(
                "aws:SourceArn" in conditions.get(operator, {}) for operator in SOURCE_ARN_OPERATORS
            )
            assert has_arn != (service in NO_SOURCE_ARN), where
    # Every service the pipeline gives a role to is here: the functions', the Spark job's,
    # the state machines', the rules' and forwarders', the schedules'.
    assert {
        "lambda.amazonaws.com",
        "emr-serverless.amazonaws.com",
        "states.amazonaws.com",
        "events.amazonaws.com",
        "scheduler.amazonaws.com",
    } <= seen
