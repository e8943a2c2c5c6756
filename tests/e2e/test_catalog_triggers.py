"""``ferry local trigger`` installs a config's ``catalog-events`` as the stack deploys it: a
Glue source's rule on Glue's events, whose target is the CatalogEvents function (with the
function's permission for that rule), and a Hive source's poller schedule with the stack's
role for it (``infra/triggers.py``)."""

from __future__ import annotations

import json

import boto3
import pytest

from ferry import triggers
from ferry.config import load_config
from ferry.local import deploy
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
    rule = deploy.catalog_events_rule_name(uri)
    [line] = result.stdout.splitlines()
    assert line.startswith(f"a change of the Glue tables of {database} (us-east-1) now starts")
    assert line.endswith(f"(rule {rule})")

    events = boto3.client("events", region_name="us-east-1")
    described = events.describe_rule(Name=rule)
    assert json.loads(described["EventPattern"]) == triggers.glue_event_pattern(load_config(config))
    [target] = events.list_targets_by_rule(Rule=rule)["Targets"]
    intake = pipeline.outputs["CatalogEventsFunctionArn"]
    assert target["Arn"] == intake
    assert target["InputTransformer"]["InputTemplate"] == triggers.catalog_event_input_template(uri)
    assert not target["InputTransformer"].get("InputPathsMap")
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
    name = deploy.catalog_poller_schedule_name(uri)
    [line] = result.stdout.splitlines()
    assert line.startswith("the notification log of onprem is now read every PT2S")
    assert f"(schedule {name}, {triggers.POLLER_SCHEDULE})" in line

    schedule = boto3.client("scheduler").get_schedule(Name=name, GroupName="ferry-local")
    assert schedule["ScheduleExpression"] == triggers.POLLER_SCHEDULE
    assert schedule["State"] == "ENABLED"
    target = schedule["Target"]
    assert target["Arn"] == pipeline.outputs["CatalogPollerFunctionArn"]
    assert target["RoleArn"] == pipeline.outputs["PollerScheduleRoleArn"]
    assert json.loads(target["Input"]) == triggers.poller_input(uri)
    # The stack's role for it: Scheduler assumes it, and it may invoke the poller only.
    iam = boto3.client("iam")
    role_name = target["RoleArn"].rsplit("/", 1)[-1]
    trust = iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"]
    assert [s["Principal"] for s in trust["Statement"]] == [{"Service": "scheduler.amazonaws.com"}]
