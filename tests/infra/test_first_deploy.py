"""What a first ``cdk deploy`` of each example environment needs, read from its template.

A review of the synthesized stacks once found that neither environment would come up, and
that the Spark copy, housekeeping and the alarms would fail on the first run: every one of
those passed the emulator, which enforces none of AWS's rules. These tests read the
template as AWS will: policies are resolved (``ferry.local.template.resolved_statically``) and
evaluated by the IAM policy simulator the local runtime uses (``ferry.local.simulator``),
with the resource's own policy where it has one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from ferry import statemachine as definition
from ferry.local.simulator import Request
from ferry.local.template import resolved_statically
from infra import bundling
from infra.network import NETWORK_INTERFACE_ACTIONS
from infra.settings import environment_names, load_environment
from infra.triggers import foreign_regions

pytestmark = pytest.mark.infra

ROOT = Path(__file__).resolve().parents[2]


def of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def role_policies(template: dict[str, Any], resolved, role_logical: str) -> list[dict]:
    """The identity policies a role gets from the template, resolved as AWS will."""
    found = []
    for policy in of_type(template, "AWS::IAM::Policy").values():
        roles = [r.get("Ref") for r in policy["Properties"].get("Roles", [])]
        if role_logical in roles:
            found.append(resolved.value(policy["Properties"]["PolicyDocument"]))
    return found


def role_of_function(template: dict[str, Any], name_suffix: str) -> str:
    for function in of_type(template, "AWS::Lambda::Function").values():
        if function["Properties"]["FunctionName"].endswith(name_suffix):
            return function["Properties"]["Role"]["Fn::GetAtt"][0]
    raise AssertionError(f"no function *{name_suffix}")


def default_key_policy(account: str) -> dict[str, Any]:
    """A KMS key's default policy: the account's IAM policies decide (KMS asks the key first)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Enable IAM User Permissions",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
                "Action": "kms:*",
                "Resource": "*",
            }
        ],
    }


def decide(simulator, template, resolved, role_logical, action, resource, context=None):
    stack_account = resolved.account
    role_name = resolved.refs[role_logical]
    return simulator.decide(
        Request(
            principal=f"arn:aws:sts::{stack_account}:assumed-role/{role_name}/session",
            action=action,
            resource=resource,
            resource_account=stack_account,
            identity_policies=tuple(role_policies(template, resolved, role_logical)),
            resource_policy=default_key_policy(stack_account) if ":kms:" in resource else None,
            context={"aws:SecureTransport": "true", **(context or {})},
        )
    ).decision


# -- 1. functions in a VPC can be created -----------------------------------------------------


def test_every_function_in_a_vpc_may_manage_its_network_interfaces(deployed, simulator):
    stack, template, resolved = deployed
    in_vpc = [
        f
        for f in of_type(template, "AWS::Lambda::Function").values()
        if "VpcConfig" in f["Properties"]
    ]
    assert stack.settings.network is not None and in_vpc, "the example environments use a VPC"
    for function in in_vpc:
        role = function["Properties"]["Role"]["Fn::GetAtt"][0]
        for action in NETWORK_INTERFACE_ACTIONS:
            assert decide(simulator, template, resolved, role, action, "*") == "Allowed", (
                function["Properties"]["FunctionName"],
                action,
            )
    # Functions outside the VPC get nothing of EC2.
    for function in of_type(template, "AWS::Lambda::Function").values():
        if "VpcConfig" not in function["Properties"]:
            role = function["Properties"]["Role"]["Fn::GetAtt"][0]
            assert (
                decide(simulator, template, resolved, role, "ec2:CreateNetworkInterface", "*")
                != "Allowed"
            )


# -- 2. a failed first deploy can be retried ---------------------------------------------------


def test_nothing_is_kept_when_the_first_create_fails(deployed):
    _, template, _ = deployed
    kept = {
        logical: resource["Type"]
        for logical, resource in template["Resources"].items()
        if resource.get("DeletionPolicy") == "Retain"
    }
    # RetainExceptOnCreate: kept on update and delete, removed by a failed first create.
    assert kept == {}
    for resource in of_type(template, "AWS::DynamoDB::Table").values():
        assert resource["DeletionPolicy"] == "RetainExceptOnCreate"
        # Deletion protection would stop a failed first create from rolling the table back.
        assert not resource["Properties"].get("DeletionProtectionEnabled")
    named = [
        r for r in template["Resources"].values()
        if r["Type"] in ("AWS::Logs::LogGroup", "AWS::SecretsManager::Secret", "AWS::DynamoDB::Table")
    ]  # fmt: skip
    assert named and all(r["DeletionPolicy"] == "RetainExceptOnCreate" for r in named)


