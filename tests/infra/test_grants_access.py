"""The deployed roles and Lake Formation: Plan may read grants and check them, Commit may
give them, and the mapped principals are the only IAM roles they may look up; a stack whose
configs replicate no grants allows no Lake Formation action at all."""

from __future__ import annotations

import pytest
import yaml

from infra.settings import Replication, environment_names, load_environment
from tests.infra.stacks import synthesized
from tests.infra.test_dead_letters import actions_of, function_logical, statements_of

pytestmark = pytest.mark.infra

ANALYST_DR = "arn:aws:iam::222222222222:role/analyst-dr"


def role_statements(resources: dict, function: str) -> list[dict]:
    logical = function_logical(resources, function)
    return statements_of(resources, resources[logical]["Properties"]["Role"]["Fn::GetAtt"][0])


def lake_formation(statements: list[dict]) -> set[str]:
    return {a for s in statements for a in actions_of(s) if a.startswith("lakeformation:")}


@pytest.fixture(scope="module")
def with_grants(tmp_path_factory):
    """The prod environment with one more config: Glue to Glue, its grants mapped."""
    folder = tmp_path_factory.mktemp("grants")
    config = folder / "landing-grants.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "source-catalog": {"name": "primary", "glue": {"region": "us-east-1"}},
                "replica-catalog": {"name": "dr", "glue": {"region": "us-west-2"}},
                "permissions": {
                    "lake-formation": {
                        "principal-mappings": {
                            "arn:aws:iam::111111111111:role/analyst": ANALYST_DR,
                            "IAM_ALLOWED_PRINCIPALS": "IAM_ALLOWED_PRINCIPALS",
                        }
                    }
                },
                "table-replications": [
                    {
                        "source-table": {"database-name": "landing", "table-name": "orders"},
                        "replica-table": {
                            "database-name": "landing_dr",
                            "table-location": "s3://ferry-prod-dr-us-west-2/warehouse/orders",
                        },
                    }
                ],
            }
        )
    )
    settings = load_environment("prod")
    extra = Replication(config=config, read_locations=["s3://ferry-prod-landing-us-east-1/tables/"])
    settings = settings.model_copy(update={"replications": [*settings.replications, extra]})
    return synthesized(settings)["Resources"]


def test_plan_reads_and_checks_grants_and_commit_gives_them(with_grants):
    plan, commit = (role_statements(with_grants, f) for f in ("Plan", "Commit"))
    read = {
        "lakeformation:GetDataLakeSettings", "lakeformation:GetResourceLFTags",
        "lakeformation:ListPermissions",
    }  # fmt: skip
    assert lake_formation(plan) == read
    assert lake_formation(commit) == read | {
        "lakeformation:AddLFTagsToResource", "lakeformation:BatchGrantPermissions",
        "lakeformation:BatchRevokePermissions", "lakeformation:RemoveLFTagsFromResource",
    }  # fmt: skip
    for statements in (plan, commit):
        [lookup] = [s for s in statements if "iam:GetRole" in actions_of(s)]
        assert sorted(actions_of(lookup)) == ["iam:GetRole", "iam:GetUser"]
        assert lookup["Resource"] == ANALYST_DR  # the mapped roles of this account, no other
    # No other function touches Lake Formation.
    for function in ("InlineCopy", "Abort", "NotifySuccess", "Housekeeping"):
        assert not lake_formation(role_statements(with_grants, function)), function


@pytest.mark.parametrize("name", environment_names())
def test_configs_without_permissions_get_no_lake_formation_action(stacks, name):
    from aws_cdk.assertions import Template

    resources = Template.from_stack(stacks[name]).to_json()["Resources"]
    for function in ("Plan", "Commit"):
        statements = role_statements(resources, function)
        assert not lake_formation(statements), function
        assert not any("iam:GetRole" in actions_of(s) for s in statements)


