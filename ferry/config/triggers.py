"""What starts a replication of the config besides a person: ``triggers``, a schedule, S3
objects and the source catalog's own changes. What each trigger becomes on AWS and locally is
``ferry.feeds.trigger_events``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import field_serializer, field_validator, model_validator

from ferry.config.base import _Model
from ferry.config.checks import check_bucket_name, check_region
from ferry.config.schedules import check_schedule_expression, check_time_zone
from ferry.core.duration import format_duration, parse_duration


class ScheduleTrigger(_Model):
    """``triggers.schedule``: runs at the times of a cron or rate expression, in a time zone.

    An EventBridge Scheduler schedule on AWS (``ferry.feeds.trigger_events.scheduled_input``); the
    local runtime fires no schedules.
    """

    expression: str
    #: The IANA time zone EventBridge Scheduler evaluates the expression in.
    time_zone: str = "UTC"

    @field_validator("expression")
    @classmethod
    def _expression(cls, value: str) -> str:
        return check_schedule_expression(value)

    @field_validator("time_zone")
    @classmethod
    def _time_zone(cls, value: str) -> str:
        return check_time_zone(value)


class S3Trigger(_Model):
    """One of ``triggers.s3``: an object created in ``bucket`` whose key starts with
    ``prefix`` and ends with ``suffix`` starts a run
    (``ferry.feeds.trigger_events.s3_event_pattern``).

    ``region`` is the bucket's region when it is not the pipeline's (S3 sends its events to
    EventBridge in the bucket's region: cross-region disaster recovery).
    """

    bucket: str
    prefix: str = ""
    #: The marker a writer creates last; "" starts a run on every object.
    suffix: str = "_SUCCESS"
    region: str | None = None

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, value: str) -> str:
        return check_bucket_name(value)

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if value.startswith("s3://"):
            raise ValueError(
                f"{value!r}: give the start of the keys (e.g. warehouse/sales.db/), "
                "without s3:// and the bucket"
            )
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        return None if value is None else check_region(value)


#: The longest merge window: past it a burst is better replicated in pieces than awaited.
MAX_WINDOW = timedelta(minutes=15)
#: The Hive poller's interval bounds: the notification log is read over Thrift each time.
MIN_POLL_INTERVAL = timedelta(seconds=1)
MAX_POLL_INTERVAL = timedelta(seconds=50)


class CatalogEventsTrigger(_Model):
    """``triggers.catalog-events``: a change in the source catalog starts a replication of the
    table it changed (``ferry.feeds``).

    A Glue source sends its changes to EventBridge (an EventBridge rule); a Hive source's
    notification log is polled every ``poll-interval`` (refused for a Glue source:
    ``check_catalog_events_source``). The changes of a table are merged for ``window`` after
    the first of a burst: one run replicates them all. Both are ISO-8601 durations: a bare
    number (which unit?) or a boolean is refused.
    """

    #: How long after the first change of a burst the table's run starts (ISO 8601).
    window: timedelta = timedelta(seconds=30)
    #: How often the Hive poller reads the notification log (ISO 8601).
    poll_interval: timedelta = timedelta(seconds=5)

    @field_validator("window", "poll_interval", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        if isinstance(value, timedelta):  # built in code, not read from a file
            return value
        if isinstance(value, str):
            return parse_duration(value)
        if isinstance(value, bool):
            shown = f"{str(value).lower()} is not a duration"
        else:
            shown = f"{value!r} is not a duration (in which unit?)"
        raise ValueError(f"{shown}: write an ISO-8601 duration such as PT5S (or PT1M)")

    @field_validator("window")
    @classmethod
    def _window(cls, value: timedelta) -> timedelta:
        if not timedelta(0) <= value <= MAX_WINDOW:
            raise ValueError(
                f"{format_duration(value)} is not a merge window: give one from PT0S to "
                f"{format_duration(MAX_WINDOW)}, e.g. PT30S"
            )
        return value

    @field_validator("poll_interval")
    @classmethod
    def _poll_interval(cls, value: timedelta) -> timedelta:
        if not MIN_POLL_INTERVAL <= value <= MAX_POLL_INTERVAL:
            raise ValueError(
                f"{format_duration(value)} is not a poll interval: give one from "
                f"{format_duration(MIN_POLL_INTERVAL)} to {format_duration(MAX_POLL_INTERVAL)}"
            )
        return value

    @field_serializer("window", "poll_interval")
    def _spelled(self, value: timedelta) -> str:
        return format_duration(value)


class Triggers(_Model):
    """What starts a replication of the config besides a person: ``schedule``, ``s3`` and
    ``catalog-events``.

    Ferry's own key. The CDK stack deploys them; ``ferry local trigger`` installs the S3
    triggers into the local runtime.
    """

    schedule: ScheduleTrigger | None = None
    s3: tuple[S3Trigger, ...] = ()
    catalog_events: CatalogEventsTrigger | None = None

    @field_validator("s3", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @field_validator("catalog_events", mode="before")
    @classmethod
    def _defaults_when_empty(cls, value: Any) -> Any:
        # ``catalog-events:`` with nothing under it declares the trigger with its defaults,
        # as ``catalog-events: {}`` does.
        return {} if value is None else value

    @model_validator(mode="after")
    def _distinct(self) -> Triggers:
        # Two equal rules would start two runs for each object.
        for index, trigger in enumerate(self.s3):
            first = self.s3.index(trigger)
            if first != index:
                raise ValueError(
                    f"s3[{first}] and s3[{index}] are the same trigger; "
                    "each object would start two runs"
                )
        return self

    @property
    def declared(self) -> bool:
        """True when the config declares any trigger."""
        return self.schedule is not None or bool(self.s3) or self.catalog_events is not None


def check_catalog_events_source(triggers: Triggers, source_is_glue: bool) -> None:
    """A ``poll-interval`` for a source that is not polled is refused (``ValueError``): the
    Glue Data Catalog sends its changes to EventBridge; only a Hive source is polled."""
    declared = triggers.catalog_events
    if source_is_glue and declared is not None and "poll_interval" in declared.model_fields_set:
        raise ValueError(
            "triggers.catalog-events.poll-interval: the source catalog is the Glue Data "
            "Catalog, which sends its changes to EventBridge: nothing is polled; remove "
            "poll-interval (it applies to a Hive metastore source only)"
        )
