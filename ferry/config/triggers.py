"""What starts a replication of the config besides a person: ``triggers``, a schedule and
S3 objects. What each trigger becomes on AWS and locally is ``ferry.triggers``.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator, model_validator

from ferry.config.base import _Model
from ferry.config.checks import check_bucket_name, check_region
from ferry.config.schedules import check_schedule_expression, check_time_zone


class ScheduleTrigger(_Model):
    """``triggers.schedule``: runs at the times of a cron or rate expression, in a time zone.

    An EventBridge Scheduler schedule on AWS (``ferry.triggers.scheduled_input``); the local
    runtime fires no schedules.
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
    ``prefix`` and ends with ``suffix`` starts a run (``ferry.triggers.s3_event_pattern``).

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


class Triggers(_Model):
    """What starts a replication of the config besides a person: ``schedule`` and ``s3``.

    Ferry's own key. The CDK stack deploys them; ``ferry local trigger`` installs the S3
    triggers into the local runtime.
    """

    schedule: ScheduleTrigger | None = None
    s3: tuple[S3Trigger, ...] = ()

    @field_validator("s3", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

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
        return self.schedule is not None or bool(self.s3)
