"""``ferry local trigger`` installs a config's ``catalog-events`` as the stack deploys it: a
Glue source's rule on Glue's events, whose target is the CatalogEvents function (with the
function's permission for that rule), and a Hive source's poller schedule with the stack's
role for it (``infra/triggers.py``). An edited config's trigger replaces its old one; a
metastore that cannot feed a poller, or a second file of an installed config, is refused
before anything is installed."""

from __future__ import annotations

import json

import boto3
import pytest

from ferry.config import load_config
from ferry.feeds import trigger_events
from ferry.local import catalog_triggers as feed_triggers
from ferry.local import deploy, processes
from tests.e2e.test_cli import ferry

pytestmark = pytest.mark.e2e


def uploaded_config_uri(outputs_work: str, s3, config_path) -> str:
    """The URI ``ferry local trigger`` uploaded the config to (named by its content)."""
    return deploy.upload_config(s3, outputs_work, config_path)


def test_a_glue_sources_catalog_events_become_a_rule_whose_target_is_the_intake(
    pipeline, catalog_triggers, local_runtime, aws, unique, write_config
):
    database = f"events_{unique}"
    document = {
        "source-catalog": {"name": "landing", "glue": {"region": "us-east-1"}},
        "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
        "triggers": {"catalog-events": {"window": "PT10S"}},
        "table-replications": [
            {
                "source-table": {"database-name": database, "table-name": "orders"},
                "replication-mode": "METADATA_MIRROR",
                "replica-table": {"database-name": f"{database}_dr"},
            }
        ],
    }
    config = write_config(document)
    result = ferry("local", "trigger", str(config), "--home", str(local_runtime.state_dir))
    assert result.returncode == 0, result.stderr
    uri = uploaded_config_uri(pipeline.work_uri, aws["s3"], config)
    rule = feed_triggers.rule_name(config)
    [line] = result.stdout.splitlines()
    assert line.startswith(f"a change of the Glue tables of {database} (us-east-1) now starts")
    assert line.endswith(f"(rule {rule})")

    events = boto3.client("events", region_name="us-east-1")
    described = events.describe_rule(Name=rule)
    assert json.loads(described["EventPattern"]) == trigger_events.glue_event_pattern(load_config(config))
    [target] = events.list_targets_by_rule(Rule=rule)["Targets"]
    intake = pipeline.outputs["CatalogEventsFunctionArn"]
    assert target["Arn"] == intake
    assert target["InputTransformer"]["InputTemplate"] == trigger_events.catalog_event_input_template(uri)
    assert not target["InputTransformer"].get("InputPathsMap")
    # What it could not deliver goes to the stack's triggers' queue, after the stack's retries.
    assert target["DeadLetterConfig"] == {"Arn": pipeline.outputs["TriggerDeadLettersArn"]}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == trigger_events.TARGET_RETRY_ATTEMPTS
    # EventBridge may invoke the intake for this rule.
    policy = json.loads(boto3.client("lambda").get_policy(FunctionName=intake)["Policy"])
    [statement] = [s for s in policy["Statement"] if s["Sid"] == rule]
    assert statement["Principal"] == {"Service": "events.amazonaws.com"}
    assert statement["Condition"]["ArnLike"]["AWS:SourceArn"] == described["Arn"]

    # Installing again changes nothing and says the same.
    again = ferry("local", "trigger", str(config), "--home", str(local_runtime.state_dir))
    assert again.returncode == 0, again.stderr
    assert again.stdout == result.stdout
    assert len(events.list_targets_by_rule(Rule=rule)["Targets"]) == 1


def test_a_hive_sources_catalog_events_become_the_pollers_schedule(
    pipeline, catalog_triggers, local_runtime, aws, unique, write_config
):
    document = {
        "source-catalog": {"name": "onprem", "hive-metastore-uris": local_runtime.source_uri},
        "replica-catalog": {"name": "dr", "hive-metastore-uris": local_runtime.replica_uri},
        "triggers": {"catalog-events": {"poll-interval": "PT2S"}},
        "table-replications": [
            {
                "source-table": {"database-name": f"sales_{unique}", "table-name": "orders"},
                "replication-mode": "METADATA_MIRROR",
                "replica-table": {"database-name": f"sales_{unique}_dr"},
            }
        ],
    }
    config = write_config(document)
    result = ferry("local", "trigger", str(config), "--home", str(local_runtime.state_dir))
    assert result.returncode == 0, result.stderr
    uri = uploaded_config_uri(pipeline.work_uri, aws["s3"], config)
    name = feed_triggers.schedule_name(config)
    [line] = result.stdout.splitlines()
    assert line.startswith("the notification log of onprem is now read every PT2S")
    assert f"(schedule {name}, {trigger_events.POLLER_SCHEDULE})" in line

    schedule = boto3.client("scheduler").get_schedule(Name=name, GroupName="ferry-local")
    assert schedule["ScheduleExpression"] == trigger_events.POLLER_SCHEDULE
    assert schedule["State"] == "ENABLED"
    target = schedule["Target"]
    assert target["Arn"] == pipeline.outputs["CatalogPollerFunctionArn"]
    assert target["RoleArn"] == pipeline.outputs["PollerScheduleRoleArn"]
    assert json.loads(target["Input"]) == trigger_events.poller_input(uri)
    assert target["DeadLetterConfig"] == {"Arn": pipeline.outputs["TriggerDeadLettersArn"]}
    assert target["RetryPolicy"] == trigger_events.POLLER_RETRY_POLICY
    # The stack's role for it: Scheduler assumes it, and it may invoke the poller only.
    iam = boto3.client("iam")
    role_name = target["RoleArn"].rsplit("/", 1)[-1]
    trust = iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"]
    assert [s["Principal"] for s in trust["Statement"]] == [{"Service": "scheduler.amazonaws.com"}]


