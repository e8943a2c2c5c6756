"""Every example environment synthesizes into the pipeline the local runtime runs.

The templates are read back (``aws_cdk.assertions.Template``) and checked against their
sources: the ASL files, ``ferry/statemachine``'s functions, the configs' triggers
(``ferry.feeds.trigger_events``), and the environment's settings for every IAM grant.
"""

from __future__ import annotations

import json
import re

import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Template

from ferry import statemachine as definition
from ferry.feeds import trigger_events
from infra import bundling
from infra.network import NETWORK_INTERFACE_ACTIONS
from infra.settings import environment_names
from infra.triggers import housekeeping_input

pytestmark = pytest.mark.infra

ENVIRONMENTS = environment_names()


def test_the_repository_has_example_environments():
    assert len(ENVIRONMENTS) >= 2


@pytest.fixture(scope="module", params=ENVIRONMENTS)
def deployed(request, stacks):
    stack = stacks[request.param]
    return stack, Template.from_stack(stack)


def resources(template: Template, kind: str) -> dict[str, dict]:
    return template.find_resources(kind)


def machine(template: Template, name_suffix: str) -> tuple[str, dict]:
    for logical_id, resource in resources(template, "AWS::StepFunctions::StateMachine").items():
        if resource["Properties"]["StateMachineName"].endswith(name_suffix):
            return logical_id, resource["Properties"]
    raise AssertionError(f"no state machine *{name_suffix}")


@pytest.mark.parametrize(
    "suffix, path",
    [("-replication", definition.DEFINITION_PATH), ("-housekeeping", definition.HOUSEKEEPING_PATH)],
)
def test_state_machine_deploys_the_asl_file_with_substitutions(deployed, suffix, path):
    stack, template = deployed
    _, properties = machine(template, suffix)
    assert json.loads(properties["DefinitionString"]) == json.loads(path.read_text())
    assert set(properties["DefinitionSubstitutions"]) == definition.placeholders(path)
    functions = resources(template, "AWS::Lambda::Function")
    for placeholder, value in properties["DefinitionSubstitutions"].items():
        if not placeholder.endswith("FunctionArn"):
            continue
        name = placeholder.removesuffix("FunctionArn")
        logical_id, attribute = value["Fn::GetAtt"]
        assert attribute == "Arn"
        function = functions[logical_id]["Properties"]
        assert function["Handler"] == definition.ALL_FUNCTIONS[name]
        assert function["Runtime"] == bundling.LAMBDA_RUNTIME.name
        assert function["TracingConfig"] == {"Mode": "Active"}


def test_every_function_of_the_definitions_exists_once(deployed):
    _, template = deployed
    handlers = sorted(
        r["Properties"]["Handler"] for r in resources(template, "AWS::Lambda::Function").values()
    )
    assert handlers == sorted(definition.ALL_FUNCTIONS.values())


def test_spark_application_and_its_job(deployed):
    stack, template = deployed
    _, properties = machine(template, "-replication")
    ((application_id, application),) = resources(
        template, "AWS::EMRServerless::Application"
    ).items()
    settings = stack.settings
    assert application["Properties"]["ReleaseLabel"] == bundling.EMR_RELEASE_LABEL
    assert application["Properties"]["MaximumCapacity"] == {
        "Cpu": f"{settings.spark.maximum_vcpu} vCPU",
        "Memory": f"{settings.spark.maximum_memory_gb} GB",
        "Disk": f"{settings.spark.maximum_disk_gb} GB",
    }
    assert application["Properties"]["AutoStopConfiguration"] == {
        "Enabled": True, "IdleTimeoutMinutes": settings.spark.idle_timeout_minutes,
    }  # fmt: skip
    if settings.network:
        assert application["Properties"]["NetworkConfiguration"]["SubnetIds"] == (
            settings.network.subnet_ids
        )
    values = properties["DefinitionSubstitutions"]
    assert values["SparkApplicationId"] == {"Fn::GetAtt": [application_id, "ApplicationId"]}
    assert "spark.archives=" in json.dumps(values["SparkSubmitParameters"])


def _literal(stack: Stack, value) -> str:
    resolved = stack.resolve(value)
    assert isinstance(resolved, str), f"expected a literal, got {resolved}"
    return resolved