# -- 3. alarms reach someone -------------------------------------------------------------------


def test_cloudwatch_may_publish_this_environments_alarms_and_nothing_else(deployed, simulator):
    stack, template, resolved = deployed
    region, account = stack.settings.region, stack.settings.account
    [(topic_logical, topic)] = [
        (k, r) for k, r in of_type(template, "AWS::SNS::Topic").items()
        if r["Properties"]["TopicName"].endswith("-operations")
    ]  # fmt: skip
    topic_arn = resolved.refs[topic_logical]
    [policy] = [
        resolved.value(p["Properties"]["PolicyDocument"])
        for p in of_type(template, "AWS::SNS::TopicPolicy").values()
        if p["Properties"]["Topics"] == [{"Ref": topic_logical}]
    ]
    alarms = [
        resolved.value(a["Properties"])
        for a in of_type(template, "AWS::CloudWatch::Alarm").values()
    ]
    assert alarms and all(a["AlarmActions"] == [topic_arn] for a in alarms)

    def publish(alarm_name: str, source_account: str = account) -> str:
        return simulator.decide(
            Request(
                principal="cloudwatch.amazonaws.com",
                action="sns:Publish",
                resource=topic_arn,
                resource_account=account,
                resource_policy=policy,
                context={
                    "aws:SecureTransport": "true",
                    "aws:SourceArn": f"arn:aws:cloudwatch:{region}:{source_account}:alarm:{alarm_name}",
                    "aws:SourceAccount": source_account,
                },
            )
        ).decision

    for alarm in alarms:
        assert publish(alarm["AlarmName"]) == "Allowed", alarm["AlarmName"]
    assert publish("someone-elses-alarm") != "Allowed"
    assert publish(alarms[0]["AlarmName"], "999999999999") != "Allowed"
    # The topic is encrypted: CloudWatch may use the environment's key for it.
    [key] = of_type(template, "AWS::KMS::Key").values()
    key_policy = resolved.value(key["Properties"]["KeyPolicy"])
    decision = simulator.decide(
        Request(
            principal="cloudwatch.amazonaws.com",
            action="kms:GenerateDataKey",
            resource=f"arn:aws:kms:{region}:{account}:key/k",
            resource_account=account,
            resource_policy=key_policy,
            context={"aws:SourceAccount": account},
        )
    )
    assert decision.decision == "Allowed"


# -- 5. housekeeping may write its report --------------------------------------------------------


def test_housekeeping_may_write_its_report_where_it_writes_it(deployed, simulator):
    stack, template, resolved = deployed
    role = role_of_function(template, "-housekeeping")
    work = next(
        resolved.refs[k] for k, r in of_type(template, "AWS::S3::Bucket").items()
        if "WorkBucket" in k
    )  # fmt: skip
    report = f"arn:aws:s3:::{work}/housekeeping/ferry-20261121t083000000z-1a2b3c4d.json"
    assert decide(simulator, template, resolved, role, "s3:PutObject", report) == "Allowed"
    # and it may not write the runs' files of other steps
    assert (
        decide(
            simulator,
            template,
            resolved,
            role,
            "s3:PutObject",
            f"arn:aws:s3:::{work}/configs/x.yml",
        )
        != "Allowed"
    )


# -- 6. payloads: the Distributed Maps write their results to S3 ---------------------------------


def test_every_distributed_map_writes_its_results_to_s3_and_the_role_may(deployed, simulator):
    stack, template, resolved = deployed
    document = json.loads(definition.DEFINITION_PATH.read_text())
    maps = {
        name: state for name, state in definition.states(document).items()
        if state["Type"] == "Map"
    }  # fmt: skip
    assert set(maps) == {"Replicate tables", "S3 server-side copy"}
    for name, state in maps.items():
        assert state["ItemProcessor"]["ProcessorConfig"]["Mode"] == "DISTRIBUTED", name
        assert state["ResultWriter"]["Resource"] == "arn:aws:states:::s3:putObject", name
    [(machine_logical, machine)] = [
        (k, r) for k, r in of_type(template, "AWS::StepFunctions::StateMachine").items()
        if r["Properties"]["StateMachineName"].endswith("-replication")
    ]  # fmt: skip
    role = machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    work = next(
        resolved.refs[k] for k, r in of_type(template, "AWS::S3::Bucket").items()
        if "WorkBucket" in k
    )  # fmt: skip
    results = f"arn:aws:s3:::{work}/runs/run-ferry-x/results/map-run/SUCCEEDED_0.json"
    for action in ("s3:PutObject", "s3:GetObject"):
        assert decide(simulator, template, resolved, role, action, results) == "Allowed", action


