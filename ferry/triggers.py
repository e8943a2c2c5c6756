"""Triggers: what starts a replication, with one meaning on AWS and locally.

A replication config declares them (``triggers``, ``ferry.config.Triggers``):

- a schedule, ``cron(...)`` or ``rate(...)`` in a time zone: an EventBridge Scheduler
  schedule on AWS that starts the state machine with ``scheduled_input``;
- S3 objects whose arrival starts a run (a ``_SUCCESS`` marker, typically): an EventBridge
  rule on S3's "Object Created" events, ``s3_event_pattern``, whose input transformer
  (``S3_INPUT_PATHS``, ``s3_input_template``) turns the event into the state machine input.

The CDK stack and the local runtime (``ferry local trigger``) both build their resources
from these functions; the config checks what a trigger says (``ferry.config.triggers``).
Every trigger starts the replication state machine with ``{"configUri", "trigger"}``:
``trigger`` says what started the run, and stays in the execution's input and output.
"""

from __future__ import annotations

import json
from typing import Any

from ferry.config import S3Trigger, ScheduleTrigger

#: How often the housekeeping state machine runs for each config on AWS. Replaced data is
#: kept for ``housekeeping.expired-path-duration`` (default three days); a few hours more
#: before it is deleted costs little storage, and four runs a day cost little more.
HOUSEKEEPING_SCHEDULE = "rate(6 hours)"

#: EventBridge Scheduler replaces this keyword in a target's input with the time the
#: schedule was due, e.g. ``2026-11-21T03:00:00Z``.
SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"

#: The S3 trigger rule's input transformer: the event's fields its template uses.
#: ``time`` is when S3 created the object: the replication lag is measured from it.
S3_INPUT_PATHS: dict[str, str] = {
    "bucket": "$.detail.bucket.name",
    "key": "$.detail.object.key",
    "time": "$.time",
}


def s3_event_pattern(trigger: S3Trigger) -> dict[str, Any]:
    """The EventBridge pattern of S3 "Object Created" events that ``trigger`` starts a run on.

    S3 sends the events of a bucket with EventBridge notifications turned on to the default
    event bus of the bucket's own region.
    """
    pattern: dict[str, Any] = {
        "source": ["aws.s3"],
        "detail-type": ["Object Created"],
        "detail": {"bucket": {"name": [trigger.bucket]}},
    }
    prefix, suffix = trigger.prefix, trigger.suffix
    # Matchers in one list are alternatives (OR): a prefix *and* a suffix is one wildcard,
    # in which a literal * or \ of the key is escaped.
    if prefix and suffix:
        key = [{"wildcard": f"{_wildcard_literal(prefix)}*{_wildcard_literal(suffix)}"}]
    elif prefix:
        key = [{"prefix": prefix}]
    elif suffix:
        key = [{"suffix": suffix}]
    else:
        key = []
    if key:
        pattern["detail"]["object"] = {"key": key}
    return pattern


def _wildcard_literal(text: str) -> str:
    return text.replace("\\", "\\\\").replace("*", "\\*")


def s3_input_template(config_uri: str) -> str:
    """The S3 trigger rule's input template: a run of the config, the object as ``trigger``."""
    trigger = {"bucket": "<bucket>", "key": "<key>", "time": "<time>"}
    return json.dumps({"configUri": config_uri, "trigger": trigger})


def scheduled_input(config_uri: str, schedule: ScheduleTrigger) -> dict[str, Any]:
    """The state machine input a schedule starts a run with.

    Its ``trigger`` names the schedule and the time the run was due (filled in by
    EventBridge Scheduler), so that a late or repeated run can be told apart.
    """
    return {
        "configUri": config_uri,
        "trigger": {"schedule": schedule.expression, "scheduledTime": SCHEDULED_TIME},
    }


def describe_s3_trigger(trigger: S3Trigger) -> str:
    """The objects a trigger starts a run on, for people: ``s3://landing/warehouse/…_SUCCESS``."""
    where = f"s3://{trigger.bucket}/{trigger.prefix}…{trigger.suffix}"
    return f"{where} ({trigger.region})" if trigger.region else where
