"""The AWS emulator's EventBridge: a rule whose target is a state machine starts an execution.

moto's EventBridge does not deliver to Step Functions targets. Here such a target starts an
execution of the state machine, with the target's input (or input transformer) applied as on
AWS; that is how an S3 object (a ``_SUCCESS`` marker) starts a replication locally.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from copy import copy
from typing import Any

from ferry.local.authorization import Authorizer, Caller, Check

logger = logging.getLogger(__name__)


def install(authorizer: Authorizer | None = None) -> None:
    """Make rules deliver to Step Functions targets; other targets keep moto's behaviour.

    With ``authorizer``, a target is delivered as on AWS only when the target's role trusts
    ``events.amazonaws.com`` and may ``states:StartExecution`` the state machine; otherwise
    the invocation fails (as the rule's ``FailedInvocations`` metric would count it).
    """
    from moto.events.models import EventTemplateParser, Rule
    from moto.stepfunctions.responses import get_backend
    from moto.utilities.arns import parse_arn

    moto_send = Rule.send_to_targets

    def send_to_targets(self: Any, event: dict[str, Any], transform_input: bool = True) -> None:
        targets = [t for t in self.targets if parse_arn(t["Arn"]).service == "states"]
        if targets and self.event_pattern.matches_event(event):
            for target in targets:
                try:
                    _start_execution(target, event, self.arn)
                except Exception:  # moto's S3 notifier swallows errors silently: say it
                    logger.exception("rule %s could not start %s", self.name, target["Arn"])
        others = [t for t in self.targets if t not in targets]
        if others:
            rule = copy(self)
            rule.targets = others
            moto_send(rule, event, transform_input)

    def _start_execution(target: dict[str, Any], event: dict[str, Any], rule_arn: str) -> None:
        arn = parse_arn(target["Arn"])
        if authorizer is not None:
            _authorize(authorizer, target, arn.region, rule_arn)
        if "InputTransformer" in target:
            # moto passes S3's events untransformed; AWS applies the transformer to them too.
            transformer = target["InputTransformer"]
            # moto's S3 events lack the ingestion time its own template parser requires.
            event = {"ingestion-time": event.get("time"), **event}
            body = EventTemplateParser.parse(
                input_template=transformer.get("InputTemplate"),
                input_paths_map=transformer.get("InputPathsMap", {}),
                event=event,
            )
        elif "Input" in target:
            body = json.loads(target["Input"])
        else:
            body = event
        name = f"event-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        # The backend that executes state machines (moto keeps two; this picks as its API does).
        backend = get_backend(arn.account, arn.region)
        execution = backend.start_execution(target["Arn"], name, json.dumps(body))
        logger.info("event %s started %s", event.get("id"), execution.execution_arn)

    Rule.send_to_targets = send_to_targets


def _authorize(authorizer: Authorizer, target: dict[str, Any], region: str, rule_arn: str) -> None:
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