def test_an_unknown_copier_fails_the_table_with_a_named_error():
    document = json.loads(definition.DEFINITION_PATH.read_text())
    states = definition.states(document)
    default = states["Choose copier"]["Default"]
    # The Default sets $.error (Abort needs it) before it goes to Abort table.
    assert states[default]["ResultPath"] == "$.error"
    assert states[default]["Result"]["Error"] == "UnknownCopierError"


# -- 7. triggers that fail are alarmed on; no alarm on retried errors ------------------------------


def test_failed_triggers_are_alarmed_on_and_retried_function_errors_are_not(deployed):
    stack, template, resolved = deployed
    alarms = {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in of_type(template, "AWS::CloudWatch::Alarm").values()
    }
    name = stack.settings.name
    assert f"ferry-{name}-schedule-failed" in alarms
    schedules = alarms[f"ferry-{name}-schedule-failed"]
    metrics = {
        m["MetricStat"]["Metric"]["MetricName"] for m in schedules["Metrics"] if "MetricStat" in m
    }
    assert metrics == {"TargetErrorCount", "InvocationDroppedCount"}
    rules = of_type(template, "AWS::Events::Rule")
    trigger_alarms = [a for n, a in alarms.items() if n.startswith(f"ferry-{name}-trigger-failed-")]
    assert len(trigger_alarms) == len(rules)
    assert {a["MetricName"] for a in trigger_alarms} <= {"FailedInvocations"}
    # A function's Errors count every attempt Step Functions retries: not an alarm of the
    # functions the state machines run. The ones a rule or a schedule starts fail no
    # execution: theirs are (tests/infra/test_dead_letters.py).
    from ferry.statemachine import OUT_OF_BAND_FUNCTIONS
    from infra.functions import kebab

    assert {n for n, a in alarms.items() if a.get("MetricName") == "Errors"} == {
        f"ferry-{name}-{kebab(function)}-errors" for function in OUT_OF_BAND_FUNCTIONS
    }
    # Every schedule is in the environment's group, whose metrics the alarm reads.
    [group] = of_type(template, "AWS::Scheduler::ScheduleGroup").values()
    assert group["Properties"]["Name"] == f"ferry-{name}"
    schedules = of_type(template, "AWS::Scheduler::Schedule").values()
    assert schedules and all(s["Properties"]["GroupName"] == f"ferry-{name}" for s in schedules)


# -- 8. first-run traps ------------------------------------------------------------------------


def test_the_readme_bootstraps_every_region_the_app_deploys_to():
    readme = (ROOT / "README.md").read_text()
    for name in environment_names():
        settings = load_environment(name)
        for region in {settings.region, *foreign_regions(settings)}:
            assert re.search(rf"bootstrap\b[^\n]*aws://{settings.account}/{region}\b", readme), (
                f"README: no bootstrap of {settings.account}/{region} ({name})"
            )


def test_the_secret_is_the_same_resource_whatever_the_secret_variables():
    """A redeploy that changes ``secret-variables`` changes nothing CloudFormation would write
    into the secret: its value stays the operator's (``infra/state.py``)."""
    from tests.infra.stacks import synthesized

    settings = load_environment("dev")
    declared = dict(settings.secret_variables)  # what the configs need
    first = synthesized(settings)
    second = synthesized(
        settings.model_copy(update={"secret_variables": {**declared, "B_PASSWORD": "y"}})
    )
    [before] = of_type(first, "AWS::SecretsManager::Secret").values()
    [after] = of_type(second, "AWS::SecretsManager::Secret").values()
    assert before == after
    assert "GenerateSecretString" not in after["Properties"]
    assert json.loads(after["Properties"]["SecretString"]) == {}
    # The names the secret must hold: the stack's output and the functions' environment.
    names = ",".join(sorted([*declared, "B_PASSWORD"]))
    assert second["Outputs"]["ConfigSecretVariables"]["Value"] == names
    for function in of_type(second, "AWS::Lambda::Function").values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables["FERRY_CONFIG_SECRET_VARIABLES"] == names