def test_each_declared_schedule_starts_the_replication_with_its_input(deployed):
    stack, template = deployed
    replication_id, _ = machine(template, "-replication")
    housekeeping_id, _ = machine(template, "-housekeeping")
    schedules = {
        r["Properties"]["Name"]: r["Properties"]
        for r in resources(template, "AWS::Scheduler::Schedule").values()
    }
    expected = 0
    for path, config in stack.settings.configs.items():
        uri = _literal(stack, stack.configs.uri(path))
        if config.triggers.schedule:
            expected += 1
            schedule = schedules[f"ferry-{stack.settings.name}-{path.stem}"]
            zone = config.triggers.schedule.time_zone
            assert schedule["ScheduleExpression"] == config.triggers.schedule.expression
            assert schedule["ScheduleExpressionTimezone"] == zone
            assert schedule["Target"]["Arn"] == {"Ref": replication_id}
            assert json.loads(schedule["Target"]["Input"]) == trigger_events.scheduled_input(
                uri, config.triggers.schedule
            )
        if config.triggers.catalog_events and config.source_catalog.glue is None:
            expected += 1  # the Hive poller's (tests/infra/test_catalog_events.py)
            poller = schedules[f"ferry-{stack.settings.name}-{path.stem}-catalog-poller"]
            assert json.loads(poller["Target"]["Input"]) == trigger_events.poller_input(uri)
        housekeeping = schedules[f"ferry-{stack.settings.name}-{path.stem}-housekeeping"]
        expected += 1
        assert housekeeping["ScheduleExpression"] == stack.settings.housekeeping_schedule
        assert housekeeping["Target"]["Arn"] == {"Ref": housekeeping_id}
        assert json.loads(housekeeping["Target"]["Input"]) == housekeeping_input(uri)
    expected += 1  # the freshness check's, of every config (tests/infra/test_freshness.py)
    assert len(schedules) == expected


def test_each_declared_s3_trigger_is_a_rule_with_the_local_pattern_and_input(deployed):
    stack, template = deployed
    replication_id, _ = machine(template, "-replication")
    rules = [
        r for r in resources(template, "AWS::Events::Rule").values()
        if r["Properties"]["EventPattern"]["source"] == ["aws.s3"]
    ]  # fmt: skip
    declared = [
        (path, trigger)
        for path, config in stack.settings.configs.items()
        for trigger in config.triggers.s3
    ]
    assert len(rules) == len(declared) > 0
    for (path, trigger), rule in zip(declared, rules, strict=True):
        properties = rule["Properties"]
        assert properties["EventPattern"] == trigger_events.s3_event_pattern(trigger)
        (target,) = properties["Targets"]
        assert target["Arn"] == {"Ref": replication_id}
        transformer = target["InputTransformer"]
        assert transformer["InputPathsMap"] == trigger_events.S3_INPUT_PATHS
        uri = _literal(stack, stack.configs.uri(path))
        assert transformer["InputTemplate"] == trigger_events.s3_input_template(uri)


def test_buckets_in_other_regions_forward_their_events(app, stacks):
    from infra.forwarding import EventForwarding
    from infra.triggers import foreign_regions

    forwarders = [c for c in app.node.children if isinstance(c, EventForwarding)]
    expected = {
        (stack.settings.name, trigger.region)
        for stack in stacks.values()
        for config in stack.settings.configs.values()
        for trigger in config.triggers.s3
        if trigger.region and trigger.region != stack.settings.region
    }
    assert expected, "an example environment should show the cross-region path"
    assert {(f.node.id.split("-")[1], f.region) for f in forwarders} == expected
    for forwarder in forwarders:
        name = forwarder.node.id.split("-")[1]
        region = stacks[name].settings.region
        rules = Template.from_stack(forwarder).find_resources("AWS::Events::Rule").values()
        # An S3 trigger's pattern (and a Glue source's: tests/infra/test_catalog_events.py)
        assert len(rules) == len(foreign_regions(stacks[name].settings)[forwarder.region])
        for rule in rules:
            (target,) = rule["Properties"]["Targets"]
            assert target["Arn"] == (
                f"arn:aws:events:{region}:{forwarder.account}:event-bus/default"
            )


# -- least privilege -------------------------------------------------------------------------

