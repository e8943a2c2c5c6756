"""``switch_for(NAME)`` of an environment that cannot be switched: one ``FailoverError`` line
naming it, before anything is invoked (on moto's in-process CloudFormation)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from moto import mock_aws

from ferry.commands.deployed_switch import switch_for
from ferry.config import parse_config_text
from ferry.core.errors import FailoverError
from ferry.failover.deployed import DeployedSwitch

CONFIG = """
source-catalog: {name: onprem, hive-metastore-uris: "thrift://source:9083"}
replica-catalog: {name: dr, glue: {region: eu-west-1}}
table-replications:
  - source-table: {database-name: sales, table-name: orders}
    replica-table: {table-location: "s3://dr/orders"}
"""


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    with mock_aws():
        yield


def suspend(environment: str) -> None:
    config = parse_config_text(CONFIG, "sales.yml", {})
    switch_for(environment).suspend(
        config, ["sales.orders"], cancel_runs=False, wait=timedelta(0)
    )


def test_an_environment_without_settings_is_named(aws):
    with pytest.raises(FailoverError, match="^--environment nowhere: no settings for environment"):
        suspend("nowhere")


def test_an_environment_not_deployed_is_named_with_its_stack(aws):
    with pytest.raises(FailoverError) as refused:
        suspend("dev")

    assert str(refused.value) == (
        "--environment dev: not deployed (no stack Ferry-dev in eu-west-1)"
    )


def test_the_local_runtime_not_running_is_named_with_its_home(aws, tmp_path):
    """The commands say how the local runtime is reached (``ferry.commands.deployed_switch``);
    without it running there, one line names the home."""
    config = parse_config_text(CONFIG, "sales.yml", {})

    with pytest.raises(FailoverError) as refused:
        switch_for("local", home=tmp_path).suspend(
            config, ["sales.orders"], cancel_runs=False, wait=timedelta(0)
        )

    assert str(refused.value) == (
        f"--environment local: the local runtime is not running in {tmp_path}; "
        "start it with `ferry local up`"
    )


def test_a_switch_not_told_how_to_reach_the_local_runtime_says_so(aws, tmp_path):
    """Below the commands nothing imports the local runtime: a switch built without the
    commands' reach of it refuses ``local`` with one line."""
    config = parse_config_text(CONFIG, "sales.yml", {})

    with pytest.raises(FailoverError) as refused:
        DeployedSwitch("local", tmp_path).suspend(
            config, ["sales.orders"], cancel_runs=False, wait=timedelta(0)
        )

    assert str(refused.value) == (
        f"--environment local: the local runtime's deployment is not known here (home {tmp_path})"
    )


def test_a_wait_longer_than_the_function_may_run_is_refused_first():
    config = parse_config_text(CONFIG, "sales.yml", {})

    with pytest.raises(FailoverError, match="waits 0:14:00 at most"):
        switch_for("dev").suspend(
            config, ["sales.orders"], cancel_runs=False, wait=timedelta(minutes=20)
        )


def deployed_dev(outputs: dict[str, str]):
    """A stack ``Ferry-dev`` with these outputs; the dev environment's ``sales-dr`` config and
    its tables."""
    import json

    import boto3

    from infra.settings import load_environment

    settings = load_environment("dev")
    [config] = [c for p, c in settings.configs.items() if p.stem == "sales-dr"]
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    boto3.client("cloudformation", region_name=settings.region).create_stack(
        StackName="Ferry-dev", TemplateBody=json.dumps(template)
    )
    return config, [r.source_table.qualified_name for r in config.table_replications]


def test_a_stack_deployed_before_the_switch_existed_is_told_to_deploy_again(aws):
    config, tables = deployed_dev({"ConfigUriSalesDr": "s3://assets/0123.yml"})

    with pytest.raises(FailoverError) as refused:
        switch_for("dev").suspend(config, tables, cancel_runs=False, wait=timedelta(0))

    assert str(refused.value).startswith(
        "the stack Ferry-dev has no FailoverSwitchFunctionArn: deploy the environment again"
    )


def test_a_switch_that_cannot_be_invoked_is_one_line(aws):
    gone = "arn:aws:lambda:eu-west-1:123456789012:function:ferry-dev-failover-switch"
    config, tables = deployed_dev(
        {"ConfigUriSalesDr": "s3://assets/0123.yml", "FailoverSwitchFunctionArn": gone}
    )

    with pytest.raises(FailoverError) as refused:
        switch_for("dev").resume(config, tables)

    assert str(refused.value).startswith(f"the failover switch {gone} could not be invoked: ")
    assert "\n" not in str(refused.value)


def test_a_stack_deployed_before_the_failover_function_existed_changes_nothing(aws):
    """The check comes first: without the Failover function the switch is never invoked (its
    ARN here names no function: invoked, it would fail with another line)."""
    from ferry.failover.deployed_failover import fail_over

    gone = "arn:aws:lambda:eu-west-1:123456789012:function:ferry-dev-failover-switch"
    config, tables = deployed_dev(
        {"ConfigUriSalesDr": "s3://assets/0123.yml", "FailoverSwitchFunctionArn": gone}
    )

    with pytest.raises(FailoverError) as refused:
        fail_over(switch_for("dev"), config, tables, "ferry-20260101t000000000z-0f0f0f0f")

    assert str(refused.value).startswith(
        "the stack Ferry-dev has no FailoverFunctionArn: deploy the environment again"
    )