def test_kms_keys_of_the_data_are_granted_through_s3_only(stacks, simulator):
    from aws_cdk import App

    from infra.stack import FerryStack

    settings = load_environment("dev").model_copy(
        update={
            "write_kms_keys": ["arn:aws:kms:eu-west-1:111111111111:key/replica-key"],
            "replications": [
                replication.model_copy(
                    update={"read_kms_keys": ["arn:aws:kms:eu-west-1:111111111111:key/source-key"]}
                )
                for replication in load_environment("dev").replications
            ],
        }
    )
    stack = FerryStack(App(), "Ferry-dev", settings=settings)
    template = Template.from_stack(stack).to_json()
    resolved = resolved_statically(template, "Ferry-dev", "111111111111", "eu-west-1")
    via_s3 = {"kms:ViaService": "s3.eu-west-1.amazonaws.com"}
    source, replica = (
        f"arn:aws:kms:eu-west-1:111111111111:key/{k}" for k in ("source-key", "replica-key")
    )
    copy = role_of_function(template, "-inline-copy")
    plan = role_of_function(template, "-plan")
    spark = next(k for k in of_type(template, "AWS::IAM::Role") if "JobRole" in k)
    for role in (copy, spark):
        assert (
            decide(simulator, template, resolved, role, "kms:Decrypt", source, via_s3) == "Allowed"
        )
        assert (
            decide(simulator, template, resolved, role, "kms:GenerateDataKey", replica, via_s3)
            == "Allowed"
        )
        # not with the key directly, and not to write with the source's key
        assert decide(simulator, template, resolved, role, "kms:Decrypt", source) != "Allowed"
        assert (
            decide(simulator, template, resolved, role, "kms:GenerateDataKey", source, via_s3)
            != "Allowed"
        )
    assert decide(simulator, template, resolved, plan, "kms:Decrypt", source, via_s3) == "Allowed"
    # Plan only reads: it writes nothing below a replica, with no key.
    for key in (replica, source):
        assert (
            decide(simulator, template, resolved, plan, "kms:GenerateDataKey", key, via_s3)
            != "Allowed"
        )
    # Commit writes an Iceberg replica's manifest lists and metadata.json
    # (ferry/iceberg/pipeline.py): with the replica's key, through S3 only; never the source's.
    commit = role_of_function(template, "-commit")
    assert (
        decide(simulator, template, resolved, commit, "kms:GenerateDataKey", replica, via_s3)
        == "Allowed"
    )
    assert (
        decide(simulator, template, resolved, commit, "kms:GenerateDataKey", replica) != "Allowed"
    )
    assert (
        decide(simulator, template, resolved, commit, "kms:GenerateDataKey", source, via_s3)
        != "Allowed"
    )


# -- 9. one Python ------------------------------------------------------------------------------


def test_the_suite_the_functions_and_the_spark_job_run_one_python():
    import sys

    lambda_python = tuple(
        int(p) for p in bundling.LAMBDA_RUNTIME.name.removeprefix("python").split(".")
    )
    assert lambda_python == bundling.EMR_PYTHON_VERSION == sys.version_info[:2]


def test_the_runbook_names_every_resource_a_destroy_keeps_under_a_name(deployed, app):
    """What ``cdk destroy`` keeps under a fixed name blocks the next deploy: the README's
    runbook ("Destroy, and deploy again") names each, with what to do — of the environment's
    stack and of its forwarding stacks in other regions."""
    from fnmatch import fnmatch

    from aws_cdk import Stack
    from aws_cdk.assertions import Template

    stack, _, _ = deployed
    readme = (ROOT / "README.md").read_text()
    runbook = readme[readme.index("### Destroy, and deploy again") :]
    runbook = runbook[: runbook.index("\n## ")]
    named = re.findall(r"`([^`]+)`", runbook)
    name = stack.settings.name
    templates = [
        Template.from_stack(child).to_json()
        for child in app.node.children
        if isinstance(child, Stack) and child.stack_name.startswith(stack.stack_name)
    ]
    assert len(templates) >= 1
    kept = []
    for template in templates:
        for resource in template["Resources"].values():
            if resource.get("DeletionPolicy", "Delete") == "Delete":
                continue
            properties = resource.get("Properties", {})
            for key in ("TableName", "Name", "LogGroupName", "BucketName", "AliasName",
                        "QueueName"):  # fmt: skip
                if isinstance(properties.get(key), str):
                    kept.append(properties[key].replace(name, "<env>"))
    assert any("dead-letters" in physical for physical in kept)
    for physical in kept:
        assert any(fnmatch(physical, pattern) for pattern in named), physical
    assert "Networking across regions" in readme and "NAT" in readme
