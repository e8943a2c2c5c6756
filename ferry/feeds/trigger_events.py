"""Triggers: what starts a replication, with one meaning on AWS and locally.

A replication config declares them (``triggers``, ``ferry.config.Triggers``):

- a schedule, ``cron(...)`` or ``rate(...)`` in a time zone: an EventBridge Scheduler
  schedule on AWS that starts the state machine with ``scheduled_input``;
- S3 objects whose arrival starts a run (a ``_SUCCESS`` marker, typically): an EventBridge
  rule on S3's "Object Created" events, ``s3_event_pattern``, whose input transformer
  (``S3_INPUT_PATHS``, ``s3_input_template``) turns the event into the state machine input;
- the source catalog's own changes (``catalog-events``, ``ferry.feeds``): for the Glue Data
  Catalog an EventBridge rule on its events (``glue_event_pattern``) whose target is the
  intake function (``catalog_event_input_template``); for a Hive metastore a schedule that
  runs the poller (``POLLER_SCHEDULE``, ``poller_input``). Either starts the change window
  state machine, which starts the replication state machine for one table.

The CDK stack and the local runtime (``ferry local trigger``) both build their resources
from these functions; the config checks what a trigger says (``ferry.config.triggers``).
Every trigger starts the replication state machine with ``{"configUri", "trigger"}``:
``trigger`` says what started the run, and stays in the execution's input and output.
"""

from __future__ import annotations

import json
from typing import Any

from ferry.config import ReplicationConfig, S3Trigger, ScheduleTrigger
from ferry.feeds.catalog_changes import GLUE_DETAIL_TYPES

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


#: How often a Hive source's notification log poller is started. Each run polls for up to
#: ``POLL_SECONDS`` (every ``catalog-events.poll-interval``), so one is always polling.
POLLER_SCHEDULE = "rate(1 minute)"
POLL_SECONDS = 55

#: A rule's or a schedule's target: a few retries within two hours (EventBridge's defaults,
#: 185 within a day, hide a broken target for a day), then its dead-letter queue.
TARGET_RETRY_ATTEMPTS = 8
TARGET_MAX_EVENT_AGE_SECONDS = 2 * 3600
#: The poller's schedule: no retry (the next start, a minute later, reads from where the last
#: stopped), a start older than a minute is dropped to the dead-letter queue.
POLLER_RETRY_POLICY = {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60}


def target_failures(dead_letters_arn: str, retry_policy: dict[str, int] | None = None) -> dict:
    """The fields of a rule's or a schedule's target that send what it could not deliver,
    after its retries, to ``dead_letters_arn`` (none when it is empty: a pipeline deployed
    before its dead-letter queue)."""
    policy = retry_policy or {
        "MaximumRetryAttempts": TARGET_RETRY_ATTEMPTS,
        "MaximumEventAgeInSeconds": TARGET_MAX_EVENT_AGE_SECONDS,
    }
    if not dead_letters_arn:
        return {"RetryPolicy": policy}
    return {"RetryPolicy": policy, "DeadLetterConfig": {"Arn": dead_letters_arn}}


def source_databases(config: ReplicationConfig) -> list[str]:
    """The source databases the config replicates from, as the catalog names them."""
    return sorted({r.source_table.database_name.lower() for r in config.table_replications})


def glue_event_pattern(config: ReplicationConfig) -> dict[str, Any]:
    """The EventBridge pattern of AWS Glue's Data Catalog events of the config's source
    databases (in its catalog's account, when the config names it)."""
    pattern: dict[str, Any] = {
        "source": ["aws.glue"],
        "detail-type": list(GLUE_DETAIL_TYPES),
        "detail": {"databaseName": source_databases(config)},
    }
    glue = config.source_catalog.glue
    if glue is not None and glue.catalog_id:
        pattern["account"] = [glue.catalog_id]
    return pattern


def catalog_event_input_template(config_uri: str) -> str:
    """The Glue rule's input template: the config, and the event whole (``CatalogEventInput``)."""
    return f'{{"configUri": {json.dumps(config_uri)}, "event": <aws.events.event.json>}}'


def poller_input(config_uri: str) -> dict[str, Any]:
    """The input a schedule starts the Hive poller with (``PollInput``)."""
    return {"configUri": config_uri}
