"""The local runtime assumes a role as AWS does, with the account (and resource) the service
acts for: a function's execution role that trusts Lambda for another account's functions
only cannot run this account's function (``infra/access.py`` ``trusted_service``)."""

from __future__ import annotations

import copy
import json

import boto3
import pytest

from tests.e2e.test_limits import role_of

pytestmark = pytest.mark.e2e


def test_a_function_whose_role_trusts_lambda_for_another_account_only_cannot_run(
    run, local_runtime, pipeline, cross_region
):
    iam = boto3.client("iam")
    role = role_of(iam, "Ferry-local-FunctionsResolveTablesRole")
    trust = iam.get_role(RoleName=role)["Role"]["AssumeRolePolicyDocument"]
    assert trust["Statement"][0]["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "123456789012"}
    }
    other = copy.deepcopy(trust)
    other["Statement"][0]["Condition"]["StringEquals"]["aws:SourceAccount"] = "999999999999"
    iam.update_assume_role_policy(RoleName=role, PolicyDocument=json.dumps(other))
    try:
        # A new configuration makes Lambda start new environments, which assume the role.
        boto3.client("lambda").update_function_configuration(
            FunctionName="ferry-local-resolve-tables", Description="another account's"
        )
        outcome = run(cross_region.document())
    finally:
        iam.update_assume_role_policy(RoleName=role, PolicyDocument=json.dumps(trust))
    assert (outcome.status, outcome.error) == ("FAILED", "AccessDeniedException")
    assert "sts:AssumeRole" in outcome.cause
