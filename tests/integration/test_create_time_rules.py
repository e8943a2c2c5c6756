"""The local runtime refuses at deploy what AWS refuses at create time: a state machine
definition Step Functions would not accept, a name longer than its service allows. One line
names the state machine, the state and the field (or the resource and the limit); nothing
of the stack is created."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError

from ferry import statemachine
from ferry.local import stack
from ferry.local.template import TemplateError

pytestmark = pytest.mark.integration

REGION, ACCOUNT = "us-east-1", "123456789012"

TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "states.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}


def copy_batch_with_payload_twice() -> str:
    """The replication definition as it was: ``Payload.$`` beside ``Payload`` in Copy batch."""
    document = json.loads(statemachine.DEFINITION_PATH.read_text())
    batch = document["States"]["Replicate tables"]["ItemProcessor"]["States"][
        "S3 server-side copy"
    ]["ItemProcessor"]["States"]["Copy batch"]
    batch["Parameters"] = {
        "FunctionName": batch["Parameters"]["FunctionName"],
        "Payload.$": "$",
        **{k: v for k, v in batch["Parameters"].items() if k != "FunctionName"},
    }
    return json.dumps(document)


def template(unique: str, definition: str, **schedule: str) -> dict:
    """A role, then a state machine of ``definition`` (its placeholders substituted by the
    deploy, as the CDK's are); a schedule when its properties are given."""
    resources = {
        "Role": {
            "Type": "AWS::IAM::Role",
            "Properties": {"RoleName": f"role-{unique}", "AssumeRolePolicyDocument": TRUST},
        },
        "Machine": {
            "Type": "AWS::StepFunctions::StateMachine",
            "Properties": {
                "StateMachineName": f"machine-{unique}",
                "RoleArn": {"Fn::GetAtt": ["Role", "Arn"]},
                "DefinitionString": definition,
                "DefinitionSubstitutions": {
                    name: {"Fn::GetAtt": ["Role", "Arn"]}
                    for name in statemachine.placeholders(statemachine.DEFINITION_PATH)
                },
            },
        },
    }
    if schedule:
        resources["Schedule"] = {
            "Type": "AWS::Scheduler::Schedule",
            "Properties": {
                "ScheduleExpression": "rate(1 hour)",
                "FlexibleTimeWindow": {"Mode": "OFF"},
                "Target": {
                    "Arn": {"Ref": "Machine"},
                    "RoleArn": {"Fn::GetAtt": ["Role", "Arn"]},
                },
                **schedule,
            },
        }
    return {"Resources": resources}


def deploy(template_: dict, unique: str) -> dict:
    session = boto3.session.Session(region_name=REGION)
    return stack.Deployment(
        template_, f"Rules-{unique}", ACCOUNT, REGION, lambda s, r=None: session.client(s, r)
    ).deploy()


def nothing_created(aws, unique: str) -> None:
    roles = {r["RoleName"] for r in aws["iam"].list_roles()["Roles"]}
    machines = {m["name"] for m in aws["stepfunctions"].list_state_machines()["stateMachines"]}
    assert f"role-{unique}" not in roles
    assert f"machine-{unique}" not in machines


@pytest.fixture
def aws(local_runtime):
    return {
        service: boto3.client(service, region_name=REGION)
        for service in ("iam", "stepfunctions", "scheduler")
    }


def test_a_definition_with_a_field_twice_is_refused_by_the_deploy_and_nothing_is_created(
    aws, unique
):
    with pytest.raises(TemplateError) as refused:
        deploy(template(unique, copy_batch_with_payload_twice()), unique)
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith(f"state machine machine-{unique}: invalid definition: ")
    assert "'Copy batch'" in line and "Parameters.Payload" in line, line
    nothing_created(aws, unique)


def test_the_repositorys_definition_deploys_with_its_timeout(aws, unique):
    text = statemachine.DEFINITION_PATH.read_text()
    deploy(template(unique, text), unique)
    (machine,) = [
        m
        for m in aws["stepfunctions"].list_state_machines()["stateMachines"]
        if m["name"] == f"machine-{unique}"
    ]
    described = aws["stepfunctions"].describe_state_machine(
        stateMachineArn=machine["stateMachineArn"]
    )
    assert json.loads(described["definition"])["TimeoutSeconds"] == 24 * 3600


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda s: s["Replicate tables"]["ItemProcessor"]["States"]["Spark copy"]["Parameters"][
                "JobDriver"
            ]["SparkSubmit"].update(
                {"EntryPointArguments.$": "States.Array('--manifest', $.plan.manifestUri"}
            ),
            "state 'Replicate tables' > 'Spark copy': field "
            "Parameters.JobDriver.SparkSubmit.EntryPointArguments.$",
        ),
        (
            lambda s: s["Summarize"].update({"Resource": "arn:aws:states:::lambda:invoke.sync"}),
            "state 'Summarize': Resource arn:aws:states:::lambda:invoke.sync: "
            "lambda:invoke has no .sync integration",
        ),
        (
            lambda s: s["Resolve tables"]["ResultSelector"].update({"tables": 1}),
            "state 'Resolve tables': field ResultSelector.tables is given twice",
        ),
    ],
    ids=["intrinsic-function", "sync-resource", "result-selector-twice"],
)
def test_create_state_machine_refuses_what_step_functions_refuses(aws, unique, change, expected):
    """Whoever creates it (a test, the AWS CLI): the emulator's API answers InvalidDefinition."""
    document = json.loads(
        statemachine.render(
            {
                name: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:f"
                for name in statemachine.placeholders()
            }
        )
    )
    change(document["States"])
    role = aws["iam"].create_role(
        RoleName=f"sfn-{unique}", AssumeRolePolicyDocument=json.dumps(TRUST)
    )["Role"]["Arn"]
    with pytest.raises(ClientError) as refused:
        aws["stepfunctions"].create_state_machine(
            name=f"bad-{unique}", definition=json.dumps(document), roleArn=role
        )
    assert refused.value.response["Error"]["Code"] == "InvalidDefinition"
    assert expected in refused.value.response["Error"]["Message"]


def test_a_schedule_name_of_70_characters_is_refused_as_cloudformation_would(aws, unique):
    name = ("ferry-prod-" + "x" * 70)[:70]
    with pytest.raises(TemplateError) as refused:
        deploy(template(unique, statemachine.DEFINITION_PATH.read_text(), Name=name), unique)
    line = str(refused.value)
    assert line == (
        f"stack Rules-{unique}: resource Schedule: Name {name!r} has 70 characters; "
        "AWS::Scheduler::Schedule allows 1 to 64"
    )
    nothing_created(aws, unique)
    assert aws["scheduler"].list_schedules(NamePrefix="ferry-prod-x")["Schedules"] == []
