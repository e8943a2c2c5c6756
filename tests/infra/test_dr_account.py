"""The DR account's stack (``infra/dr_account.py``): its role trusts exactly the primary
environment's Ferry roles (with the external id), may use exactly the DR buckets and Glue
databases, and the primary roles may assume exactly that role. Read from the synthesized
templates and evaluated by the IAM policy simulator the local runtime uses."""

from __future__ import annotations

import pytest
import yaml
from aws_cdk.assertions import Template

from ferry.local.simulator import Request
from ferry.local.template import resolved_statically
from infra.settings import SettingsError
from tests.infra.test_first_deploy import of_type, role_of_function, role_policies

pytestmark = pytest.mark.infra

PRIMARY, DR = "222222222222", "333333333333"
DR_ROLE = f"arn:aws:iam::{DR}:role/ferry-prod-dr"
BUCKET = "ferry-prod-dr-account-us-west-2"


@pytest.fixture(scope="module")
def dr_stack(app):
    [stack] = [
        s for s in app.node.children if getattr(s, "stack_name", "") == "Ferry-prod-dr-account"
    ]
    template = Template.from_stack(stack).to_json()
    return stack, template, resolved_statically(template, stack.stack_name, DR, "us-west-2")


@pytest.fixture(scope="module")
def primary(stacks):
    stack = stacks["prod"]
    template = Template.from_stack(stack).to_json()
    return template, resolved_statically(template, stack.stack_name, PRIMARY, "us-west-2")


def assume(simulator, dr_stack, caller_role: str, identity=(), external_id="ferry-prod") -> str:
    """May a session of ``caller_role`` (primary account) assume the DR role?"""
    _, template, resolved = dr_stack
    [role] = of_type(template, "AWS::IAM::Role").values()
    trust = resolved.value(role["Properties"]["AssumeRolePolicyDocument"])
    context = {"aws:PrincipalArn": caller_role, "aws:PrincipalAccount": PRIMARY}
    if external_id:
        context["sts:ExternalId"] = external_id
    return simulator.decide(
        Request(
            principal=caller_role.replace(":iam::", ":sts::").replace(":role/", ":assumed-role/")
            + "/session",
            action="sts:AssumeRole",
            resource=DR_ROLE,
            resource_account=DR,
            identity_policies=tuple(identity),
            resource_policy=trust,
            context={"aws:SecureTransport": "true", **context},
        )
    ).decision


def test_the_dr_stack_is_deployed_in_the_dr_account_with_the_named_role(dr_stack):
    stack, template, _ = dr_stack
    assert (stack.account, stack.region) == (DR, "us-west-2")
    [role] = of_type(template, "AWS::IAM::Role").values()
    assert role["Properties"]["RoleName"] == "ferry-prod-dr"
    assert role["Properties"]["MaxSessionDuration"] == 3600


def test_only_the_primary_environments_ferry_roles_with_the_external_id_may_assume_it(
    dr_stack, primary, simulator
):
    template, resolved = primary
    plan = resolved.refs[role_of_function(template, "-plan")]
    plan_arn = f"arn:aws:iam::{PRIMARY}:role/{plan}"
    identity = role_policies(template, resolved, role_of_function(template, "-plan"))
    assert assume(simulator, dr_stack, plan_arn, identity) == "Allowed"
    # Another role of the primary account, even one allowed sts:AssumeRole on the role.
    other = f"arn:aws:iam::{PRIMARY}:role/analytics"
    assert assume(simulator, dr_stack, other, identity) != "Allowed"
    # Ferry's role without the external id, or with another one.
    assert assume(simulator, dr_stack, plan_arn, identity, external_id=None) != "Allowed"
    assert assume(simulator, dr_stack, plan_arn, identity, external_id="guess") != "Allowed"
    # Another account's role named like Ferry's.
    stranger = f"arn:aws:iam::444444444444:role/{plan}"
    assert assume(simulator, dr_stack, stranger, identity) != "Allowed"


def test_the_dr_role_may_use_the_dr_bucket_and_glue_databases_and_nothing_else(dr_stack, simulator):
    _, template, resolved = dr_stack
    [logical] = of_type(template, "AWS::IAM::Role")
    policies = tuple(role_policies(template, resolved, logical))

    def decide(action: str, resource: str) -> str:
        return simulator.decide(
            Request(
                principal=f"arn:aws:sts::{DR}:assumed-role/ferry-prod-dr/ferry",
                action=action,
                resource=resource,
                resource_account=DR,
                identity_policies=policies,
                context={"aws:SecureTransport": "true"},
            )
        ).decision

    glue = f"arn:aws:glue:us-west-2:{DR}"
    for action, resource in [
        ("s3:PutObject", f"arn:aws:s3:::{BUCKET}/warehouse/customers_dr/accounts/x/part-0"),
        ("s3:DeleteObject", f"arn:aws:s3:::{BUCKET}/warehouse/customers_dr/accounts/x/part-0"),
        ("s3:ListBucket", f"arn:aws:s3:::{BUCKET}"),
        ("glue:CreateTable", f"{glue}:table/customers_dr/accounts"),
        ("glue:BatchCreatePartition", f"{glue}:table/customers_dr/accounts"),
        ("glue:CreateDatabase", f"{glue}:database/customers_dr"),
        # An S3 → S3 copy reads the config's source as the role.
        ("s3:GetObject", "arn:aws:s3:::ferry-prod-onprem-warehouse/customers.db/accounts/x"),
    ]:
        assert decide(action, resource) == "Allowed", (action, resource)
    for action, resource in [
        ("s3:PutObject", "arn:aws:s3:::another-bucket/x"),
        ("s3:PutObject", "arn:aws:s3:::ferry-prod-onprem-warehouse/customers.db/accounts/x"),
        ("s3:GetObject", "arn:aws:s3:::ferry-prod-onprem-warehouse/sales.db/orders/x"),
        ("glue:CreateTable", f"{glue}:table/finance/ledger"),
        ("glue:CreateTable", f"arn:aws:glue:us-east-1:{DR}:table/customers_dr/accounts"),
        ("iam:PassRole", f"arn:aws:iam::{DR}:role/ferry-prod-dr"),
    ]:
        assert decide(action, resource) != "Allowed", (action, resource)


