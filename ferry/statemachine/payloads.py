"""What travels between the states: the rules every payload model keeps.

Each function's input and result is one model, in the module of its group:
``replication_payloads`` (the replication definition's functions), ``housekeeping_payloads``
(the housekeeping definition's), ``feed_payloads`` (the change window and the feeds that
start it), ``check_payloads`` (``ferry doctor``'s checks through deployed functions and the
freshness check) and ``failover_payloads`` (the functions ``ferry failover`` and ``ferry
failback`` invoke); ``ferry.statemachine.PAYLOADS`` names each function's pair.

The names on the wire are the models' fields in camelCase (``partitions_to_add`` →
``partitionsToAdd``): the state machine's ``Parameters``, ``ResultSelector`` and ``$.…``
paths read them; ``tests/unit/test_state_payloads.py`` holds every path of the definitions
to these models and ``tests/integration/test_state_trail.py`` every handler's result.
Handlers validate their event into the input model and return
``result.model_dump(mode="json")``.

Inputs ignore keys they do not name (a state's input is often the whole execution input);
results are exactly their fields, in the order a consumer reads them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainSerializer
from pydantic.alias_generators import to_camel

#: A moment as the payloads carry it: ISO 8601 with its offset (``datetime.isoformat``).
Moment = Annotated[datetime, PlainSerializer(datetime.isoformat, return_type=str)]


class Payload(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        frozen=True,
        # A model's validator and serializer are built when it is first used: a function's
        # cold start and a run build the payloads they carry, not their whole group's.
        defer_build=True,
    )


class Input(Payload):
    model_config = ConfigDict(extra="ignore")


class Result(Payload):
    model_config = ConfigDict(extra="forbid")


# -- the trigger ------------------------------------------------------------------------------


def trigger_time(trigger: Any) -> datetime | None:
    """When the event that started a run happened: an S3 event's ``time``, a schedule's
    ``scheduledTime``; None for a run started by hand (or a time that does not parse)."""
    if not isinstance(trigger, dict):
        return None
    return optional_time(trigger.get("time") or trigger.get("scheduledTime"))


def optional_time(text: Any) -> datetime | None:
    """An ISO-8601 time (AWS's events), or epoch seconds (the emulator's S3 events)."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            return datetime.fromtimestamp(float(text), UTC)
        except (ValueError, OverflowError):
            return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
