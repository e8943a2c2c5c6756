"""A redeploy keeps the values an operator put into the config secret.

The stack's templates, synthesized before and after a change of ``secret-variables``, are
deployed into the emulator as ``ferry local up`` deploys them (``ferry.local.stack``, which
writes a secret's value as CloudFormation does: on create, and when the template's value
changes).
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from ferry.local import deploy as local
from ferry.local.stack import Deployment
from infra.settings import load_settings
from tests.infra.stacks import synthesized

pytestmark = pytest.mark.integration

SECRET = "AWS::SecretsManager::Secret"


def deploy_secret(template: dict[str, Any], stack_name: str) -> str:
    """Deploy the template's secret; its ARN. (Without its KMS key, whose policy names
    every role of the stack: what is looked at here is the secret's value.)"""
    resources = {
        logical: {**resource, "Properties": {
            k: v for k, v in resource["Properties"].items() if k != "KmsKeyId"
        }}
        for logical, resource in template["Resources"].items()
        if resource["Type"] == SECRET
    }  # fmt: skip
    session = boto3.session.Session(region_name=local.REGION)  # the emulator's endpoint
    deployment = Deployment(
        {"Resources": resources},
        stack_name,
        local.ACCOUNT,
        local.REGION,
        lambda service, region=None: session.client(service, region_name=region or local.REGION),
    )
    deployment.deploy()
    [secret] = [k for k, r in resources.items() if r["Type"] == SECRET]
    return deployment.resolved.refs[secret]


def test_values_put_after_a_deploy_survive_a_redeploy_with_other_secret_variables(
    local_runtime, unique
):
    settings = load_settings(local.SETTINGS, local.ENVIRONMENT).model_copy(
        update={"name": f"t{unique}"}
    )
    declared = dict(settings.secret_variables)
    before = synthesized(settings)
    after = synthesized(
        settings.model_copy(update={"secret_variables": {**declared, "CATALOG_TOKEN": "t"}})
    )
    secrets = boto3.client("secretsmanager", region_name=local.REGION)
    arn = deploy_secret(before, settings.stack_name)
    assert json.loads(secrets.get_secret_value(SecretId=arn)["SecretString"]) == {}
    values = {name: f"value of {name}" for name in declared}
    secrets.put_secret_value(SecretId=arn, SecretString=json.dumps(values))

    assert deploy_secret(after, settings.stack_name) == arn
    assert json.loads(secrets.get_secret_value(SecretId=arn)["SecretString"]) == values

    # What a template whose value named the variables did: its change wrote over them.
    [logical] = [k for k, r in after["Resources"].items() if r["Type"] == SECRET]
    after["Resources"][logical]["Properties"]["SecretString"] = json.dumps(
        {name: "<not set>" for name in [*declared, "CATALOG_TOKEN"]}
    )
    deploy_secret(after, settings.stack_name)
    overwritten = json.loads(secrets.get_secret_value(SecretId=arn)["SecretString"])
    assert overwritten != values and set(overwritten) == {*declared, "CATALOG_TOKEN"}
