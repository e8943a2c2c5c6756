"""The change feeds' state in the state table: each table's open merge window, and how far
the Hive poller has read each notification log.

Every item is keyed by the config's URI: the object a deployment uploads, named by the
config's content. Two configs never share an item (two with the same file name in two
folders are two objects), and an edited config, a new object, starts feeds of its own: its
poller finds no position and replays the log (``ferry.feeds.intake``).

**A window** (``pk = changes#<config URI>``, ``sk = table#<db.table>``) opens with the
first change of a burst and counts the changes noted since (``changes``). The window's
execution claims the count when its wait is over (``claimed``) and replicates the table;
then it closes the window only if no change came meanwhile (``changes = claimed``), else
it waits once more and runs a follow-up. Every step is one conditional write, so two
intakes, a repeated event or a crashed execution never lose a change nor queue runs. A
window whose execution is gone is given another (``restarts`` counts them, and names them).

**A position** (``pk = feed#<config URI>``, ``sk = position``) is the last event id of a
notification log whose events were handed over; it moves only forward, only from the value
its writer read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ferry.replicas.ledger.records import iso, moment_of

_WINDOW_PREFIX = "changes#"
_TABLE_PREFIX = "table#"
_FEED_PREFIX = "feed#"
_POSITION_KEY = "position"


@dataclass(frozen=True)
class Window:
    """One table's open window: when it opened, the changes noted, the execution's name."""

    config_uri: str
    table: str
    opened: datetime
    changes: int
    #: The earliest change not yet claimed (None: none, or the feed gave no time).
    first_change: datetime | None = None
    kinds: frozenset[str] = frozenset()
    execution: str | None = None
    claimed: int = 0
    #: How many executions were started in place of one that was gone.
    restarts: int = 0


class FeedState:
    """Windows and positions in the DynamoDB state table (``ferry.replicas.ledger``'s key
    design)."""

    def __init__(self, client: Any, table_name: str):
        self.client = client
        self.table_name = table_name

    # -- windows

    def note(
        self,
        config_uri: str,
        table: str,
        count: int,
        first_change: datetime | None,
        kinds: Iterable[str],
        now: datetime,
    ) -> Window:
        """Add ``count`` changes to the table's window, opening it now if none is open."""
        names = {"#changes": "changes", "#opened": "opened", "#kinds": "kinds"}
        values: dict[str, Any] = {
            ":count": {"N": str(count)},
            ":now": {"S": iso(now)},
            ":kinds": {"SS": sorted(set(kinds)) or ["change"]},
        }
        update = "SET #opened = if_not_exists(#opened, :now)"
        if first_change is not None:
            names["#first"] = "firstChange"
            values[":first"] = {"S": iso(first_change)}
            update += ", #first = if_not_exists(#first, :first)"
        reply = self.client.update_item(
            TableName=self.table_name,
            Key=self._window_key(config_uri, table),
            UpdateExpression=f"{update} ADD #changes :count, #kinds :kinds",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
        return _window(config_uri, table, reply["Attributes"])

    def started(self, window: Window, execution: str) -> None:
        """Record the execution that holds ``window`` (unless it closed meanwhile)."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=self._window_key(window.config_uri, window.table),
                UpdateExpression="SET execution = :execution",
                ConditionExpression="opened = :opened",
                ExpressionAttributeValues={
                    ":execution": {"S": execution},
                    ":opened": {"S": iso(window.opened)},
                },
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            pass  # closed (and perhaps opened anew): the next change starts its execution

    def restarted(self, window: Window, execution: str) -> bool:
        """Record ``execution`` in place of the window's own, which is gone; False when the
        window changed hands meanwhile (closed, reopened, or restarted by another)."""
        values: dict[str, Any] = {
            ":execution": {"S": execution},
            ":opened": {"S": iso(window.opened)},
            ":one": {"N": "1"},
        }
        if window.execution is None:
            condition = "opened = :opened AND attribute_not_exists(execution)"
        else:
            condition = "opened = :opened AND execution = :was"
            values[":was"] = {"S": window.execution}
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=self._window_key(window.config_uri, window.table),
                UpdateExpression="SET execution = :execution ADD restarts :one",
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def open_windows(self, config_uri: str) -> list[Window]:
        """The config's open windows (one Query of its partition)."""
        windows: list[Window] = []
        arguments: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": _WINDOW_PREFIX + config_uri}},
            "ConsistentRead": True,
        }
        while True:
            page = self.client.query(**arguments)
            for item in page.get("Items", []):
                table = item["sk"]["S"].removeprefix(_TABLE_PREFIX)
                windows.append(_window(config_uri, table, item))
            if "LastEvaluatedKey" not in page:
                return windows
            arguments["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def window(self, config_uri: str, table: str) -> Window | None:
        item = self.client.get_item(
            TableName=self.table_name,
            Key=self._window_key(config_uri, table),
            ConsistentRead=True,
        ).get("Item")
        return None if item is None else _window(config_uri, table, item)

    def claim(self, config_uri: str, table: str) -> Window | None:
        """Take the changes noted so far for one run; None when the window is closed.

        The claimed window keeps its count; its earliest change is cleared, so that the
        next change noted (a follow-up's) records its own.
        """
        while True:
            window = self.window(config_uri, table)
            if window is None:
                return None
            try:
                self.client.update_item(
                    TableName=self.table_name,
                    Key=self._window_key(config_uri, table),
                    UpdateExpression="SET claimed = :count REMOVE firstChange",
                    ConditionExpression="changes = :count",
                    ExpressionAttributeValues={":count": {"N": str(window.changes)}},
                )
            except self.client.exceptions.ConditionalCheckFailedException:
                continue  # a change arrived between the read and the claim: read again
            return window

    def close(self, config_uri: str, table: str, claimed: int) -> bool:
        """Close the window if no change came after the claim of ``claimed``; else False
        (a follow-up run is due)."""
        try:
            self.client.delete_item(
                TableName=self.table_name,
                Key=self._window_key(config_uri, table),
                ConditionExpression="attribute_not_exists(pk) OR changes = :claimed",
                ExpressionAttributeValues={":claimed": {"N": str(claimed)}},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    # -- positions

    def position(self, config_uri: str) -> int | None:
        """The last event id of the config's notification log handed over; None: never read."""
        item = self.client.get_item(
            TableName=self.table_name,
            Key=self._position_key(config_uri),
            ConsistentRead=True,
        ).get("Item")
        return None if item is None else int(item["eventId"]["N"])

    def advance(self, config_uri: str, read: int | None, to: int, now: datetime) -> bool:
        """Move the position from ``read`` (what this poller read; None: none) to ``to``.

        False, and nothing written, when another poller moved it meanwhile.
        """
        condition = "attribute_not_exists(pk)" if read is None else "eventId = :read"
        values: dict[str, Any] = {":to": {"N": str(to)}, ":now": {"S": iso(now)}}
        if read is not None:
            values[":read"] = {"N": str(read)}
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=self._position_key(config_uri),
                UpdateExpression="SET eventId = :to, advancedAt = :now",
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _window_key(self, config_uri: str, table: str) -> dict[str, Any]:
        return {"pk": {"S": _WINDOW_PREFIX + config_uri}, "sk": {"S": _TABLE_PREFIX + table}}

    def _position_key(self, config_uri: str) -> dict[str, Any]:
        return {"pk": {"S": _FEED_PREFIX + config_uri}, "sk": {"S": _POSITION_KEY}}


def _window(config_uri: str, table: str, item: dict[str, Any]) -> Window:
    first = item.get("firstChange", {}).get("S")
    return Window(
        config_uri=config_uri,
        table=table,
        opened=moment_of(item["opened"]["S"]),
        changes=int(item.get("changes", {}).get("N", "0")),
        first_change=moment_of(first) if first else None,
        kinds=frozenset(item.get("kinds", {}).get("SS", [])),
        execution=item.get("execution", {}).get("S"),
        claimed=int(item.get("claimed", {}).get("N", "0")),
        restarts=int(item.get("restarts", {}).get("N", "0")),
    )