#: Wildcards the services require, each with its reason; nothing else may have one.
ALLOWED_WILDCARDS = {
    ("xray:PutTraceSegments", "*"): "X-Ray has no resource-level permissions",
    ("xray:PutTelemetryRecords", "*"): "X-Ray has no resource-level permissions",
    ("xray:GetSamplingRules", "*"): "X-Ray has no resource-level permissions",
    ("xray:GetSamplingTargets", "*"): "X-Ray has no resource-level permissions",
    ("logs:CreateLogDelivery", "*"): "CloudWatch Logs' vended-log delivery is account-wide",
    ("logs:GetLogDelivery", "*"): "CloudWatch Logs' vended-log delivery is account-wide",
    ("logs:UpdateLogDelivery", "*"): "CloudWatch Logs' vended-log delivery is account-wide",
    ("logs:DeleteLogDelivery", "*"): "CloudWatch Logs' vended-log delivery is account-wide",
    ("logs:ListLogDeliveries", "*"): "CloudWatch Logs' vended-log delivery is account-wide",
    ("logs:PutResourcePolicy", "*"): "CloudWatch Logs' vended-log delivery is account-wide",
    ("logs:DescribeResourcePolicies", "*"): "CloudWatch Logs' vended-log delivery is account-wide",
    ("logs:DescribeLogGroups", "*"): "CloudWatch Logs' vended-log delivery is account-wide",
    # The freshness check's metrics: in the namespace Ferry only (tests/infra/test_freshness.py).
    ("cloudwatch:PutMetricData", "*"): "CloudWatch authorizes metric data on * only",
    **{
        (action, "*"): "a VPC function's network interfaces, which Lambda creates and names"
        for action in NETWORK_INTERFACE_ACTIONS
    },
}


def statements(template: Template):
    for resource in resources(template, "AWS::IAM::Policy").values():
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            for action in [actions] if isinstance(actions, str) else actions:
                targets = statement["Resource"]
                for target in [targets] if not isinstance(targets, list) else targets:
                    yield action, target, statement


def test_no_wildcard_action_or_resource_without_a_reason(deployed):
    _, template = deployed
    for action, target, _ in statements(template):
        if (action, _text(target)) in ALLOWED_WILDCARDS:
            continue
        assert "*" not in action, f"wildcard action {action}"
        assert target != "*", f"{action} on every resource"


def _text(target) -> str:
    return target if isinstance(target, str) else json.dumps(target)


def test_data_grants_name_only_configured_locations(deployed):
    stack, template = deployed
    settings = stack.settings
    read = [r for replication in settings.replications for r in replication.read_locations]
    allowed = {
        re.sub(r"^s3://", "arn:aws:s3:::", location).rstrip("/") + "/*"
        for location in (*read, *settings.write_locations)
    }
    # Failback's reverse run writes the sources only where the settings' failback says.
    failback = settings.failback.write_locations if settings.failback else []
    writes = {
        "arn:aws:s3:::" + w.removeprefix("s3://").rstrip("/") + "/*"
        for w in (*settings.write_locations, *failback)
    }
    # The failover reads an Iceberg replica's metadata below the write locations, only it.
    allowed |= {w.removesuffix("/*") + "/*/metadata/*" for w in writes}
    allowed |= writes
    for action, target, _ in statements(template):
        text = _text(target)
        if action in ("s3:PutObject", "s3:DeleteObject") and "arn:aws:s3:::" in text:
            assert text in writes, f"{action} outside the write locations: {text}"
        if action == "s3:GetObject" and text.startswith("arn:aws:s3:::"):
            assert text in allowed, f"read outside the configured locations: {text}"


def test_glue_grants_name_the_configured_databases(deployed):
    stack, template = deployed
    databases, replicas = set(), set()
    for config in stack.settings.configs.values():
        for replication in config.table_replications:
            databases |= {replication.source_table.database_name, replication.replica_database}
            replicas.add(f":table/{replication.replica_qualified_name.replace('.', '/')}")
    for action, target, _ in statements(template):
        if action.startswith("glue:"):
            text = _text(target)
            assert (
                text.endswith(":catalog")
                or any(text.endswith((f":database/{d}", f":table/{d}/*")) for d in databases)
                or text.endswith(tuple(replicas))  # the failover's, one replica table each
            ), text


