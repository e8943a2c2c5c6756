"""A config's ``catalog-events`` in the local runtime, as the stack deploys them
(``infra/triggers.py``): a Glue source's rule on Glue's events whose target is the
CatalogEvents function, a Hive source's schedule that starts the CatalogPoller function.

Each is named after the config's file (its resolved path), not after its upload: installing
an edited config replaces its rule or schedule (the new upload's URI in its input), and one
of the other kind left by an earlier version of the file is removed. The feeds' items are
keyed by the uploaded URI (``ferry.feeds.windows``): two files of the same content are one
URI, and would share them, so the second is refused (``shared_feed``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from ferry.config import ReplicationConfig
from ferry.feeds import trigger_events

ACCOUNT = "123456789012"
REGION = "us-east-1"
GROUP = "ferry-local"
RULE_PREFIX = "ferry-catalog-events-"
SCHEDULE_PREFIX = "ferry-catalog-poller-"
#: The descriptions end with the config's path: the one place a rule or schedule says whose
#: it is (both take 512 characters).
_RULE_DESCRIPTION = "Changes of the Glue tables of "
_SCHEDULE_DESCRIPTION = "Read the source notification log of "
_DESCRIPTION_LENGTH = 512


@dataclass(frozen=True)
class InstalledFeed:
    """A rule or schedule of a config's ``catalog-events`` found in the emulator."""

    name: str
    config_uri: str | None
    config_path: str


def _identity(config_path: Path) -> str:
    return hashlib.sha256(str(config_path.resolve()).encode()).hexdigest()[:16]


def rule_name(config_path: Path) -> str:
    """The local rule of a config's ``catalog-events`` (a Glue source): one per config file."""
    return RULE_PREFIX + _identity(config_path)


def schedule_name(config_path: Path) -> str:
    """The local schedule of a config's Hive poller: one per config file."""
    return SCHEDULE_PREFIX + _identity(config_path)


def _description(prefix: str, config_path: Path) -> str:
    return (prefix + str(config_path.resolve()))[:_DESCRIPTION_LENGTH]


def installed(aws: Any) -> list[InstalledFeed]:
    """Every config's ``catalog-events`` rule and schedule in the emulator, with the config
    URI each hands its function."""
    found = []
    events = aws.client("events", REGION)
    for rule in events.list_rules(NamePrefix=RULE_PREFIX).get("Rules", []):
        targets = events.list_targets_by_rule(Rule=rule["Name"]).get("Targets", [])
        template = next(
            (t.get("InputTransformer", {}).get("InputTemplate", "") for t in targets), ""
        )
        found.append(
            InstalledFeed(
                rule["Name"],
                _config_uri_of(template),
                rule.get("Description", "").removeprefix(_RULE_DESCRIPTION),
            )
        )
    scheduler = aws.client("scheduler", REGION)
    for summary in scheduler.list_schedules(NamePrefix=SCHEDULE_PREFIX).get("Schedules", []):
        schedule = scheduler.get_schedule(Name=summary["Name"], GroupName=summary["GroupName"])
        given = json.loads(schedule.get("Target", {}).get("Input") or "{}")
        found.append(
            InstalledFeed(
                schedule["Name"],
                given.get("configUri"),
                schedule.get("Description", "").removeprefix(_SCHEDULE_DESCRIPTION),
            )
        )
    return found


def _config_uri_of(template: str) -> str | None:
    # ``{"configUri": "<uri>", "event": <aws.events.event.json>}``: JSON up to the event.
    head = template.split(', "event":', 1)[0]
    try:
        return json.loads(head + "}").get("configUri")
    except ValueError:
        return None


def shared_feed(aws: Any, config_path: Path, config_uri: str) -> InstalledFeed | None:
    """Another config file's ``catalog-events`` installed with the same URI (the same
    content): its feeds' items would be this one's too."""
    own = {rule_name(config_path), schedule_name(config_path)}
    for feed in installed(aws):
        if feed.name not in own and feed.config_uri == config_uri:
            return feed
    return None


