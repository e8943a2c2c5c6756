"""An environment's settings file: what is refused, in one line naming the file and key."""

from __future__ import annotations

import pytest
import yaml

from infra import settings as settings_module
from infra.settings import SettingsError, load_environment

pytestmark = pytest.mark.infra

CONFIG = """
source-catalog: {name: onprem, glue: {region: eu-west-1}}
replica-catalog: {name: dr, glue: {region: eu-west-2}}
table-replications:
  - source-table: {database-name: sales, table-name: orders}
    replica-table: {table-location: "s3://${DR_BUCKET}/warehouse/orders"}
"""


@pytest.fixture
def environments(tmp_path, monkeypatch):
    folder = tmp_path / "environments"
    folder.mkdir()
    (tmp_path / "sales.yml").write_text(CONFIG)
    monkeypatch.setattr(settings_module, "ENVIRONMENTS", folder)

    def write(name: str, **changes):
        document = {
            "account": "111111111111",
            "region": "eu-west-1",
            "replications": [
                {
                    "config": str(tmp_path / "sales.yml"),
                    "read-locations": ["s3://src-bucket/sales/"],
                }
            ],
            "write-locations": ["s3://dr-bucket/warehouse/"],
            "variables": {"DR_BUCKET": "dr-bucket"},
            **changes,
        }
        (folder / f"{name}.yml").write_text(yaml.safe_dump(document))

    return write


def test_a_good_file_loads_with_its_configs(environments):
    environments("qa")
    settings = load_environment("qa")
    (config,) = settings.configs.values()
    assert (
        config.table_replications[0].replica_table.table_location
        == "s3://dr-bucket/warehouse/orders"
    )
    assert (
        settings.events_topic_arn
        == "arn:aws:sns:eu-west-1:111111111111:ferry-qa-replication-events"
    )


def test_a_replica_outside_the_write_locations_fails_the_synth(environments):
    environments("qa", **{"write-locations": ["s3://dr-bucket/elsewhere/"]})
    with pytest.raises(
        SettingsError,
        match=r"replica location s3://dr-bucket/warehouse/orders .* outside write-locations",
    ):
        _ = load_environment("qa").configs


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"account": "1234"}, "account"),
        ({"region": "europe"}, "region"),
        ({"write-locations": ["dr/warehouse"]}, "write-locations.0"),
        ({"variables": {"FERRY_WORK_URI": "x"}}, "FERRY_WORK_URI is set by the deployment"),
        ({"housekeeping-schedule": "every day"}, "housekeeping-schedule"),
        ({"freshness-check-rate": "rate(2 hours)"}, "freshness-check-rate"),
        ({"freshness-check-rate": "cron(0/5 * * * ? *)"}, "freshness-check-rate"),
        ({"log-retention-days": 0}, "log-retention-days"),
        ({"spark": {"maximum-vcpu": 1}}, "spark.maximum-vcpu"),
        ({"netwrok": {}}, "netwrok"),
        ({"write-kms-keys": ["alias/dr"]}, "write-kms-keys.0"),
        (
            {"replications": [{"config": "sales.yml", "read-locations": ["s3://src-bucket/"],
                               "read-kms-keys": ["arn:aws:kms:eu-west-1:1:key/k"]}]},
            "replications.0.read-kms-keys.0",
        ),
        ({"ad-hoc-access": {"topics": ["ferry-*"]}}, "ad-hoc-access.topics"),
        ({"ad-hoc-access": {"glue": [{"read-databases": ["Sales-DB"]}]}}, "read-databases.0"),
        ({"ad-hoc-access": {"read-locations": ["s3://Bad_Bucket/"]}}, "read-locations.0"),
        ({"copy-budget": {"slots": 0}}, "copy-budget.slots"),
        (
            {"copy-budget": {"slots": 2, "critical-reserved-slots": 2}},
            "copy-budget: Value error, critical-reserved-slots (2) must be fewer than slots (2)",
        ),
        ({"copy-budget": {"priority-aging": "soon"}}, "copy-budget.priority-aging"),
        ({"copy-budget": {"priority-aging": "PT0S"}}, "give a positive duration"),
        ({"copy-budget": {"wait-seconds": 0}}, "copy-budget.wait-seconds"),
        ({"copy-budget": {"slot": 4}}, "copy-budget.slot"),
    ],
)
def test_a_mistake_is_one_line_naming_the_file_and_key(environments, changes, message):
    environments("qa", **changes)
    with pytest.raises(SettingsError) as raised:
        load_environment("qa")
    assert str(raised.value).startswith("qa.yml: ") or "environments/qa.yml" in str(raised.value)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_locations_may_name_buckets_by_iam_wildcards(environments):
    environments("qa", **{"write-locations": ["s3://dr-*/"]})
    (config,) = load_environment("qa").configs.values()
    assert config.table_replications[0].replica_table.table_location.startswith("s3://dr-bucket/")
    environments("qa", **{"write-locations": ["s3://dr-*/elsewhere/"]})
    with pytest.raises(SettingsError, match="outside write-locations"):
        _ = load_environment("qa").configs


def test_a_settings_mistake_stops_the_synth_with_one_line_and_exit_2(environments, capsys):
    from infra import app

    environments("qa", **{"write-kms-keys": ["alias/dr"]})
    with pytest.raises(SystemExit) as stopped:
        app.main(["-c", "environment=qa"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("ferry: error: ") and "write-kms-keys.0" in error
    assert "\n" not in error


def test_an_unknown_environment_names_the_known_ones(environments):
    environments("qa")
    with pytest.raises(SettingsError, match="no settings for environment 'prd'.*known: qa"):
        load_environment("prd")


@pytest.mark.parametrize(
    ("second", "content", "message"),
    [
        (
            "teamB/sales.yml",
            CONFIG.replace("orders", "customers"),
            "the configs {a} and {b} have the same name 'sales': their rules and schedules "
            "(ferry-qa-sales-…) would be one; rename one of the files",
        ),
        (
            "teamB/sales-copy.yml",
            CONFIG,
            "the configs {a} and {b} are the same file: deployed, they are one object, whose "
            "change feeds (position, windows) both would share; keep one",
        ),
    ],
)
def test_two_configs_that_would_deploy_as_one_stop_the_synth_in_one_line_naming_both(
    environments, tmp_path, capsys, second, content, message
):
    from infra import app

    first = tmp_path / "teamA" / "sales.yml"
    other = tmp_path / second
    for path, text in ((first, CONFIG), (other, content)):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    replications = [
        {"config": str(path), "read-locations": ["s3://src-bucket/sales/"]}
        for path in (first, other)
    ]
    environments("qa", replications=replications)
    with pytest.raises(SystemExit) as stopped:
        app.main(["-c", "environment=qa"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error == "ferry: error: qa: " + message.format(a=first, b=other)


def test_the_copy_budget_reaches_the_functions_as_their_environment(environments):
    environments("qa", **{"copy-budget": {"slots": 6, "critical-reserved-slots": 1,
                                          "priority-aging": "PT30M"}})  # fmt: skip
    assert load_environment("qa").copy_budget.environment() == {
        "FERRY_COPY_SLOTS": "6",
        "FERRY_CRITICAL_RESERVED_SLOTS": "1",
        "FERRY_PRIORITY_AGING": "PT30M",
        "FERRY_COPY_SLOT_WAIT_SECONDS": "5",
    }
    environments("qa")
    assert load_environment("qa").copy_budget.environment()["FERRY_COPY_SLOTS"] == "8"
