"""The AWS emulator's EventBridge delivers to Step Functions, Lambda, SQS and event bus targets
as AWS does.

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
- an SQS target receives the event, or the transformed input, as its message body;
- an event bus target (another region's: the forwarding rules) receives the event, with the
  target's role, which must trust ``events.amazonaws.com`` and may ``events:PutEvents``
  (a target without a role is delivered, as moto does).

A delivery that fails is retried (the target's ``RetryPolicy``: ``MaximumRetryAttempts``,
``MaximumEventAgeInSeconds``; a refusal is not retried, as on AWS), then the event goes to
the target's dead-letter queue (``DeadLetterConfig``) on the queue's policy, with AWS's
message attributes (``RULE_ARN``, ``TARGET_ARN``, ``ERROR_CODE``, ``ERROR_MESSAGE``,
``EXHAUSTED_RETRY_CONDITION``, ``RETRY_ATTEMPTS``); the rule's ``FailedInvocations`` is
counted in moto's CloudWatch (``AWS/Events``, by ``RuleName``). AWS waits up to minutes
between retries; the emulator ``RETRY_DELAY_SECONDS``. Every delivery is also a fail point,
``eventbridge.<target kind>`` (``eventbridge.event-bus``, ``eventbridge.lambda``…), armed
from the emulator's faults file (``ferry.core.faults``): a drill makes a target fail to receive.
A refusal is also among the emulator's denials (``GET /ferry-api/denials``). Other targets
keep moto's behaviour. ``TestEventPattern`` answers as EventBridge does (moto does not
implement it): ``ferry redrive`` asks it which rules of a bus match an event.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from copy import copy
from datetime import UTC, datetime
from typing import Any

from ferry.core import faults
from ferry.local import emulator_dead_letters, emulator_lambda, emulator_metrics
from ferry.local.authorization import Authorizer, Caller, Check

logger = logging.getLogger(__name__)

#: Targets this module delivers (and event buses); moto delivers the others.
DELIVERED_HERE = ("states", "lambda", "sqs")
#: The wait between two attempts to deliver to a target (EventBridge backs off for minutes).
RETRY_DELAY_SECONDS = 0.5
#: EventBridge's retry policy when a target has none.
DEFAULT_RETRY_ATTEMPTS = 185
DEFAULT_MAX_EVENT_AGE_SECONDS = 86400
_fault_file: faults.FaultFile | None = None
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


def install(
    authorizer: Authorizer | None = None, fault_file: faults.FaultFile | None = None
) -> None:
    """Make rules deliver to Step Functions, Lambda, SQS and event bus targets; others keep
    moto's.

    With ``authorizer``, a target is delivered only when AWS would: a state machine or an
    event bus when the target's role trusts ``events.amazonaws.com`` and may start it or put
    events on it, a function when its resource-based policy lets the rule invoke it.
    ``fault_file`` arms the deliveries' fail points.
    """
    global _fault_file
    from moto.events.models import Rule

    _fault_file = fault_file
    moto_send = Rule.send_to_targets

    def send_to_targets(self: Any, event: dict[str, Any], transform_input: bool = True) -> None:
        if self.state != "ENABLED" or not self.event_pattern.matches_event(event):
            return
        ours = [t for t in self.targets if _delivered_here(t["Arn"])]
        for target in ours:
            Delivery(authorizer, target, event, self).start()
        others = [t for t in self.targets if t not in ours]
        if others:
            rule = copy(self)
            rule.targets = others
            moto_send(rule, event, transform_input)

    Rule.send_to_targets = send_to_targets
    _install_test_event_pattern()


def _install_test_event_pattern() -> None:
    from moto.events.models import EventPattern, EventPatternParser
    from moto.events.responses import EventsHandler

    def test_event_pattern(self: Any) -> str:
        raw = self._get_param("EventPattern")
        event = json.loads(self._get_param("Event"))
        pattern = EventPattern(raw, EventPatternParser(raw).parse())
        return json.dumps({"Result": pattern.matches_event(event)})

    EventsHandler.test_event_pattern = test_event_pattern


def _delivered_here(arn: str) -> bool:
    parts = arn.split(":", 5)
    service, resource = parts[2], parts[5] if len(parts) > 5 else ""
    return service in DELIVERED_HERE or (service == "events" and resource.startswith("event-bus/"))


class Delivery:
    """One event to one target of a rule: its attempts, then its dead letter if they fail."""

    def __init__(
        self, authorizer: Authorizer | None, target: dict[str, Any], event: dict[str, Any],
        rule: Any,
    ):  # fmt: skip
        self.authorizer, self.target, self.event, self.rule = authorizer, target, event, rule
        self.received = time.monotonic()

    def start(self) -> None:
        """Deliver now; a failure to retry continues in the background (the caller, a
        PutEvents, is not held up)."""
        error = self.attempt()
        if error is None:
            return
        if isinstance(error, PermissionError):
            self.dead_letter(error, "NONE", 0)
            return
        threading.Thread(target=self.retry, args=(error,), daemon=True).start()

    def attempt(self) -> Exception | None:
        try:
            if _fault_file is not None:
                _fault_file.refresh()
            faults.point(f"eventbridge.{_kind(self.target['Arn'])}")
            _deliver(self.authorizer, self.target, self.event, self.rule)
        except PermissionError as refused:
            logger.warning("rule %s refused %s: %s", self.rule.name, self.target["Arn"], refused)
            return refused
        except Exception as error:  # moto's S3 notifier swallows errors silently: say it
            logger.warning(
                "rule %s could not deliver to %s: %s", self.rule.name, self.target["Arn"], error
            )
            return error
        return None

    def retry(self, error: Exception) -> None:
        policy = self.target.get("RetryPolicy") or {}
        attempts = int(policy.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS))
        max_age = float(policy.get("MaximumEventAgeInSeconds", DEFAULT_MAX_EVENT_AGE_SECONDS))
        for retry in range(1, attempts + 1):
            time.sleep(RETRY_DELAY_SECONDS)
            if time.monotonic() - self.received > max_age:
                self.dead_letter(error, "MaximumEventAgeInSeconds", retry - 1)
                return
            failed = self.attempt()
            if failed is None:
                return
            error = failed
            if isinstance(error, PermissionError):
                break
        self.dead_letter(error, "MaximumRetryAttempts", attempts)

    def dead_letter(self, error: Exception, condition: str, retries: int) -> None:
        """Count the failed invocation; the event to the target's dead-letter queue."""
        _record_failed_invocation(self.rule)
        queue = (self.target.get("DeadLetterConfig") or {}).get("Arn")
        if not queue:
            logger.error(
                "rule %s dropped an event for %s (no dead-letter queue): %s",
                self.rule.name, self.target["Arn"], error,
            )  # fmt: skip
            return
        code = (
            "NO_PERMISSIONS"
            if isinstance(error, PermissionError)
            else getattr(error, "error_name", type(error).__name__)
        )
        attributes = {
            "RULE_ARN": self.rule.arn,
            "TARGET_ARN": self.target["Arn"],
            "ERROR_CODE": code,
            "ERROR_MESSAGE": str(error)[:1000],
            "EXHAUSTED_RETRY_CONDITION": condition,
            "RETRY_ATTEMPTS": str(retries),
        }
        emulator_dead_letters.send(
            self.authorizer, "events.amazonaws.com", queue, aws_event(self.event), attributes,
            source_arn=self.rule.arn,
        )  # fmt: skip


