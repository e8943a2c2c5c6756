"""A Hive metastore's notification log, read through Thrift.

A metastore with Hive's ``DbNotificationListener`` records each committed change (a table
created, partitions added, ...) as an event with an increasing id, and deletes events older
than ``hive.metastore.event.db.listener.timetolive``. A reader keeps the last id it has seen
and asks for the events after it; when the events it has not read yet were deleted first,
the log cannot say what changed, and the reader must compare the catalogs in full instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from hmsclient.genthrift.hive_metastore import ttypes

from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.core.errors import NotificationLogGapError

MAX_EVENTS = 1000  # per read; a metastore builds the whole answer in memory


@dataclass(frozen=True)
class HiveEvent:
    """One event of the log, named as Hive 2.3 names it (``ADD_PARTITION``, ``INSERT``, ...).

    ``partitions`` holds the values of each partition the event is about, in the table's
    partition key order; it is empty for database and table events.
    """

    event_id: int
    time: datetime
    type: str
    database: str | None
    table: str | None
    partitions: tuple[tuple[str, ...], ...] = ()


class HiveNotificationLog:
    """The notification log of the metastore behind ``catalog``, read over its connections."""

    def __init__(self, catalog: HiveMetastoreCatalog):
        self.catalog = catalog

    def current_event_id(self) -> int:
        """The id of the newest event (0 when the log has never held one)."""
        return self.catalog.call(lambda client: client.get_current_notificationEventId()).eventId

    def oldest_event_id(self) -> int | None:
        """The id of the oldest event the log still keeps; None when it keeps none."""
        request = ttypes.NotificationEventRequest(lastEvent=0, maxEvents=1)
        events = self.catalog.call(lambda client: client.get_next_notification(request)).events
        return events[0].eventId if events else None

    def events_after(self, last_id: int, max_events: int = MAX_EVENTS) -> list[HiveEvent]:
        """Up to ``max_events`` events after ``last_id``, oldest first.

        Raises ``NotificationLogGapError`` when the log no longer holds the event right after
        ``last_id`` although newer ones were written: the check Hive's own client makes
        since Hive 3. A ``last_id`` beyond the newest event (a log started anew) is one too.
        """
        current_id = self.current_event_id()
        request = ttypes.NotificationEventRequest(lastEvent=last_id, maxEvents=max_events)
        events = self.catalog.call(lambda client: client.get_next_notification(request)).events
        events = events or []
        first_id = events[0].eventId if events else None
        missing = last_id < current_id and (first_id is None or first_id > last_id + 1)
        if missing or last_id > current_id:
            raise NotificationLogGapError(self.catalog.name, last_id, first_id, current_id)
        return [event_from_thrift(event) for event in events]


def event_from_thrift(event: ttypes.NotificationEvent) -> HiveEvent:
    """A typed event; partition values come from the fields of Hive's JSON message."""
    return HiveEvent(
        event_id=event.eventId,
        time=datetime.fromtimestamp(event.eventTime, UTC),
        type=event.eventType,
        database=event.dbName,
        table=event.tableName,
        partitions=_partition_values(event.eventType, json.loads(event.message)),
    )


def _partition_values(event_type: str, message: dict) -> tuple[tuple[str, ...], ...]:
    """The partitions of a JSONMessageFactory message: each a key → value map of Hive's,
    written in the table's partition key order."""
    match event_type:
        case "ADD_PARTITION" | "DROP_PARTITION":
            specs = message.get("partitions") or []
        case "ALTER_PARTITION":
            specs = [message["keyValues"]]
        case "INSERT":  # into a partition, or into an unpartitioned table
            specs = [message["partKeyVals"]] if message.get("partKeyVals") else []
        case _:
            specs = []
    return tuple(tuple(spec.values()) for spec in specs)
