"""``failback`` in an environment's settings: what failback's reverse run may write of the
sources through the pipeline. Without it nothing is granted; with it, a config whose failback
would write outside it stops the synth with one line naming the config and the key; and
the roles of the copies and Commit write exactly there (IAM policy simulator)."""

from __future__ import annotations

import pytest

from infra.functions import kebab
from infra.settings import SettingsError, load_environment
from tests.infra.test_first_deploy import decide, role_of_function
from tests.infra.test_settings import environments  # noqa: F401 - the fixture

pytestmark = pytest.mark.infra

FAILBACK = {"write-locations": ["s3://src-bucket/"], "databases": ["sales"]}


def test_a_failback_that_fits_loads(environments):  # noqa: F811
    environments("qa", failback=FAILBACK)
    settings = load_environment("qa")
    assert settings.failback.write_locations == ["s3://src-bucket/"]
    assert list(settings.configs)


@pytest.mark.parametrize(
    "failback, message",
    [
        (
            {**FAILBACK, "write-locations": ["s3://src-bucket/elsewhere/"]},
            "its failback writes below s3://src-bucket/sales/, outside "
            "failback.write-locations",
        ),
        (
            {**FAILBACK, "databases": ["sales_*"]},
            "its failback alters tables of the Glue database sales, which failback.databases",
        ),
    ],
)
def test_a_config_whose_failback_needs_more_stops_the_synth_in_one_line(
    environments, failback, message  # noqa: F811
):
    environments("qa", failback=failback)
    with pytest.raises(SettingsError) as refused:
        _ = load_environment("qa").configs
    assert str(refused.value).startswith("qa: ") and "sales.yml" in str(refused.value)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    "failback, message",
    [
        ({"write-locations": []}, "failback.write-locations"),
        ({"write-locations": ["src/"]}, "failback.write-locations.0"),
        ({"write-locations": ["s3://src-bucket/"], "databases": ["Sales"]}, "databases.0"),
        ({"write-locations": ["s3://src-bucket/"], "kms-keys": ["alias/x"]}, "kms-keys.0"),
    ],
)
def test_a_failback_mistake_is_one_line_naming_its_key(environments, failback, message):  # noqa: F811
    environments("qa", failback=failback)
    with pytest.raises(SettingsError) as refused:
        load_environment("qa")
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_the_roles_write_the_sources_only_as_failback_allows(deployed, simulator):
    stack, template, resolved = deployed
    settings = stack.settings
    failback = settings.failback

    def may(function: str, action: str, resource: str) -> bool:
        role = role_of_function(template, f"-{kebab(function)}")
        return decide(simulator, template, resolved, role, action, resource) == "Allowed"

    sources = [location for r in settings.replications for location in r.read_locations]
    for location in sources:
        bucket, _, prefix = location.removeprefix("s3://").partition("/")
        snapshot = f"arn:aws:s3:::{bucket}/{prefix}orders/ferry-e1/part-0.parquet"
        for function in ("InlineCopy", "S3CopyBatch", "Commit"):
            assert may(function, "s3:PutObject", snapshot) == (failback is not None), (
                function, snapshot,
            )  # fmt: skip
        assert may("Abort", "s3:DeleteObject", snapshot) == (failback is not None)
        # Plan and housekeeping never write the sources.
        assert not may("Plan", "s3:PutObject", snapshot)
        assert not may("Housekeeping", "s3:DeleteObject", snapshot)
    for config in settings.configs.values():
        glue = config.source_catalog.glue
        if glue is None:
            continue
        region = glue.region or settings.region
        account = glue.catalog_id or settings.account
        for replication in config.table_replications:
            database = replication.source_table.database_name
            table = f"arn:aws:glue:{region}:{account}:table/{database}/orders"
            assert may("Commit", "glue:UpdateTable", table) == (failback is not None)
            assert not may("InlineCopy", "glue:UpdateTable", table)
            assert not may("Plan", "glue:UpdateTable", table)
            other = f"arn:aws:glue:{region}:{account}:table/{database}_other/orders"
            assert not may("Commit", "glue:UpdateTable", other)
