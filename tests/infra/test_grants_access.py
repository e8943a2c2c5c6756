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
