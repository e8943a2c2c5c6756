"""The AWS emulator's EventBridge delivers to Step Functions, Lambda and SQS targets as AWS does.

moto's EventBridge does not deliver to Step Functions or Lambda targets, drops ``account``
from what it sends to an SQS queue, and delivers for disabled rules too. Here a rule that
is enabled and matches an event delivers it to each target with the target's ``Input`` or
input transformer applied as on AWS (``<aws.events.event.json>``, ``InputPathsMap``):

- a state machine target starts an execution, when the target's role trusts
  ``events.amazonaws.com`` and may ``states:StartExecution`` it; that is how an S3 object
  (a ``_SUCCESS`` marker) starts a replication locally;
- a Lambda target is invoked asynchronously (invocation type ``Event``, through
  ``ferry.local.emulator_lambda``), when the function's resource-based policy allows
  ``lambda:InvokeFunction`` to ``events.amazonaws.com`` for the rule (``aws:SourceArn``):
  AWS requires it, and the CDK's ``LambdaFunction`` target adds such a permission;
- an SQS target receives the event, or the transformed input, as its message body.

A delivery that is refused or fails is logged (a refusal also among the emulator's denials,
``GET /ferry-api/denials``), never silent: AWS would count it in the rule's
``FailedInvocations``. Other targets keep moto's behaviour.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from copy import copy
from datetime import UTC, datetime
from typing import Any

from ferry.local import emulator_lambda
from ferry.local.authorization import Authorizer, Caller, Check

logger = logging.getLogger(__name__)

#: Targets this module delivers; moto delivers the others.
DELIVERED_HERE = ("states", "lambda", "sqs")
_VARIABLE = re.compile(r"<([A-Za-z0-9_.\-]+)>")


def aws_event(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` as AWS delivers it: ``time`` in ISO 8601 (moto keeps epoch seconds), no
    ``ingestion-time`` (moto's internal field)."""
    shaped = {key: value for key, value in event.items() if key != "ingestion-time"}
    if isinstance(shaped.get("time"), int | float):
        moment = datetime.fromtimestamp(float(shaped["time"]), UTC)
        shaped["time"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return shaped


def target_input(target: dict[str, Any], event: dict[str, Any], rule_arn: str) -> Any:
    """What a rule's ``target`` receives for ``event``: its ``Input``, its input transformer's
    result, or the event itself."""
    shaped = aws_event(event)
    if "Input" in target:
        return json.loads(target["Input"])
    transformer = target.get("InputTransformer")
    if not transformer:
        return shaped
    from jsonpath_ng.ext import parse

    paths = transformer.get("InputPathsMap") or {}
    reserved = {
        "aws.events.event.json": json.dumps(shaped),
        "aws.events.rule-arn": rule_arn,
        "aws.events.rule-name": rule_arn.rsplit("/", 1)[-1],
        "aws.events.event.ingestion-time": shaped.get("time", ""),
    }

    def value(found: re.Match[str]) -> str:
        name = found.group(1)
        if name in paths:
            matches = parse(paths[name]).find(shaped)
            if not matches:
                return found.group(0)
            result = matches[0].value
            return result if isinstance(result, str) else json.dumps(result)
        return reserved.get(name, found.group(0))

    # One pass, as EventBridge substitutes: a value is never substituted into again.
    return json.loads(_VARIABLE.sub(value, transformer["InputTemplate"]))


def install(authorizer: Authorizer | None = None) -> None:
    """Make rules deliver to Step Functions, Lambda and SQS targets; others keep moto's.

    With ``authorizer``, a target is delivered only when AWS would: a state machine when the
    target's role trusts ``events.amazonaws.com`` and may ``states:StartExecution`` it, a
    function when its resource-based policy lets the rule invoke it.
    """
    from moto.events.models import Rule
    from moto.utilities.arns import parse_arn

    moto_send = Rule.send_to_targets

    def send_to_targets(self: Any, event: dict[str, Any], transform_input: bool = True) -> None:
        if self.state != "ENABLED" or not self.event_pattern.matches_event(event):
            return
        ours = [t for t in self.targets if parse_arn(t["Arn"]).service in DELIVERED_HERE]
        for target in ours:
            try:
                _deliver(authorizer, target, event, self)
            except PermissionError as refused:
                logger.warning("rule %s refused %s: %s", self.name, target["Arn"], refused)
            except Exception:  # moto's S3 notifier swallows errors silently: say it
                logger.exception("rule %s could not deliver to %s", self.name, target["Arn"])
        others = [t for t in self.targets if t not in ours]
        if others:
            rule = copy(self)
            rule.targets = others
            moto_send(rule, event, transform_input)

    Rule.send_to_targets = send_to_targets


def _deliver(
    authorizer: Authorizer | None, target: dict[str, Any], event: dict[str, Any], rule: Any
) -> None:
    from moto.utilities.arns import parse_arn

    arn = parse_arn(target["Arn"])
    body = target_input(target, event, rule.arn)
    if arn.service == "states":
        if authorizer is not None:
            _authorize_role(authorizer, target, arn.region, rule.arn)
        _start_execution(target["Arn"], body, event.get("id"))
    elif arn.service == "lambda":
        if authorizer is not None:
            _authorize_invoke(authorizer, target["Arn"], rule.arn)
        emulator_lambda.invoke_asynchronously(target["Arn"], json.dumps(body), f"rule {rule.name}")
    elif arn.service == "sqs":
        from moto.sqs.models import sqs_backends

        group = target.get("SqsParameters", {}).get("MessageGroupId")
        sqs_backends[arn.account][arn.region].send_message(
            queue_name=arn.resource_id, message_body=json.dumps(body), group_id=group
        )


def _start_execution(machine_arn: str, body: Any, event_id: str | None) -> None:
    from moto.stepfunctions.responses import get_backend
    from moto.utilities.arns import parse_arn

    arn = parse_arn(machine_arn)
    name = f"event-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    # The backend that executes state machines (moto keeps two; this picks as its API does).
    backend = get_backend(arn.account, arn.region)
    execution = backend.start_execution(machine_arn, name, json.dumps(body))
    logger.info("event %s started %s", event_id, execution.execution_arn)


def _authorize_role(authorizer: Authorizer, target: dict[str, Any], region: str, rule_arn: str):
    role_arn = target.get("RoleArn")
    if not role_arn:
        raise PermissionError(f"target {target['Arn']} has no role to start executions with")
    authorizer.assume(role_arn, "events.amazonaws.com", "events", region, source_arn=rule_arn)
    account = role_arn.split(":")[4]
    caller = Caller(
        role_arn,
        f"arn:aws:sts::{account}:assumed-role/{role_arn.rsplit('/', 1)[-1]}/events",
        account,
    )
    denial = authorizer.authorize(caller, [Check("states:StartExecution", target["Arn"])], region)
    if denial is not None:
        raise PermissionError(denial.message)


def _authorize_invoke(authorizer: Authorizer, function_arn: str, rule_arn: str) -> None:
    """EventBridge invokes a function on the function's resource-based policy alone."""
    _, _, _, region, account, _ = function_arn.split(":", 5)
    context = {"aws:SourceArn": rule_arn, "aws:SourceAccount": rule_arn.split(":")[4]}
    check = Check("lambda:InvokeFunction", function_arn, context, account=account)
    denial = authorizer.authorize("events.amazonaws.com", [check], region)
    if denial is not None:
        raise PermissionError(denial.message)
