"""Dead letters sent again: what failed outside the state machines, once its cause is fixed.

A dead-letter queue of a deployment (``infra/dead_letters.py``) holds one of three shapes
of message, each sent again to where it was going:

- Lambda's record of an asynchronous invocation that failed its retries (a catalog event
  the intake could not take, a poll that failed): ``requestContext.functionArn`` and
  ``requestPayload``; the function is invoked again, asynchronously, with the payload;
- EventBridge's event that a rule could not deliver (message attributes ``RULE_ARN``,
  ``TARGET_ARN``; the body is the event): the rule's target receives it again as the rule
  delivers it (its ``Input`` or input transformer). An event bus of another region (a
  forwarding rule's target) cannot be put an AWS service's event (``aws.*`` sources are
  AWS's own): the rules of that bus that match the event receive it, each as it would have;
- EventBridge Scheduler's start it could not deliver (``SCHEDULE_ARN``, ``TARGET_ARN``; the
  body is the target's input): the target is invoked or started again with it.

A message is deleted once it has been sent again; one that cannot be is left in the queue,
and said. Sending again is safe: the intake, the poller and a replication each converge
when they run twice for the same change.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ferry.core.errors import FerryError

#: How long a message being redriven stays hidden from another reader of the queue.
VISIBILITY_SECONDS = 60
_VARIABLE = re.compile(r"<([A-Za-z0-9_.\-]+)>")


class RedriveError(FerryError):
    """A dead letter that cannot be sent again (its shape, or its target, is unknown)."""


@dataclass(frozen=True)
class Redriven:
    """One dead letter, and where it went again (or why it could not)."""

    message_id: str
    what: str
    target: str
    error: str | None = None


def queue_url(sqs: Any, queue: str) -> str:
    """The URL of ``queue``: a URL, an ARN or a name."""
    if queue.startswith(("https://", "http://")):
        return queue
    if queue.startswith("arn:"):
        _, _, _, _, account, name = queue.split(":", 5)
        return sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
    return sqs.get_queue_url(QueueName=queue)["QueueUrl"]


def redrive(aws: Any, queue: str, region: str | None = None) -> list[Redriven]:
    """Send every message of the dead-letter queue ``queue`` again; one entry each.

    ``aws``: ``ferry.storage.aws.AwsClients``; ``region``: the queue's (the SDK's default when
    None).
    """
    sqs = aws.client("sqs", region)
    url = queue_url(sqs, queue)
    done: list[Redriven] = []
    kept: list[str] = []
    while True:
        messages = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=VISIBILITY_SECONDS,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            break
        for message in messages:
            try:
                what, target = send_again(aws, message)
            except (RedriveError, ValueError) as error:
                done.append(Redriven(message["MessageId"], "?", "?", str(error)))
                kept.append(message["ReceiptHandle"])  # hidden until every other is read
                continue
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            done.append(Redriven(message["MessageId"], what, target))
    for handle in kept:  # back in the queue, for its alarm and the next redrive
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=0)
    return done


def send_again(aws: Any, message: dict[str, Any]) -> tuple[str, str]:
    """Send one dead letter again; (what it was, where it went)."""
    attributes = {
        key: value.get("StringValue", "")
        for key, value in (message.get("MessageAttributes") or {}).items()
    }
    body = message["Body"]
    if "RULE_ARN" in attributes and "TARGET_ARN" in attributes:
        event = json.loads(body)
        targets = _deliver_rule_target(aws, attributes["RULE_ARN"], attributes["TARGET_ARN"], event)
        return f"event {event.get('id', '')} of {attributes['RULE_ARN']}", ", ".join(targets)
    if "SCHEDULE_ARN" in attributes and "TARGET_ARN" in attributes:
        _deliver(aws, attributes["TARGET_ARN"], json.loads(body))
        return f"start of {attributes['SCHEDULE_ARN']}", attributes["TARGET_ARN"]
    record = json.loads(body)
    context = record.get("requestContext") if isinstance(record, dict) else None
    if isinstance(context, dict) and context.get("functionArn") and "requestPayload" in record:
        function = context["functionArn"].removesuffix(":$LATEST")
        _deliver(aws, function, record["requestPayload"])
        return f"invocation {context.get('requestId', '')} ({context.get('condition')})", function
    raise RedriveError(
        f"message {message['MessageId']} is none of Lambda's failure records, EventBridge's "
        "undelivered events or Scheduler's undelivered starts"
    )


def _deliver(aws: Any, arn: str, payload: Any) -> None:
    """``payload`` to the target ``arn``: a function (asynchronously), a state machine, a
    queue."""
    parts = arn.split(":")
    service, region = parts[2], parts[3]
    text = payload if isinstance(payload, str) else json.dumps(payload)
    if service == "lambda":
        aws.client("lambda", region).invoke(
            FunctionName=arn, InvocationType="Event", Payload=text.encode()
        )
    elif service == "states":
        name = f"redrive-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        aws.client("stepfunctions", region).start_execution(
            stateMachineArn=arn, name=name, input=text
        )
    elif service == "sqs":
        sqs = aws.client("sqs", region)
        sqs.send_message(QueueUrl=queue_url(sqs, arn), MessageBody=text)
    else:
        raise RedriveError(f"a target {arn} is not redriven by Ferry")


def _deliver_rule_target(aws: Any, rule_arn: str, target_arn: str, event: dict) -> list[str]:
    """The event to one target of a rule, as the rule delivers it; the targets reached."""
    if target_arn.split(":")[2] == "events" and ":event-bus/" in target_arn:
        return _deliver_on_bus(aws, target_arn, event)
    _, _, _, region, _, resource = rule_arn.split(":", 5)
    bus, _, name = resource.removeprefix("rule/").rpartition("/")
    events = aws.client("events", region)
    targets = events.list_targets_by_rule(Rule=name, EventBusName=bus or "default")["Targets"]
    matching = [t for t in targets if t["Arn"] == target_arn]
    if not matching:
        raise RedriveError(f"the rule {rule_arn} has no target {target_arn} any more")
    _deliver(aws, target_arn, target_input(matching[0], event, rule_arn))
    return [target_arn]


def _deliver_on_bus(aws: Any, bus_arn: str, event: dict) -> list[str]:
    """The event to each target of the rules of ``bus_arn`` that match it."""
    _, _, _, region, _, resource = bus_arn.split(":", 5)
    bus = resource.removeprefix("event-bus/")
    events = aws.client("events", region)
    reached: list[str] = []
    token = None
    while True:
        page = events.list_rules(EventBusName=bus, **({"NextToken": token} if token else {}))
        for rule in page["Rules"]:
            pattern = rule.get("EventPattern")
            if rule.get("State") != "ENABLED" or not pattern:
                continue
            if not events.test_event_pattern(EventPattern=pattern, Event=json.dumps(event))[
                "Result"
            ]:
                continue
            for target in events.list_targets_by_rule(Rule=rule["Name"], EventBusName=bus)[
                "Targets"
            ]:
                if target["Arn"].split(":")[2] == "events":
                    continue  # a bus again: forwarded once only
                _deliver(aws, target["Arn"], target_input(target, event, rule["Arn"]))
                reached.append(target["Arn"])
        token = page.get("NextToken")
        if not token:
            break
    if not reached:
        raise RedriveError(f"no rule of {bus_arn} matches the event {event.get('id', '')}")
    return reached


def target_input(target: dict[str, Any], event: dict[str, Any], rule_arn: str) -> Any:
    """What a rule's ``target`` receives for ``event``: its ``Input``, its input transformer's
    result, or the event itself (input paths of the form ``$.a.b``, as Ferry's rules use)."""
    if "Input" in target:
        return json.loads(target["Input"])
    transformer = target.get("InputTransformer")
    if not transformer:
        return event
    paths = transformer.get("InputPathsMap") or {}
    reserved = {
        "aws.events.event.json": json.dumps(event),
        "aws.events.rule-arn": rule_arn,
        "aws.events.rule-name": rule_arn.rsplit("/", 1)[-1],
        "aws.events.event.ingestion-time": str(event.get("time", "")),
    }

    def value(found: re.Match[str]) -> str:
        name = found.group(1)
        if name in paths:
            result: Any = event
            for key in paths[name].removeprefix("$").strip(".").split("."):
                if not isinstance(result, dict) or key not in result:
                    return found.group(0)
                result = result[key]
            return result if isinstance(result, str) else json.dumps(result)
        return reserved.get(name, found.group(0))

    return json.loads(_VARIABLE.sub(value, transformer["InputTemplate"]))
