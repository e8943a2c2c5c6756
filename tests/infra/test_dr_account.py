"""The DR account's stack (``infra/dr_account.py``): its role trusts exactly the primary
environment's Ferry roles (with the external id), may use exactly the DR buckets and Glue
databases, and the primary roles may assume exactly that role. Read from the synthesized
templates and evaluated by the IAM policy simulator the local runtime uses."""

from __future__ import annotations

import json

import pytest
import yaml
from aws_cdk.assertions import Template

from ferry.local.simulator import Request
from ferry.local.template import resolved_statically
from infra.settings import SettingsError
from tests.infra.test_first_deploy import of_type, role_of_function, role_policies
from tests.infra.test_settings import environments  # noqa: F401 - the fixture

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
        return load_settings(settings, "qa")

    return load


def test_a_config_in_the_dr_account_writes_its_buckets_not_the_write_locations(dr_environment):
    assert len(dr_environment().configs) == 1
    with pytest.raises(
        SettingsError,
        match=r"replica location s3://primary-dr/warehouse/orders of .* is outside "
        r"dr-account.buckets \['s3://qa-dr-account/'\]",
    ):
        _ = dr_environment(bucket="primary-dr").configs


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
        _ = dr_environment(role, **dr).configs
    assert "\n" not in str(raised.value)


# -- the DR buckets (infra/dr_buckets.py) ---------------------------------------------------

LAKE = "ferry-prod-dr-lake-us-west-2"  # prod's existing DR bucket: the stack outputs its policy
FERRY_ROLE = f"arn:aws:iam::{PRIMARY}:role/Ferry-prod-Operator"
DENIED = ("ImplicitlyDenied", "ExplicitlyDenied")


def created(dr_stack, kind: str) -> dict:
    """The one resource of ``kind`` that belongs to the created bucket."""
    _, template, _ = dr_stack
    [found] = [
        r
        for logical, r in of_type(template, kind).items()
        if logical.startswith("DrBucketsferryproddraccount")
    ]
    return found


def session(role_arn: str) -> str:
    return role_arn.replace(":iam::", ":sts::").replace(":role/", ":assumed-role/") + "/session"


def bucket_decision(dr_stack, simulator, caller, action, resource, identity=(), tls=True) -> str:
    """May a session of ``caller`` do ``action`` on the created bucket, as its policy reads
    (and the caller's own ``identity`` policies)?"""
    _, _, resolved = dr_stack
    policy = resolved.value(created(dr_stack, "AWS::S3::BucketPolicy")["Properties"])
    return simulator.decide(
        Request(
            principal=session(caller),
            action=action,
            resource=resource,
            resource_account=DR,
            identity_policies=tuple(identity),
            resource_policy=policy["PolicyDocument"],
            context={
                "aws:SecureTransport": "true" if tls else "false",
                "aws:PrincipalArn": caller,
                "aws:PrincipalAccount": caller.split(":")[4],
            },
        )
    ).decision


def allowing(actions, resources) -> dict:
    """A caller's own policy allowing ``actions`` on ``resources``: across accounts both the
    caller's policy and the resource's must allow a request."""
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": actions, "Resource": resources}],
    }


def test_a_created_dr_bucket_is_private_tls_only_and_encrypted_with_the_stacks_rotated_key(
    dr_stack,
):
    _, template, _ = dr_stack
    bucket = created(dr_stack, "AWS::S3::Bucket")
    properties = bucket["Properties"]
    assert properties["BucketName"] == BUCKET
    assert bucket["DeletionPolicy"] == "RetainExceptOnCreate"
    assert "VersioningConfiguration" not in properties  # as the work bucket: nothing overwritten
    assert set(properties["PublicAccessBlockConfiguration"].values()) == {True}
    [rule] = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    [key_logical] = of_type(template, "AWS::KMS::Key")
    assert rule["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms",
        "KMSMasterKeyID": {"Fn::GetAtt": [key_logical, "Arn"]},
    }
    assert of_type(template, "AWS::KMS::Key")[key_logical]["Properties"]["EnableKeyRotation"]
    logs = properties["LoggingConfiguration"]["DestinationBucketName"]["Ref"]
    assert template["Resources"][logs]["Type"] == "AWS::S3::Bucket"
    # The policies name the DR role: created after it (S3 and KMS refuse an unknown principal).
    [role_logical] = of_type(template, "AWS::IAM::Role")
    assert created(dr_stack, "AWS::S3::BucketPolicy")["DependsOn"] == [role_logical]
    assert of_type(template, "AWS::KMS::Key")[key_logical]["DependsOn"] == [role_logical]
    assert "KeyArn" in template["Outputs"]


