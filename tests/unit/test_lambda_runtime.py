"""The functions' settings: a config's secret placeholders come from Secrets Manager."""

import json
import uuid
from types import SimpleNamespace

import boto3
import pytest
from moto import mock_aws

from ferry.config.text import SECRET_PLACEHOLDER
from ferry.core.errors import ConfigError, FerryError
from ferry.statemachine.outcomes import resolved_tables
from ferry.states import resolve_tables
from ferry.states.context import StateContext
from ferry.storage.aws import AwsClients
from lambdas import runtime

CONFIG = """
source-catalog: {name: onprem, hive-metastore-uris: "${SOURCE_METASTORE_URIS}"}
replica-catalog: {name: dr, glue: {region: "${REPLICA_REGION}"}}
table-replications:
  - source-table: {database-name: sales, table-name: orders}
    replica-table: {table-location: "s3://dr/warehouse/orders"}
"""


@pytest.fixture
def environment(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("FERRY_WORK_URI", "s3://work")
    monkeypatch.setenv("REPLICA_REGION", "eu-west-1")
    runtime.settings.cache_clear()
    yield monkeypatch
    runtime.settings.cache_clear()


@mock_aws
def test_secret_values_resolve_the_configs_placeholders(environment, tmp_path):
    secrets = boto3.client("secretsmanager", region_name="eu-west-1")
    arn = secrets.create_secret(
        Name=f"ferry/dev/config-variables-{uuid.uuid4().hex[:8]}",
        SecretString=json.dumps({"SOURCE_METASTORE_URIS": "thrift://ms.internal:9083"}),
    )["ARN"]
    environment.setenv("FERRY_CONFIG_SECRET", arn)
    values = runtime.config_environment(AwsClients())
    assert values["SOURCE_METASTORE_URIS"] == "thrift://ms.internal:9083"
    assert values["REPLICA_REGION"] == "eu-west-1"  # the function's own environment too

    path = tmp_path / "sales.yml"
    path.write_text(CONFIG)
    context = StateContext((tmp_path / "work").as_uri(), config_environment=values)
    (table,) = resolved_tables(resolve_tables.run(context, {"configUri": str(path)}, 4))
    assert table["sourceTable"] == "sales.orders"


@mock_aws
def test_a_secret_still_holding_its_placeholders_refuses_to_run_and_names_them(environment):
    # What the stack creates: a placeholder for each declared value, until someone puts them.
    secrets = boto3.client("secretsmanager", region_name="eu-west-1")
    name = f"ferry/dev/config-variables-{uuid.uuid4().hex[:8]}"
    arn = secrets.create_secret(
        Name=name,
        SecretString=json.dumps(
            {"SOURCE_METASTORE_URIS": SECRET_PLACEHOLDER, "REPLICA_URIS": "thrift://r:9083"}
        ),
    )["ARN"]
    environment.setenv("FERRY_CONFIG_SECRET", arn)
    with pytest.raises(ConfigError) as raised:
        runtime.config_environment(AwsClients())
    message = str(raised.value)
    assert "still holds the placeholder of SOURCE_METASTORE_URIS" in message
    assert "put-secret-value" in message and "REPLICA_URIS" not in message
    assert "\n" not in message


@mock_aws
def test_a_secret_that_is_not_a_json_object_is_named(environment):
    secrets = boto3.client("secretsmanager", region_name="eu-west-1")
    arn = secrets.create_secret(
        Name=f"ferry/dev/config-variables-{uuid.uuid4().hex[:8]}", SecretString='["x"]'
    )["ARN"]
    environment.setenv("FERRY_CONFIG_SECRET", arn)
    with pytest.raises(FerryError, match="must hold a JSON object"):
        runtime.config_environment(AwsClients())


@mock_aws
def test_an_unset_placeholder_is_named_when_the_secret_lacks_it(environment, tmp_path):
    secrets = boto3.client("secretsmanager", region_name="eu-west-1")
    arn = secrets.create_secret(
        Name=f"ferry/dev/config-variables-{uuid.uuid4().hex[:8]}", SecretString="{}"
    )["ARN"]
    environment.setenv("FERRY_CONFIG_SECRET", arn)
    path = tmp_path / "sales.yml"
    path.write_text(CONFIG)
    context = StateContext(
        (tmp_path / "work").as_uri(), config_environment=runtime.config_environment(AwsClients())
    )
    with pytest.raises(FerryError, match="SOURCE_METASTORE_URIS"):
        resolve_tables.run(context, {"configUri": str(path)}, 4)


@mock_aws
def test_a_secret_lacking_a_declared_value_refuses_to_run_and_names_it(environment):
    # What the stack creates: an empty object, the names in the functions' environment.
    secrets = boto3.client("secretsmanager", region_name="eu-west-1")
    arn = secrets.create_secret(
        Name=f"ferry/dev/config-variables-{uuid.uuid4().hex[:8]}",
        SecretString=json.dumps({"REPLICA_URIS": "thrift://r:9083"}),
    )["ARN"]
    environment.setenv("FERRY_CONFIG_SECRET", arn)
    environment.setenv("FERRY_CONFIG_SECRET_VARIABLES", "REPLICA_URIS,SOURCE_METASTORE_URIS")
    with pytest.raises(ConfigError) as raised:
        runtime.config_environment(AwsClients())
    message = str(raised.value)
    assert f"secret {arn} holds no value for SOURCE_METASTORE_URIS:" in message
    assert "put-secret-value" in message and "\n" not in message


@mock_aws
def test_the_freshness_check_of_an_environment_whose_secret_is_unfilled_measures_nothing(
    environment,
):
    """A first deploy starts the check's schedule before anyone filled the secret: the check
    says so and succeeds (no dead letter, no errors alarm), publishing nothing."""
    from lambdas import freshness_check

    # This process's moto alone: the session's emulator holds other tests' metrics.
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_CLOUDWATCH"):
        environment.delenv(name, raising=False)
    secrets = boto3.client("secretsmanager", region_name="eu-west-1")
    arn = secrets.create_secret(
        Name=f"ferry/dev/config-variables-{uuid.uuid4().hex[:8]}", SecretString="{}"
    )["ARN"]
    environment.setenv("FERRY_CONFIG_SECRET", arn)
    environment.setenv("FERRY_CONFIG_SECRET_VARIABLES", "SOURCE_METASTORE_URIS")
    runtime.context.cache_clear()

    context = SimpleNamespace(
        function_name="ferry-dev-freshness-check",
        memory_limit_in_mb=512,
        invoked_function_arn="arn:aws:lambda:eu-west-1:123456789012:function:x",
        aws_request_id="r-1",
    )
    result = freshness_check.handler({"configUris": ["s3://work/configs/a.yml"]}, context)

    assert (result["tables"], result["requests"], result["overRpo"]) == (0, 0, [])
    assert f"secret {arn} holds no value for SOURCE_METASTORE_URIS" in result["skipped"]
    metrics = boto3.client("cloudwatch", region_name="eu-west-1").list_metrics()["Metrics"]
    assert metrics == []
