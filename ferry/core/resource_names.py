"""AWS's limits on the names of the resources Ferry creates, and names that fit them.

CloudFormation creates a named resource only when its service accepts the name: a rule of
65 characters, a schedule with a space, a role of 70 characters roll the whole stack back.
``NAME_RULES`` holds each resource type's name property, its longest length and the
characters its service allows (from the services' API references); the synth
(``infra/checks.py``) and the local runtime's deploy (``ferry/local/stack.py``) refuse a
name outside them with ``name_problem``'s one line.

Names Ferry makes from a config's name go through ``fitted``: a name that fits is kept as
it is; a longer one keeps its prefix and suffix and shortens the config's part, followed by
a digest of the whole name, so the same config always gets the same name and two long names
never collide on their common start.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class NameRule:
    """A resource type's name: the template's property, its length and its characters."""

    property: str
    longest: int
    allowed: re.Pattern[str]
    characters: str
    shortest: int = 1


def _rule(
    property: str, longest: int, allowed: str, characters: str, shortest: int = 1
) -> NameRule:
    return NameRule(property, longest, re.compile(allowed), characters, shortest)


_LETTERS_DIGITS_DASH_UNDERSCORE = ("[A-Za-z0-9_-]+", "letters, digits, '-' and '_'")
#: Step Functions: no whitespace, brackets, wildcards, punctuation ("#%\^|~`$&,;:/") or
#: control characters.
_STATE_MACHINE = (
    r"[^\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f]+",
    'no whitespace, brackets, wildcards or "#%\\^|~`$&,;:/',
)

#: By CloudFormation resource type (the property as the template spells it).
NAME_RULES: dict[str, NameRule] = {
    "AWS::Lambda::Function": _rule("FunctionName", 64, *_LETTERS_DIGITS_DASH_UNDERSCORE),
    "AWS::IAM::Role": _rule("RoleName", 64, r"[\w+=,.@-]+", "letters, digits and '+=,.@-_'"),
    "AWS::IAM::Policy": _rule("PolicyName", 128, r"[\w+=,.@-]+", "letters, digits and '+=,.@-_'"),
    "AWS::IAM::ManagedPolicy": _rule(
        "ManagedPolicyName", 128, r"[\w+=,.@-]+", "letters, digits and '+=,.@-_'"
    ),
    "AWS::Events::Rule": _rule("Name", 64, r"[.\-_A-Za-z0-9]+", "letters, digits and '.-_'"),
    "AWS::Events::EventBusPolicy": _rule("StatementId", 64, *_LETTERS_DIGITS_DASH_UNDERSCORE),
    "AWS::Scheduler::Schedule": _rule("Name", 64, r"[0-9a-zA-Z\-_.]+", "letters, digits and '.-_'"),
    "AWS::Scheduler::ScheduleGroup": _rule(
        "Name", 64, r"[0-9a-zA-Z\-_.]+", "letters, digits and '.-_'"
    ),
    "AWS::StepFunctions::StateMachine": _rule("StateMachineName", 80, *_STATE_MACHINE),
    "AWS::SQS::Queue": _rule(
        "QueueName", 80, r"[A-Za-z0-9_-]+(\.fifo)?", "letters, digits, '-' and '_' (.fifo)"
    ),
    "AWS::SNS::Topic": _rule(
        "TopicName", 256, r"[A-Za-z0-9_-]+(\.fifo)?", "letters, digits, '-' and '_' (.fifo)"
    ),
    "AWS::Logs::LogGroup": _rule(
        "LogGroupName", 512, r"[.\-_/#A-Za-z0-9]+", "letters, digits and '.-_/#'"
    ),
    "AWS::CloudWatch::Alarm": _rule(
        "AlarmName", 255, r"[^\x00-\x1f\x7f]+", "no control characters"
    ),
    "AWS::CloudWatch::Dashboard": _rule("DashboardName", 255, *_LETTERS_DIGITS_DASH_UNDERSCORE),
    "AWS::DynamoDB::Table": _rule(
        "TableName", 255, r"[a-zA-Z0-9_.-]+", "letters, digits and '_.-'", shortest=3
    ),
    "AWS::S3::Bucket": _rule(
        "BucketName",
        63,
        r"[a-z0-9][a-z0-9.-]*[a-z0-9]",
        "lower-case letters, digits, '.' and '-'",
        shortest=3,
    ),
    "AWS::KMS::Alias": _rule(
        "AliasName", 256, r"alias/[a-zA-Z0-9/_-]+", "alias/ then letters, digits and '/_-'"
    ),
    "AWS::SecretsManager::Secret": _rule(
        "Name", 512, r"[A-Za-z0-9/_+=.@-]+", "letters, digits and '/_+=.@-'"
    ),
    "AWS::EMRServerless::Application": _rule(
        "Name", 64, r"[A-Za-z0-9._/#-]+", "letters, digits and '._/#-'"
    ),
}


def name_problem(resource_type: str, name: str) -> str | None:
    """What is wrong with ``name`` for a resource of ``resource_type`` (half a line), or None."""
    rule = NAME_RULES.get(resource_type)
    if rule is None:
        return None
    if not rule.shortest <= len(name) <= rule.longest:
        return (
            f"{rule.property} {name!r} has {len(name)} characters; {resource_type} allows "
            f"{rule.shortest} to {rule.longest}"
        )
    if rule.allowed.fullmatch(name) is None:
        return f"{rule.property} {name!r}: {resource_type} allows {rule.characters}"
    return None


def template_name_problems(template: dict, origin: str = "") -> list[str]:
    """Every literal name of a CloudFormation template that its service would refuse, one
    line each naming the resource (and ``origin``, what it came from)."""
    problems = []
    for logical, resource in template.get("Resources", {}).items():
        rule = NAME_RULES.get(resource.get("Type", ""))
        name = (resource.get("Properties") or {}).get(rule.property) if rule else None
        if isinstance(name, str):
            problem = name_problem(resource["Type"], name)
            if problem:
                problems.append(f"{origin}resource {logical}: {problem}")
    return problems


def fitted(prefix: str, variable: str, suffix: str, longest: int) -> str:
    """``prefix + variable + suffix`` if it fits in ``longest`` characters; else the
    variable part shortened and followed by a digest of the whole name (deterministic)."""
    name = prefix + variable + suffix
    if len(name) <= longest:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    room = longest - len(prefix) - len(suffix) - len(digest) - 1
    if room < 1:
        raise ValueError(f"no room for {variable!r} in a name of at most {longest} characters")
    return f"{prefix}{variable[:room].rstrip('-_.')}-{digest}{suffix}"
