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

logger = logging.getLogger(__name__)


def install() -> None:
    """Make rules deliver to Step Functions targets; other targets keep moto's behaviour."""
    from moto.events.models import EventTemplateParser, Rule
    from moto.stepfunctions.responses import get_backend
    from moto.utilities.arns import parse_arn

    moto_send = Rule.send_to_targets

    def send_to_targets(self: Any, event: dict[str, Any], transform_input: bool = True) -> None:
        targets = [t for t in self.targets if parse_arn(t["Arn"]).service == "states"]
        if targets and self.event_pattern.matches_event(event):
            for target in targets:
                try:
                    _start_execution(target, event)
                except Exception:  # moto's S3 notifier swallows errors silently: say it
                    logger.exception("rule %s could not start %s", self.name, target["Arn"])
        others = [t for t in self.targets if t not in targets]
        if others:
            rule = copy(self)
            rule.targets = others
            moto_send(rule, event, transform_input)

    def _start_execution(target: dict[str, Any], event: dict[str, Any]) -> None:
        arn = parse_arn(target["Arn"])
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