def test_every_store_is_encrypted_with_the_environment_key(deployed):
    _, template = deployed
    (key_id,) = resources(template, "AWS::KMS::Key")
    key_arn = {"Fn::GetAtt": [key_id, "Arn"]}
    buckets = resources(template, "AWS::S3::Bucket")
    for bucket in buckets.values():
        encryption = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert encryption[0]["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in (
            "aws:kms",
            "AES256",
        )
    assert any(
        b["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
            "ServerSideEncryptionByDefault"
        ].get("KMSMasterKeyID")
        == key_arn
        for b in buckets.values()
    )
    for topic in resources(template, "AWS::SNS::Topic").values():
        assert topic["Properties"]["KmsMasterKeyId"] == key_arn
    for table in resources(template, "AWS::DynamoDB::Table").values():
        assert table["Properties"]["SSESpecification"]["KMSMasterKeyId"] == key_arn
    for group in resources(template, "AWS::Logs::LogGroup").values():
        assert group["Properties"]["KmsKeyId"] == key_arn
    for secret in resources(template, "AWS::SecretsManager::Secret").values():
        assert secret["Properties"]["KmsKeyId"] == key_arn
    for queue in resources(template, "AWS::SQS::Queue").values():
        assert queue["Properties"]["KmsMasterKeyId"] == key_arn


def test_alarms_on_sums_of_sparse_metrics_fill_each_one(deployed):
    """The services publish a failure's metric only when it happens: in CloudWatch's metric
    math a period where one of two added metrics has no datapoint has no sum, so an alarm
    adding them would stay OK unless both failed at once. Each term is FILLed with 0."""
    _, template = deployed
    math_alarms = [
        a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
        if "Metrics" in a["Properties"]
    ]
    assert math_alarms  # the change windows' and the schedules' at least
    for alarm in math_alarms:
        queries = [q["Id"] for q in alarm["Metrics"] if "MetricStat" in q]
        [expression] = [q["Expression"] for q in alarm["Metrics"] if "Expression" in q]
        for query in queries:
            assert f"FILL({query}, 0)" in expression, (alarm["AlarmName"], expression)


def test_operations_log_group_alarms_and_dashboard(deployed):
    stack, template = deployed
    _, properties = machine(template, "-replication")
    assert properties["LoggingConfiguration"]["Level"] == "ALL"
    assert properties["TracingConfiguration"] == {"Enabled": True}
    alarms = {
        a["Properties"]["AlarmName"] for a in resources(template, "AWS::CloudWatch::Alarm").values()
    }
    name = stack.settings.name
    assert {
        f"ferry-{name}-replication-failed", f"ferry-{name}-replication-timed-out",
        f"ferry-{name}-catalog-changes-failed", f"ferry-{name}-tables-failed",
    } <= alarms  # fmt: skip
    # One per state machine outcome (the change windows' failed or timed out in one), one on
    # the failed tables, one for the schedules, one per rule (an S3 trigger's, a Glue source's catalog events); the
    # errors and the dead letters of each function a rule or a schedule starts, and the
    # triggers' dead letters (tests/infra/test_dead_letters.py); the RPO's
    # (tests/infra/test_freshness.py).
    rules = resources(template, "AWS::Events::Rule")
    assert len(alarms) == 6 + len(rules) + 2 * len(definition.OUT_OF_BAND_FUNCTIONS) + 1 + 1
    # The failed tables of every run: Summarize's count, with no table dimension.
    [tables_failed] = [
        a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == f"ferry-{name}-tables-failed"
    ]
    assert (tables_failed["Namespace"], tables_failed["MetricName"]) == ("Ferry", "TablesFailed")
    assert tables_failed["Dimensions"] == [{"Name": "service", "Value": "ferry"}]
    assert (tables_failed["Statistic"], tables_failed["Threshold"]) == ("Sum", 1)
    (dashboard,) = resources(template, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric in (
        "TablesFailed",
        "BytesReplicated",
        "FilesReplicated",
        "IcebergSnapshotsReplicated",
        "ReplicationSeconds",
        "ReplicationLagSeconds",
        # the catalog change feeds' counts, and the lag's percentiles
        "ChangeWindowsOpened",
        "CatalogChangesIgnored",
        "NotificationEventsRead",
        "NotificationLogGaps",
    ):
        assert metric in body
    assert "'p50'" in body and "'p95'" in body