def test_the_created_buckets_policy_names_the_dr_role_and_the_primary_ferry_roles(dr_stack):
    _, _, resolved = dr_stack
    policy = resolved.value(created(dr_stack, "AWS::S3::BucketPolicy")["Properties"])
    statements = {s.get("Sid", s["Effect"]): s for s in policy["PolicyDocument"]["Statement"]}
    assert statements["Deny"]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert statements["FerryDrRoleObjects"]["Principal"] == {"AWS": DR_ROLE}
    assert statements["FerryDrRoleObjects"]["Resource"] == f"arn:aws:s3:::{BUCKET}/*"
    assert statements["FerryDrRoleBucket"]["Action"] == ["s3:ListBucket", "s3:GetBucketLocation"]
    read = statements["FerryPrimaryRolesRead"]
    assert read["Principal"] == {"AWS": f"arn:aws:iam::{PRIMARY}:root"}
    assert read["Action"] == "s3:GetObject"
    assert read["Condition"] == {
        "ArnLike": {"aws:PrincipalArn": f"arn:aws:iam::{PRIMARY}:role/Ferry-prod-*"}
    }


def test_the_dr_role_may_write_a_primary_ferry_role_read_and_no_one_else_the_created_bucket(
    dr_stack, simulator
):
    _, template, resolved = dr_stack
    [role_logical] = of_type(template, "AWS::IAM::Role")
    dr_policies = role_policies(template, resolved, role_logical)
    objects = f"arn:aws:s3:::{BUCKET}/warehouse/customers_dr/accounts/x/part-0"
    everything = allowing(["s3:*"], [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"])

    def decide(caller, action, resource=objects, identity=(), tls=True):
        return bucket_decision(dr_stack, simulator, caller, action, resource, identity, tls)

    for action in ("s3:PutObject", "s3:GetObject", "s3:DeleteObject"):
        assert decide(DR_ROLE, action, identity=dr_policies) == "Allowed", action
        # The bucket's policy alone lets the role (its account's): as its own policy does.
        assert decide(DR_ROLE, action) == "Allowed", action
    assert decide(DR_ROLE, "s3:ListBucket", f"arn:aws:s3:::{BUCKET}") == "Allowed"
    assert decide(DR_ROLE, "s3:PutObject", identity=dr_policies, tls=False) == "ExplicitlyDenied"
    # Failback's copy home reads DR's objects as Ferry's role of the primary account, even if
    # that role's own policy allowed it more.
    assert decide(FERRY_ROLE, "s3:GetObject", identity=[everything]) == "Allowed"
    assert decide(FERRY_ROLE, "s3:GetObject", identity=[everything], tls=False) in DENIED
    for action, resource in [
        ("s3:PutObject", objects),
        ("s3:DeleteObject", objects),
        ("s3:ListBucket", f"arn:aws:s3:::{BUCKET}"),
    ]:
        assert decide(FERRY_ROLE, action, resource, identity=[everything]) in DENIED, action
    # Another role of the primary account, another account's role named like Ferry's, even
    # allowed by their own policies; another role of the DR account (whose own policies are
    # its account's to decide).
    for caller in (
        f"arn:aws:iam::{PRIMARY}:role/analytics",
        "arn:aws:iam::444444444444:role/Ferry-prod-Operator",
    ):
        assert decide(caller, "s3:GetObject", identity=[everything]) in DENIED, caller
    assert decide(f"arn:aws:iam::{DR}:role/analytics", "s3:GetObject") in DENIED


def test_the_key_serves_the_dr_role_and_the_primary_ferry_roles_through_s3_only(
    dr_stack, simulator
):
    _, template, resolved = dr_stack
    [key] = of_type(template, "AWS::KMS::Key").values()
    policy = resolved.value(key["Properties"]["KeyPolicy"])
    key_arn = f"arn:aws:kms:us-west-2:{DR}:key/0d1e2f"
    decrypt_anything = allowing(["kms:*"], ["*"])

    def decide(caller, action, via_s3=True, identity=()):
        context = {
            "aws:SecureTransport": "true",
            "aws:PrincipalArn": caller,
            "aws:PrincipalAccount": caller.split(":")[4],
        }
        if via_s3:
            context["kms:ViaService"] = "s3.us-west-2.amazonaws.com"
        return simulator.decide(
            Request(
                principal=session(caller),
                action=action,
                resource=key_arn,
                resource_account=DR,
                identity_policies=tuple(identity),
                resource_policy=policy,
                context=context,
            )
        ).decision

    for action in ("kms:GenerateDataKey", "kms:Decrypt"):
        assert decide(DR_ROLE, action) == "Allowed", action
        assert decide(DR_ROLE, action, via_s3=False) in DENIED, action
    assert decide(FERRY_ROLE, "kms:Decrypt", identity=[decrypt_anything]) == "Allowed"
    assert decide(FERRY_ROLE, "kms:Decrypt", False, [decrypt_anything]) in DENIED
    assert decide(FERRY_ROLE, "kms:GenerateDataKey", identity=[decrypt_anything]) in DENIED
    other = f"arn:aws:iam::{PRIMARY}:role/analytics"
    assert decide(other, "kms:Decrypt", identity=[decrypt_anything]) in DENIED
    # The account administers the key: its IAM policies decide for its own principals.
    admin = f"arn:aws:iam::{DR}:role/admin"
    assert decide(admin, "kms:ScheduleKeyDeletion", False, [decrypt_anything]) == "Allowed"
    assert decide(admin, "kms:ScheduleKeyDeletion", False) in DENIED


def test_an_existing_dr_bucket_gets_no_policy_resource_but_the_statements_to_merge(
    dr_stack, simulator
):
    _, template, resolved = dr_stack
    policies = of_type(template, "AWS::S3::BucketPolicy").values()
    assert LAKE not in str([resolved.value(p["Properties"]) for p in policies])
    assert LAKE not in str(of_type(template, "AWS::S3::Bucket"))
    output = template["Outputs"]["PolicyForFerryProdDrLakeUsWest2"]
    assert LAKE in output["Description"]
    statements = json.loads(output["Value"])
    assert [s["Sid"] for s in statements] == [
        "FerryDrRoleObjects",
        "FerryDrRoleBucket",
        "FerryPrimaryRolesRead",
    ]
    # Merged into the bucket's policy, they let Ferry's role read and no one else.
    merged = {"Version": "2012-10-17", "Statement": statements}
    everything = allowing(["s3:*"], [f"arn:aws:s3:::{LAKE}/*"])

    def decide(caller, action):
        return simulator.decide(
            Request(
                principal=session(caller),
                action=action,
                resource=f"arn:aws:s3:::{LAKE}/warehouse/x",
                resource_account=DR,
                identity_policies=(everything,),
                resource_policy=merged,
                context={"aws:PrincipalArn": caller, "aws:PrincipalAccount": PRIMARY},
            )
        ).decision

    assert decide(FERRY_ROLE, "s3:GetObject") == "Allowed"
    assert decide(FERRY_ROLE, "s3:PutObject") in DENIED
    assert decide(f"arn:aws:iam::{PRIMARY}:role/analytics", "s3:GetObject") in DENIED


def test_a_plain_list_of_bucket_names_creates_nothing_and_outputs_each_ones_statements(
    dr_environment,
):
    import aws_cdk as cdk

    from infra.dr_account import DrAccountStack

    settings = dr_environment(buckets=["qa-dr-account", "qa.dr-account"])
    stack = DrAccountStack(cdk.App(), "Ferry-qa-dr-account", settings=settings)
    template = Template.from_stack(stack).to_json()
    kinds = {r["Type"] for r in template["Resources"].values()}
    assert kinds == {"AWS::IAM::Role", "AWS::IAM::Policy"}
    outputs = template["Outputs"]
    assert sorted(outputs) == ["PolicyForQaDrAccount", "PolicyForQaDrAccount2", "RoleArn"]
    for name, bucket in (("PolicyForQaDrAccount", "qa-dr-account"),
                         ("PolicyForQaDrAccount2", "qa.dr-account")):  # fmt: skip
        statements = json.loads(outputs[name]["Value"])
        assert statements[0]["Principal"] == {"AWS": f"arn:aws:iam::{DR}:role/ferry-qa-dr"}
        assert statements[0]["Resource"] == f"arn:aws:s3:::{bucket}/*"
        assert statements[2]["Condition"]["ArnLike"] == {
            "aws:PrincipalArn": f"arn:aws:iam::{PRIMARY}:role/Ferry-qa-*"
        }


@pytest.mark.parametrize(
    ("buckets", "message"),
    [
        (
            ["qa-dr", {"name": "qa-dr", "create": True}],
            "dr-account.buckets: Value error, bucket 'qa-dr' is named twice",
        ),
        (
            [{"name": "qa-dr", "kms": True}],
            "dr-account.buckets.0.kms: Value error, only a bucket the stack creates "
            "(create: true) gets its key; the key of an existing bucket goes in "
            "dr-account.kms-keys",
        ),
        ([{"name": "QA_dr", "create": True}], "dr-account.buckets.0.name: Value error, 'QA_dr'"),
        ([{"name": "qa-dr", "create": "yes please"}], "dr-account.buckets.0.create"),
    ],
)
def test_a_dr_bucket_mistake_stops_the_synth_in_one_line_naming_the_key_and_writes_nothing(
    environments,  # noqa: F811 - the fixture
    tmp_path,
    monkeypatch,
    capsys,
    buckets,
    message,
):
    from infra import app

    environments(
        "qa",
        **{
            "dr-account": {
                "account": DR,
                "region": "eu-west-1",
                "role-name": "ferry-qa-dr",
                "buckets": buckets,
            }
        },
    )
    out = tmp_path / "cdk.out"
    monkeypatch.setenv("CDK_OUTDIR", str(out))
    with pytest.raises(SystemExit) as stopped:
        app.main(["-c", "environment=qa"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("ferry: error: ") and message in error, error
    assert "\n" not in error
    assert not out.exists() or not any(out.iterdir())
