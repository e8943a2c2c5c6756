"""The stack's compute resources, created in the emulator (``ferry.local.stack``): the Lambda
functions (their handlers run from the checkout), their permissions and asynchronous
invocation settings, the EMR Serverless application, the state machines with their
definition substitutions."""

from __future__ import annotations

import io
import json
import re
import zipfile
from typing import Any

from ferry.local.stack_context import Creator, StackContext
from ferry.local.template import TemplateError


def placeholder_code() -> bytes:
    """A function's code in the emulator: the handlers run from this checkout instead."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "Ferry local runtime: handlers run from the checkout.\n")
    return buffer.getvalue()


def function(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    awslambda = stack.client("lambda")
    name = properties.get("FunctionName") or stack.name(logical, limit=64)
    settings = {
        "Runtime": properties["Runtime"],
        "Role": properties["Role"],
        "Handler": properties["Handler"],
        "Timeout": int(properties.get("Timeout", 3)),
        "MemorySize": int(properties.get("MemorySize", 128)),
        "Environment": {"Variables": properties.get("Environment", {}).get("Variables", {})},
        "Description": properties.get("Description", ""),
    }
    try:
        awslambda.get_function(FunctionName=name)
        arn = awslambda.update_function_configuration(FunctionName=name, **settings)["FunctionArn"]
    except awslambda.exceptions.ResourceNotFoundException:
        arn = awslambda.create_function(
            FunctionName=name, Code={"ZipFile": placeholder_code()}, **settings
        )["FunctionArn"]
    stack.functions[logical] = {"name": name, "arn": arn, **settings}
    stack.set(logical, name, Arn=arn)


def permission(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    """A statement of a function's resource-based policy (an EventBridge rule's target's:
    the emulator invokes a rule's function only when it allows the rule)."""
    awslambda = stack.client("lambda")
    function = properties["FunctionName"]
    try:  # a redeploy replaces the statement, as CloudFormation's update does
        awslambda.remove_permission(FunctionName=function, StatementId=logical)
    except awslambda.exceptions.ResourceNotFoundException:
        pass
    arguments = {
        "FunctionName": function,
        "StatementId": logical,
        "Action": properties["Action"],
        "Principal": properties["Principal"],
    }
    for key in ("SourceArn", "SourceAccount"):
        if properties.get(key):
            arguments[key] = properties[key]
    awslambda.add_permission(**arguments)
    stack.set(logical, logical)


def event_invoke_config(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    """What Lambda does with a failed asynchronous invocation of the function: its retries
    and its on-failure destination (``ferry.local.emulator_lambda`` follows them)."""
    config: dict[str, Any] = {
        key: int(properties[key])
        for key in ("MaximumRetryAttempts", "MaximumEventAgeInSeconds")
        if key in properties
    }
    if properties.get("DestinationConfig"):
        config["DestinationConfig"] = properties["DestinationConfig"]
    awslambda = stack.client("lambda")
    try:  # a redeploy replaces the configuration
        awslambda.delete_function_event_invoke_config(FunctionName=properties["FunctionName"])
    except awslambda.exceptions.ResourceNotFoundException:
        pass
    awslambda.put_function_event_invoke_config(
        FunctionName=properties["FunctionName"],
        Qualifier=properties.get("Qualifier", "$LATEST"),
        **config,
    )
    stack.set(logical, logical)


def emr_serverless_application(
    stack: StackContext, logical: str, properties: dict[str, Any]
) -> None:
    emr = stack.client("emr-serverless")
    name = properties.get("Name") or stack.name(logical)
    for application in emr.list_applications()["applications"]:
        if application["name"] == name and application["state"] != "TERMINATED":
            identifier, arn = application["id"], application["arn"]
            break
    else:
        created = emr.create_application(
            name=name,
            releaseLabel=properties["ReleaseLabel"],
            type=properties["Type"],
            **(
                {"architecture": properties["Architecture"]} if "Architecture" in properties else {}
            ),
        )
        identifier, arn = created["applicationId"], created["arn"]
    stack.set(logical, identifier, ApplicationId=identifier, Arn=arn)


def state_machine(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    sfn = stack.client("stepfunctions")
    name = properties.get("StateMachineName") or stack.name(logical, limit=80)
    definition = properties.get("DefinitionString")
    if definition is None:
        definition = json.dumps(properties["Definition"])
    for placeholder, value in (properties.get("DefinitionSubstitutions") or {}).items():
        definition = definition.replace("${" + placeholder + "}", str(value))
    leftover = re.findall(r"\$\{([A-Za-z0-9]+)\}", definition)
    if leftover:
        raise TemplateError(f"state machine {name}: no substitution for {sorted(set(leftover))}")
    for machine in sfn.list_state_machines()["stateMachines"]:
        if machine["name"] == name:
            arn = machine["stateMachineArn"]
            sfn.update_state_machine(
                stateMachineArn=arn, definition=definition, roleArn=properties["RoleArn"]
            )
            break
    else:
        arn = sfn.create_state_machine(
            name=name, definition=definition, roleArn=properties["RoleArn"]
        )["stateMachineArn"]
    stack.set(logical, arn, Arn=arn, Name=name)


#: The creator of each resource type of this module, by CloudFormation type.
CREATORS: dict[str, Creator] = {
    "AWS::Lambda::Function": function,
    "AWS::Lambda::Permission": permission,
    "AWS::Lambda::EventInvokeConfig": event_invoke_config,
    "AWS::EMRServerless::Application": emr_serverless_application,
    "AWS::StepFunctions::StateMachine": state_machine,
}