def install_glue_rule(
    aws: Any,
    function_arn: str,
    config_path: Path,
    config_uri: str,
    config: ReplicationConfig,
    dead_letters_arn: str = "",
) -> str:
    """Make AWS Glue's events of the config's source databases reach the CatalogEvents
    function, as the stack deploys it; the rule's name. A poller schedule an earlier version
    of the file installed is removed.

    The rule is on the pipeline region's default bus, its target the function with the
    event whole and the config's URI; the function's policy lets EventBridge invoke it for
    this rule only. A catalog of another region gets a rule there that forwards its events
    to the pipeline's bus, as the stack's ``EventForwarding`` does.
    """
    name = rule_name(config_path)
    pattern = trigger_events.glue_event_pattern(config)
    events = aws.client("events", REGION)
    rule_arn = events.put_rule(
        Name=name,
        EventPattern=json.dumps(pattern),
        State="ENABLED",
        Description=_description(_RULE_DESCRIPTION, config_path),
    )["RuleArn"]
    events.put_targets(
        Rule=name,
        Targets=[
            {
                "Id": "intake",
                "Arn": function_arn,
                "InputTransformer": {
                    "InputPathsMap": {},
                    "InputTemplate": trigger_events.catalog_event_input_template(config_uri),
                },
                **trigger_events.target_failures(dead_letters_arn),
            }
        ],
    )
    try:
        aws.client("lambda", REGION).add_permission(
            FunctionName=function_arn,
            StatementId=name,
            Action="lambda:InvokeFunction",
            Principal="events.amazonaws.com",
            SourceArn=rule_arn,
            SourceAccount=ACCOUNT,
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "ResourceConflictException":
            raise  # installed before: the same statement
    glue = config.source_catalog.glue
    if glue is not None and glue.region and glue.region != REGION:
        forward = aws.client("events", glue.region)
        forward.put_rule(Name=name, EventPattern=json.dumps(pattern), State="ENABLED")
        forward.put_targets(
            Rule=name,
            Targets=[
                {"Id": "pipeline", "Arn": f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default"}
            ],
        )
    _remove_schedule(aws, schedule_name(config_path))
    return name


def install_poller_schedule(
    aws: Any,
    function_arn: str,
    role_arn: str,
    config_path: Path,
    config_uri: str,
    dead_letters_arn: str = "",
) -> str:
    """Start the CatalogPoller function for the config every minute, with the stack's role
    for its schedules, as the stack deploys it; the schedule's name. A Glue rule an earlier
    version of the file installed is removed."""
    name = schedule_name(config_path)
    scheduler = aws.client("scheduler", REGION)
    arguments: dict[str, Any] = {
        "Name": name,
        "GroupName": GROUP,
        "ScheduleExpression": trigger_events.POLLER_SCHEDULE,
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "State": "ENABLED",
        "Description": _description(_SCHEDULE_DESCRIPTION, config_path),
        "Target": {
            "Arn": function_arn,
            "RoleArn": role_arn,
            "Input": json.dumps(trigger_events.poller_input(config_uri)),
            **trigger_events.target_failures(dead_letters_arn, trigger_events.POLLER_RETRY_POLICY),
        },
    }
    try:
        scheduler.create_schedule(**arguments)
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConflictException":
            raise
        scheduler.update_schedule(**arguments)  # an edited config: its new upload
    _remove_rule(aws, rule_name(config_path))
    return name


def _remove_schedule(aws: Any, name: str) -> None:
    try:
        aws.client("scheduler", REGION).delete_schedule(Name=name, GroupName=GROUP)
    except ClientError as error:
        if error.response["Error"]["Code"] != "ResourceNotFoundException":
            raise


def _remove_rule(aws: Any, name: str) -> None:
    events = aws.client("events", REGION)
    try:
        targets = events.list_targets_by_rule(Rule=name).get("Targets", [])
    except ClientError as error:
        if error.response["Error"]["Code"] != "ResourceNotFoundException":
            raise
        return
    if targets:
        events.remove_targets(Rule=name, Ids=[t["Id"] for t in targets])
    events.delete_rule(Name=name)