def _kind(arn: str) -> str:
    """A target's kind, as its fail point names it: ``lambda``, ``states``, ``event-bus``…"""
    service, resource = arn.split(":", 5)[2], arn.split(":", 5)[5]
    return "event-bus" if service == "events" and resource.startswith("event-bus/") else service


def _record_failed_invocation(rule: Any) -> None:
    """``AWS/Events`` ``FailedInvocations`` of the rule, in moto's CloudWatch."""
    _, _, _, region, account, _ = rule.arn.split(":", 5)
    emulator_metrics.count(
        account, region, "AWS/Events", {"RuleName": rule.name}, {"FailedInvocations": 1}
    )


def _deliver(
    authorizer: Authorizer | None, target: dict[str, Any], event: dict[str, Any], rule: Any
) -> None:
    from moto.utilities.arns import parse_arn

    arn = parse_arn(target["Arn"])
    if arn.service == "events":
        # A bus of another region is put on with the target's role; a rule made by hand
        # without one (``ferry local trigger``'s forwarding) keeps moto's leniency.
        if authorizer is not None and target.get("RoleArn"):
            _authorize_role(authorizer, target, arn.region, rule.arn, "events:PutEvents")
        _put_on_bus(target["Arn"], aws_event(event))
        return
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


def _put_on_bus(bus_arn: str, event: dict[str, Any]) -> None:
    """The event, whole, on another bus (its rules match it there as it came)."""
    from moto.events.models import events_backends

    _, _, _, region, account, resource = bus_arn.split(":", 5)
    entry = {
        "Source": event["source"],
        "DetailType": event["detail-type"],
        "Detail": json.dumps(event.get("detail", {})),
        "Resources": event.get("resources", []),
        "EventBusName": resource.removeprefix("event-bus/"),
    }
    events_backends[account][region].put_events([entry])


def _start_execution(machine_arn: str, body: Any, event_id: str | None) -> None:
    from moto.stepfunctions.responses import get_backend
    from moto.utilities.arns import parse_arn

    arn = parse_arn(machine_arn)
    name = f"event-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    # The backend that executes state machines (moto keeps two; this picks as its API does).
    backend = get_backend(arn.account, arn.region)
    execution = backend.start_execution(machine_arn, name, json.dumps(body))
    logger.info("event %s started %s", event_id, execution.execution_arn)


def _authorize_role(
    authorizer: Authorizer, target: dict[str, Any], region: str, rule_arn: str,
    action: str = "states:StartExecution",
) -> None:  # fmt: skip
    role_arn = target.get("RoleArn")
    if not role_arn:
        raise PermissionError(f"target {target['Arn']} has no role to deliver with")
    authorizer.assume(role_arn, "events.amazonaws.com", "events", region, source_arn=rule_arn)
    account = role_arn.split(":")[4]
    caller = Caller(
        role_arn,
        f"arn:aws:sts::{account}:assumed-role/{role_arn.rsplit('/', 1)[-1]}/events",
        account,
    )
    denial = authorizer.authorize(caller, [Check(action, target["Arn"])], region)
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