def hive_document(local_runtime, unique: str, source_uri: str | None = None, **events) -> dict:
    return {
        "source-catalog": {
            "name": "onprem",
            "hive-metastore-uris": source_uri or local_runtime.source_uri,
        },
        "replica-catalog": {"name": "dr", "hive-metastore-uris": local_runtime.replica_uri},
        "triggers": {"catalog-events": {"poll-interval": "PT2S", **events}},
        "table-replications": [
            {
                "source-table": {"database-name": f"sales_{unique}", "table-name": "orders"},
                "replication-mode": "METADATA_MIRROR",
                "replica-table": {"database-name": f"sales_{unique}_dr"},
            }
        ],
    }


def feeds_of(config) -> list[feed_triggers.InstalledFeed]:
    """The catalog-events rules and schedules installed for this config file."""
    from ferry.storage.aws import AwsClients

    return [
        f for f in feed_triggers.installed(AwsClients()) if f.config_path == str(config.resolve())
    ]


@pytest.mark.parametrize("metastore", ["writes no notification log", "nobody answers"])
def test_a_metastore_that_cannot_feed_a_poller_is_refused_before_anything_is_installed(
    pipeline, catalog_triggers, local_runtime, aws, unique, write_config, bucket, metastore
):
    # The replica metastore has no notification listener; nothing listens on a free port.
    if metastore == "nobody answers":
        uri = f"thrift://127.0.0.1:{processes.free_port()}"
    else:
        uri = local_runtime.replica_uri
    document = hive_document(local_runtime, unique, uri)
    document["triggers"]["s3"] = [{"bucket": bucket}]  # installed with it, or not at all
    config = write_config(document)
    result = ferry("local", "trigger", str(config), "--home", str(local_runtime.state_dir))
    assert result.returncode != 0
    [line] = result.stderr.splitlines()
    assert line.startswith(f"ferry: error: {config}: source-catalog onprem: ")
    assert uri in line and line.endswith("; no trigger installed")
    if metastore == "nobody answers":
        assert f"nobody answers at {uri}" in line
    else:
        assert (
            "writes no notification log: set hive.metastore.transactional.event.listeners" in line
        )
    assert result.stdout == ""
    assert feeds_of(config) == []
    events = boto3.client("events", region_name="us-east-1")
    assert not [
        r for r in events.list_rules(NamePrefix="ferry-")["Rules"]
        if bucket in r.get("EventPattern", "")
    ]  # fmt: skip
    with pytest.raises(aws["s3"].exceptions.ClientError):  # not even uploaded
        uploaded = deploy.config_uri(pipeline.work_uri, config).removeprefix("s3://")
        aws["s3"].head_object(Bucket=uploaded.split("/")[0], Key=uploaded.split("/", 1)[1])


def test_an_edited_configs_trigger_replaces_the_old_one(
    pipeline, catalog_triggers, local_runtime, aws, unique, write_config
):
    home = str(local_runtime.state_dir)
    config = write_config(hive_document(local_runtime, unique))
    assert ferry("local", "trigger", str(config), "--home", home).returncode == 0
    first = deploy.config_uri(pipeline.work_uri, config)
    assert [f.config_uri for f in feeds_of(config)] == [first]

    # Edited: another window. Installed again, the one schedule now hands over the new upload.
    config.write_text(config.read_text().replace("poll-interval: PT2S", "poll-interval: PT3S"))
    edited = deploy.config_uri(pipeline.work_uri, config)
    assert edited != first
    result = ferry("local", "trigger", str(config), "--home", home)
    assert result.returncode == 0, result.stderr
    assert "read every PT3S" in result.stdout
    [feed] = feeds_of(config)
    assert (feed.name, feed.config_uri) == (feed_triggers.schedule_name(config), edited)

    # Edited into a Glue source: its rule replaces the poller's schedule.
    glue = {
        **yaml_document(config),
        "source-catalog": {"name": "lake", "glue": {"region": "us-east-1"}},
    }
    glue["triggers"] = {"catalog-events": {"window": "PT5S"}}
    write_config(glue, config.name)
    result = ferry("local", "trigger", str(config), "--home", home)
    assert result.returncode == 0, result.stderr
    [feed] = feeds_of(config)
    assert feed.name == feed_triggers.rule_name(config)
    assert feed.config_uri == deploy.config_uri(pipeline.work_uri, config)


def yaml_document(path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text())


def test_a_second_file_of_an_installed_config_is_refused_naming_the_first(
    pipeline, catalog_triggers, local_runtime, unique, tmp_path
):
    home = str(local_runtime.state_dir)
    text = json.dumps(hive_document(local_runtime, unique))  # JSON is YAML
    first, second = tmp_path / "teamA" / "feeds.yml", tmp_path / "teamB" / "feeds.yml"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(text)
    assert ferry("local", "trigger", str(first), "--home", home).returncode == 0
    result = ferry("local", "trigger", str(second), "--home", home)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line == (
        f"ferry: error: {second}: the same config as {first.resolve()}, whose catalog-events are installed "
        f"({feed_triggers.schedule_name(first)}): both would share one change feed (its "
        "position and windows are the config's); install one of them"
    )
    assert feeds_of(second) == []
