"""A CloudFormation template read as CloudFormation reads it.

Intrinsic functions resolved (``Ref``, ``Fn::GetAtt``, ``Fn::Join``, ``Fn::Sub``,
``Fn::Select``, ``Fn::Split``), resources ordered so each comes after what it refers to, and
stable stand-ins for the names CloudFormation would generate. ``ferry.local.stack`` deploys a
template with it; tests read a synthesized policy as AWS will (``resolved_statically``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from ferry.core.errors import LocalRuntimeError


class TemplateError(LocalRuntimeError):
    """The template holds something the local runtime cannot deploy (one line)."""


@dataclass
class Resolved:
    """What the deployment knows of each resource: ``Ref`` and ``Fn::GetAtt`` values."""

    account: str
    region: str
    stack_name: str
    refs: dict[str, Any] = field(default_factory=dict)
    attributes: dict[tuple[str, str], Any] = field(default_factory=dict)

    def pseudo(self, name: str) -> str:
        values = {
            "AWS::AccountId": self.account,
            "AWS::Region": self.region,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": self.stack_name,
            "AWS::NoValue": None,
        }
        if name not in values:
            raise TemplateError(f"pseudo parameter {name} is not known to the local runtime")
        return values[name]  # type: ignore[return-value]

    def value(self, node: Any) -> Any:
        """``node`` with every intrinsic function resolved."""
        if isinstance(node, list):
            return [self.value(item) for item in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, argument),) = node.items()
            if key == "Ref":
                if argument.startswith("AWS::"):
                    return self.pseudo(argument)
                if argument not in self.refs:
                    raise TemplateError(f"Ref {argument}: not deployed (yet)")
                return self.refs[argument]
            if key == "Fn::GetAtt":
                logical, attribute = (
                    argument if isinstance(argument, list) else argument.split(".", 1)
                )
                if (logical, attribute) not in self.attributes:
                    raise TemplateError(f"Fn::GetAtt {logical}.{attribute}: not known")
                return self.attributes[(logical, attribute)]
            if key == "Fn::Join":
                separator, items = argument
                return separator.join(str(item) for item in self.value(items))
            if key == "Fn::Select":
                index, items = argument
                return self.value(items)[int(self.value(index))]
            if key == "Fn::Split":
                separator, text = argument
                return str(self.value(text)).split(separator)
            if key == "Fn::Sub":
                return self._sub(argument)
            if key.startswith("Fn::"):
                raise TemplateError(f"{key} is not known to the local runtime")
        return {key: self.value(item) for key, item in node.items()}

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        values = {name: self.value(value) for name, value in variables.items()}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in values:
                return str(values[name])
            if name.startswith("AWS::"):
                return str(self.pseudo(name))
            if "." in name:
                logical, attribute = name.split(".", 1)
                return str(self.attributes[(logical, attribute)])
            return str(self.refs[name])

        return re.sub(r"\$\{([^}]+)\}", replace, text)


#: How each resource type is named and addressed, to resolve a template without deploying it:
#: (what ``Ref`` gives, and the ARN pattern of ``Fn::GetAtt ... Arn``).
_ARN = "arn:aws:{service}:{region}:{account}:"
_STATIC: dict[str, tuple[str, str]] = {
    "AWS::IAM::Role": ("{name}", "arn:aws:iam::{account}:role/{name}"),
    "AWS::IAM::Policy": ("{name}", ""),
    "AWS::S3::Bucket": ("{lower}", "arn:aws:s3:::{lower}"),
    "AWS::Lambda::Function": ("{name}", _ARN + "function:{name}"),
    "AWS::KMS::Key": ("{id}", _ARN + "key/{id}"),
    "AWS::SNS::Topic": (_ARN + "{name}", _ARN + "{name}"),
    "AWS::DynamoDB::Table": ("{name}", _ARN + "table/{name}"),
    "AWS::SecretsManager::Secret": (_ARN + "secret:{name}-abcdef", ""),
    "AWS::StepFunctions::StateMachine": (
        _ARN + "stateMachine:{name}",
        _ARN + "stateMachine:{name}",
    ),
    "AWS::Logs::LogGroup": ("{name}", _ARN + "log-group:{name}:*"),
    "AWS::EMRServerless::Application": ("{id}", _ARN + "/applications/{id}"),
    "AWS::CloudWatch::Alarm": ("{name}", _ARN + "alarm:{name}"),
    "AWS::Scheduler::ScheduleGroup": ("{name}", _ARN + "schedule-group/{name}"),
    "AWS::Scheduler::Schedule": ("{name}", _ARN + "schedule/default/{name}"),
    "AWS::Events::Rule": ("{name}", _ARN + "rule/{name}"),
    "AWS::SQS::Queue": ("https://sqs.{region}.amazonaws.com/{account}/{name}", _ARN + "{name}"),
}
#: The service of each type's ARN.
_SERVICE = {
    "AWS::Lambda::Function": "lambda", "AWS::KMS::Key": "kms", "AWS::SNS::Topic": "sns",
    "AWS::DynamoDB::Table": "dynamodb", "AWS::SecretsManager::Secret": "secretsmanager",
    "AWS::StepFunctions::StateMachine": "states", "AWS::Logs::LogGroup": "logs",
    "AWS::EMRServerless::Application": "emr-serverless", "AWS::CloudWatch::Alarm": "cloudwatch",
    "AWS::Scheduler::ScheduleGroup": "scheduler", "AWS::Scheduler::Schedule": "scheduler",
    "AWS::Events::Rule": "events", "AWS::SQS::Queue": "sqs",
}  # fmt: skip
#: Properties that name a resource, by type.
_NAME_PROPERTIES = (
    "RoleName", "PolicyName", "BucketName", "FunctionName", "TopicName", "TableName", "Name",
    "StateMachineName", "LogGroupName", "AlarmName", "DashboardName", "QueueName",
)  # fmt: skip


def resolved_statically(
    template: dict[str, Any], stack_name: str, account: str, region: str
) -> Resolved:
    """Every resource's ``Ref`` and ``Arn`` as they would be once deployed, without deploying:
    names the template gives, or stand-ins (``physical_name``). What a test needs to read a
    synthesized policy as AWS will (``Resolved.value``)."""
    resolved = Resolved(account, region, stack_name)
    resources = template.get("Resources", {})
    for logical in creation_order(resources):
        resource = resources[logical]
        properties = resource.get("Properties", {})
        given = next(
            (properties[p] for p in _NAME_PROPERTIES if isinstance(properties.get(p), str)), None
        )
        name = given or physical_name(stack_name, logical)
        values = {
            "service": _SERVICE.get(resource["Type"], ""),
            "name": name,
            "lower": (given or physical_name(stack_name, logical, lower=True)).lower(),
            "id": hashlib.sha256(logical.encode()).hexdigest()[:32],
            "account": account,
            "region": region,
        }
        ref, arn = _STATIC.get(resource["Type"], ("{name}", ""))
        resolved.refs[logical] = ref.format(**values)
        if arn:
            resolved.attributes[(logical, "Arn")] = arn.format(**values)
        if resource["Type"] == "AWS::EMRServerless::Application":
            resolved.attributes[(logical, "ApplicationId")] = values["id"]
        if resource["Type"] == "AWS::StepFunctions::StateMachine":
            resolved.attributes[(logical, "Name")] = name
        if resource["Type"] == "AWS::SQS::Queue":
            resolved.attributes[(logical, "QueueName")] = name
    return resolved


def dependencies(resource: dict[str, Any]) -> set[str]:
    """The logical ids a resource refers to (``DependsOn``, ``Ref``, ``Fn::GetAtt``, ``Sub``)."""
    found: set[str] = set()
    depends = resource.get("DependsOn") or []
    found.update([depends] if isinstance(depends, str) else depends)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if (
                "Ref" in node
                and isinstance(node["Ref"], str)
                and not node["Ref"].startswith("AWS::")
            ):
                found.add(node["Ref"])
            if "Fn::GetAtt" in node:
                target = node["Fn::GetAtt"]
                found.add(target[0] if isinstance(target, list) else target.split(".")[0])
            if "Fn::Sub" in node:
                text = node["Fn::Sub"] if isinstance(node["Fn::Sub"], str) else node["Fn::Sub"][0]
                for name in re.findall(r"\$\{([^}!]+)\}", text):
                    if not name.startswith("AWS::"):
                        found.add(name.split(".")[0])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(resource.get("Properties", {}))
    return found


def creation_order(resources: dict[str, dict[str, Any]]) -> list[str]:
    """Logical ids, each after everything it refers to (CloudFormation's order)."""
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(logical: str, path: tuple[str, ...]) -> None:
        if state.get(logical) == 2:
            return
        if state.get(logical) == 1:
            raise TemplateError(f"circular references: {' -> '.join((*path, logical))}")
        state[logical] = 1
        for needed in sorted(dependencies(resources[logical])):
            if needed in resources:
                visit(needed, (*path, logical))
        state[logical] = 2
        order.append(logical)

    for logical in sorted(resources):
        visit(logical, ())
    return order


def physical_name(stack_name: str, logical: str, limit: int = 63, lower: bool = False) -> str:
    """A stable stand-in for the name CloudFormation would generate for ``logical``."""
    digest = hashlib.sha256(f"{stack_name}/{logical}".encode()).hexdigest()[:8]
    name = f"{stack_name}-{logical}"[: limit - len(digest) - 1] + f"-{digest}"
    return name.lower() if lower else name