DR_ACCOUNT, PRIMARY_ACCOUNT = "333333333333", "222222222222"
ANALYST_IN_DR = f"arn:aws:iam::{DR_ACCOUNT}:role/analyst-dr"


@pytest.fixture(scope="module")
def across_accounts(tmp_path_factory):
    """An environment whose config replicates Glue grants into another account's catalog,
    reached through the DR account's role: the primary stack's template and the DR stack's
    role policy."""
    from infra.app import build_app
    from infra.settings import load_settings

    folder = tmp_path_factory.mktemp("grants-dr")
    config = folder / "sales-dr-account.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "source-catalog": {"name": "onprem", "glue": {"region": "eu-west-1"}},
                "replica-catalog": {
                    "name": "dr",
                    "glue": {"region": "eu-west-1", "catalog-id": DR_ACCOUNT},
                    "assume-role": {
                        "role-arn": f"arn:aws:iam::{DR_ACCOUNT}:role/ferry-qa-dr",
                        "external-id": "ferry-qa",
                    },
                },
                "permissions": {
                    "lake-formation": {
                        "principal-mappings": {
                            f"arn:aws:iam::{PRIMARY_ACCOUNT}:role/analyst": ANALYST_IN_DR
                        }
                    }
                },
                "table-replications": [
                    {
                        "source-table": {"database-name": "sales", "table-name": "orders"},
                        "replica-table": {"table-location": "s3://qa-dr-account/warehouse/orders"},
                    }
                ],
            }
        )
    )
    settings_file = folder / "qa.yml"
    settings_file.write_text(
        yaml.safe_dump(
            {
                "account": PRIMARY_ACCOUNT,
                "region": "eu-west-1",
                "replications": [
                    {"config": str(config), "read-locations": ["s3://src-bucket/sales/"]}
                ],
                "write-locations": ["s3://primary-dr/warehouse/"],
                "dr-account": {
                    "account": DR_ACCOUNT,
                    "region": "eu-west-1",
                    "role-name": "ferry-qa-dr",
                    "buckets": ["qa-dr-account"],
                    "glue-databases": ["sales"],
                    "external-id": "ferry-qa",
                },
            }
        )
    )
    settings = load_settings(settings_file, "qa")
    # The whole app, synthesized with its checks (cdk-nag): the DR role's Lake Formation
    # actions on "*" must pass them as the primary roles' do.
    assembly = build_app(settings=[settings]).synth()
    primary = assembly.get_stack_by_name(settings.stack_name).template["Resources"]
    dr = assembly.get_stack_by_name(f"{settings.stack_name}-dr-account").template
    [policy] = [r for r in dr["Resources"].values() if r["Type"] == "AWS::IAM::Policy"]
    return primary, policy["Properties"]["PolicyDocument"]["Statement"]


def test_grants_into_another_account_are_the_dr_roles_to_give_and_plan_reads_the_source(
    across_accounts,
):
    primary, dr_statements = across_accounts
    read = {
        "lakeformation:GetDataLakeSettings", "lakeformation:GetResourceLFTags",
        "lakeformation:ListPermissions",
    }  # fmt: skip
    write = {
        "lakeformation:AddLFTagsToResource", "lakeformation:BatchGrantPermissions",
        "lakeformation:BatchRevokePermissions", "lakeformation:RemoveLFTagsFromResource",
    }  # fmt: skip
    # The DR role checks and gives the replica's grants, and looks up its account's principals.
    assert lake_formation(dr_statements) == read | write
    [lookup] = [s for s in dr_statements if "iam:GetRole" in actions_of(s)]
    assert lookup["Resource"] == ANALYST_IN_DR  # its account's mapped roles, no other
    # In the primary account Plan reads the source's grants; Commit's are the DR role's.
    plan, commit = (role_statements(primary, f) for f in ("Plan", "Commit"))
    assert lake_formation(plan) == read
    assert not lake_formation(commit)
    for statements in (plan, commit):
        assert not any("iam:GetRole" in actions_of(s) for s in statements)