def test_the_primary_roles_may_assume_exactly_the_configured_role(primary):
    template, resolved = primary

    def assumable(role_logical: str) -> set[str]:
        found = set()
        for document in role_policies(template, resolved, role_logical):
            for statement in document["Statement"]:
                actions = statement["Action"]
                if "sts:AssumeRole" in ([actions] if isinstance(actions, str) else actions):
                    resources = statement["Resource"]
                    found |= set([resources] if isinstance(resources, str) else resources)
        return found

    for function in ("-plan", "-inline-copy", "-s3-copy-batch", "-commit", "-abort"):
        assert assumable(role_of_function(template, function)) == {DR_ROLE}, function
    for function in ("-notify-success", "-copy-slot"):
        assert assumable(role_of_function(template, function)) == set(), function
    [job_role] = [k for k in of_type(template, "AWS::IAM::Role") if k.startswith("SparkJobRole")]
    assert assumable(job_role) == {DR_ROLE}
    # The DR account's catalog is the DR role's to write: no primary role is granted it.
    for statement in (
        s
        for policy in of_type(template, "AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ):
        assert f":glue:us-west-2:{DR}:" not in str(statement)


DR_CONFIG = """
source-catalog: {{name: onprem, glue: {{region: eu-west-1}}}}
replica-catalog:
  name: dr
  glue: {{region: eu-west-1, catalog-id: "{dr}"}}
  assume-role: {{role-arn: "arn:aws:iam::{dr}:role/ferry-qa-dr", {role}}}
table-replications:
  - source-table: {{database-name: sales, table-name: orders}}
    replica-table: {{table-location: "s3://{bucket}/warehouse/orders"}}
"""


@pytest.fixture
def dr_environment(tmp_path):
    """Settings with a DR account, and one config whose replica side assumes its role."""
    from infra.settings import load_settings

    def load(role: str = "external-id: ferry-qa", bucket: str = "qa-dr-account", **dr):
        config = tmp_path / "sales-dr-account.yml"
        config.write_text(DR_CONFIG.format(dr=DR, role=role, bucket=bucket))
        settings = tmp_path / "qa.yml"
        settings.write_text(
            yaml.safe_dump(
                {
                    "account": PRIMARY,
                    "region": "eu-west-1",
                    "replications": [
                        {"config": str(config), "read-locations": ["s3://src-bucket/sales/"]}
                    ],
                    "write-locations": ["s3://primary-dr/warehouse/"],
                    "dr-account": {
                        "account": DR,
                        "region": "eu-west-1",
                        "role-name": "ferry-qa-dr",
                        "buckets": ["qa-dr-account"],
                        "glue-databases": ["sales"],
                        "external-id": "ferry-qa",
                        **dr,
                    },
                }
            )
        )
        return load_settings(settings, "qa").configs

    return load


def test_a_config_in_the_dr_account_writes_its_buckets_not_the_write_locations(dr_environment):
    assert len(dr_environment()) == 1
    with pytest.raises(
        SettingsError,
        match=r"replica location s3://primary-dr/warehouse/orders of .* is outside "
        r"dr-account.buckets \['s3://qa-dr-account/'\]",
    ):
        dr_environment(bucket="primary-dr")


@pytest.mark.parametrize(
    ("role", "dr", "message"),
    [
        (
            "external-id: guess",
            {},
            r"qa: .*sales-dr-account.yml: replica-catalog.assume-role.external-id: 'guess' is "
            r"not dr-account.external-id 'ferry-qa', which the role's trust requires",
        ),
        (
            "external-id: ferry-qa, session-duration: PT2H",
            {},
            r"replica-catalog.assume-role.session-duration: PT2H is longer than the role's "
            r"dr-account.max-session-duration PT1H",
        ),
        (
            "external-id: ferry-qa",
            {"max-session-duration": "PT13H"},
            r"dr-account.max-session-duration: .*PT1H to PT12H",
        ),
    ],
)
def test_a_config_that_asks_the_dr_role_what_it_refuses_stops_the_synth_in_one_line(
    dr_environment, role, dr, message
):
    with pytest.raises(SettingsError, match=message) as raised:
        dr_environment(role, **dr)
    assert "\n" not in str(raised.value)
