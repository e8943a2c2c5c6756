"""The state store in one DynamoDB table: the pipeline's (and the local runtime's emulator's).

The key design is ``ferry.replicas.ledger``'s table; the table itself, created and checked,
``ferry.replicas.ledger.dynamodb_table``'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ferry.core.errors import StateStoreError
from ferry.replicas.ledger.dynamodb_table import check_state_table
from ferry.replicas.ledger.records import (
    CREATED_PREFIX,
    LEDGER_PREFIX,
    LOCK_KEY,
    OUTCOME_KEY,
    SINCE_KEY,
    CreatedSnapshot,
    Lease,
    LedgerEntry,
    Outcome,
    iso,
    locked_error,
    moment_of,
)
from ferry.storage import retry_policy

#: DynamoDB's BatchWriteItem takes at most 25 items per call.
_BATCH = 25
#: BatchGetItem takes at most 100 keys per call.
_GET_BATCH = 100
#: How many times the items or keys a batch request left unprocessed (throttled) are sent
#: again: the one bound of ``ferry.storage.retry_policy``.
_UNPROCESSED_RETRIES = retry_policy.UNPROCESSED_RETRIES


class DynamoDbStateStore:
    """Ledger, locks and outcomes in one DynamoDB table (see the module's key design)."""

    def __init__(self, client: Any, table_name: str):
        self.client = client
        self.table_name = table_name
        self.description = f"dynamodb:{table_name}"

    def check(self, named: str | None = None) -> None:
        """The table exists and has Ferry's key (``DescribeTable``), else ``StateStoreError``."""
        check_state_table(
            self.client, self.table_name, named or f"DynamoDB table {self.table_name}"
        )

    # -- ledger

    def record(self, entries: Sequence[LedgerEntry]) -> None:
        requests = [
            {
                "PutRequest": {
                    "Item": {
                        "pk": {"S": entry.replica},
                        "sk": {"S": LEDGER_PREFIX + entry.path},
                        "path": {"S": entry.path},
                        "eventId": {"S": entry.event_id},
                        "replicaTable": {"S": entry.replica_table},
                        "recordedAt": {"S": iso(entry.recorded_at)},
                        **({"snapshot": {"S": entry.snapshot}} if entry.snapshot else {}),
                        **({"intent": {"BOOL": True}} if entry.intent else {}),
                    }
                }
            }
            for entry in entries
        ]
        for start in range(0, len(requests), _BATCH):
            self._write_batch(requests[start : start + _BATCH])

    def _write_batch(self, requests: list[dict[str, Any]]) -> None:
        """One BatchWriteItem; what it left unprocessed (throttled) is sent again, a bounded
        number of times with a growing pause (``StateStoreError`` past that)."""
        pending, delay = requests, 0.05
        for attempt in range(_UNPROCESSED_RETRIES + 1):
            reply = self.client.batch_write_item(RequestItems={self.table_name: pending})
            pending = reply.get("UnprocessedItems", {}).get(self.table_name, [])
            if not pending:
                return
            if attempt == _UNPROCESSED_RETRIES:
                raise StateStoreError(
                    f"DynamoDB table {self.table_name}: {len(pending)} ledger entries stayed "
                    f"unprocessed after {_UNPROCESSED_RETRIES} retries (throttled)"
                )
            time.sleep(delay)  # throttled: back off and send what was not written
            delay = min(delay * 2, 2.0)

    def entries(self, replica: str) -> list[LedgerEntry]:
        found = list(
            LedgerEntry(
                replica=item["pk"]["S"],
                path=item["path"]["S"],
                event_id=item["eventId"]["S"],
                replica_table=item["replicaTable"]["S"],
                recorded_at=moment_of(item["recordedAt"]["S"]),
                snapshot=item.get("snapshot", {}).get("S"),
                intent=item.get("intent", {}).get("BOOL", False),
            )
            for item in self._items(replica, LEDGER_PREFIX)
        )
        return sorted(found, key=lambda entry: entry.path)

    def _items(self, replica: str, prefix: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        arguments: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": replica}, ":prefix": {"S": prefix}},
            "ConsistentRead": True,
        }
        while True:
            page = self.client.query(**arguments)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            arguments["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def forget(self, replica: str, path: str) -> None:
        self.client.delete_item(
            TableName=self.table_name,
            Key={"pk": {"S": replica}, "sk": {"S": LEDGER_PREFIX + path}},
        )

    def record_created(self, snapshot: CreatedSnapshot) -> None:
        item = {
            "pk": {"S": snapshot.replica},
            "sk": {"S": CREATED_PREFIX + snapshot.path},
            "path": {"S": snapshot.path},
            "eventId": {"S": snapshot.event_id},
            "root": {"S": snapshot.root},
            "createdAt": {"S": iso(snapshot.created_at)},
        }
        if snapshot.source_location:
            item["sourceLocation"] = {"S": snapshot.source_location}
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item={
                    "pk": {"S": snapshot.replica},
                    "sk": {"S": SINCE_KEY},
                    "since": {"S": iso(snapshot.created_at)},
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            pass  # recorded since earlier
        self.client.put_item(TableName=self.table_name, Item=item)

    def recording_since(self, replica: str) -> datetime | None:
        item = self.client.get_item(
            TableName=self.table_name,
            Key={"pk": {"S": replica}, "sk": {"S": SINCE_KEY}},
            ConsistentRead=True,
        ).get("Item")
        return moment_of(item["since"]["S"]) if item else None

    def created(self, replica: str) -> list[CreatedSnapshot]:
        found = [
            CreatedSnapshot(
                replica=item["pk"]["S"],
                path=item["path"]["S"],
                event_id=item["eventId"]["S"],
                root=item["root"]["S"],
                source_location=item.get("sourceLocation", {}).get("S"),
                created_at=moment_of(item["createdAt"]["S"]),
            )
            for item in self._items(replica, CREATED_PREFIX)
        ]
        return sorted(found, key=lambda snapshot: snapshot.path)

    def forget_created(self, replica: str, path: str) -> None:
        self.client.delete_item(
            TableName=self.table_name,
            Key={"pk": {"S": replica}, "sk": {"S": CREATED_PREFIX + path}},
        )

    # -- outcomes

    def record_success(
        self,
        replica: str,
        replica_table: str,
        event_id: str,
        at: datetime,
        source_version: str | None,
        source_read_at: datetime | None,
    ) -> None:
        item = {
            "pk": {"S": replica},
            "sk": {"S": OUTCOME_KEY},
            "replicaTable": {"S": replica_table},
            "lastSuccessAt": {"S": iso(at)},
            "lastSuccessEvent": {"S": event_id},
        }
        if source_version:
            item["sourceVersion"] = {"S": source_version}
        if source_read_at:
            item["sourceReadAt"] = {"S": iso(source_read_at)}
        self.client.put_item(TableName=self.table_name, Item=item)  # failures cleared

    def record_failure(
        self, replica: str, replica_table: str, event_id: str, at: datetime, error: str
    ) -> None:
        # One update: the first failure after a success sets failingSince, later ones keep
        # it; the last success's attributes stay.
        self.client.update_item(
            TableName=self.table_name,
            Key={"pk": {"S": replica}, "sk": {"S": OUTCOME_KEY}},
            UpdateExpression=(
                "SET replicaTable = :table, failingSince = if_not_exists(failingSince, :at), "
                "lastFailureAt = :at, lastFailureEvent = :event, lastError = :error"
            ),
            ExpressionAttributeValues={
                ":table": {"S": replica_table},
                ":at": {"S": iso(at)},
                ":event": {"S": event_id},
                ":error": {"S": error or "unknown error"},
            },
        )

    def outcomes(self, replicas: Sequence[str]) -> dict[str, Outcome]:
        """BatchGetItem in chunks of 100 keys; unprocessed keys asked again, a bounded
        number of times with a growing pause (``StateStoreError`` past that)."""
        wanted = list(dict.fromkeys(replicas))
        found: dict[str, Outcome] = {}
        for start in range(0, len(wanted), _GET_BATCH):
            keys = [
                {"pk": {"S": replica}, "sk": {"S": OUTCOME_KEY}}
                for replica in wanted[start : start + _GET_BATCH]
            ]
            delay = 0.05
            for attempt in range(_UNPROCESSED_RETRIES + 1):
                reply = self.client.batch_get_item(
                    RequestItems={self.table_name: {"Keys": keys, "ConsistentRead": True}}
                )
                for item in reply.get("Responses", {}).get(self.table_name, []):
                    found[item["pk"]["S"]] = _outcome_item(item)
                keys = reply.get("UnprocessedKeys", {}).get(self.table_name, {}).get("Keys", [])
                if not keys:
                    break
                if attempt == _UNPROCESSED_RETRIES:
                    raise StateStoreError(
                        f"DynamoDB table {self.table_name}: {len(keys)} outcomes stayed "
                        f"unprocessed after {_UNPROCESSED_RETRIES} retries (throttled)"
                    )
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
        return found

    # -- locks

    def acquire(
        self,
        replica: str,
        holder: str,
        now: datetime,
        lease: timedelta,
        owner: str | None = None,
        stale: Callable[[Lease], bool] = lambda lease: False,
    ) -> Lease:
        taken = Lease(replica, holder, now, now + lease, owner)
        if self._put_lease(
            taken,
            "attribute_not_exists(pk) OR expiresAt <= :now OR holder = :holder",
            {":now": {"N": _epoch(now)}, ":holder": {"S": holder}},
        ):
            return taken
        current = self.lease(replica)
        if current is None:  # released meanwhile: try once more
            return self.acquire(replica, holder, now, lease, owner, stale)
        if stale(current) and self._put_lease(
            taken,
            "holder = :previous AND expiresAt = :expires",
            {":previous": {"S": current.holder}, ":expires": {"N": _epoch(current.expires_at)}},
        ):
            return taken
        raise locked_error(current)

    def _put_lease(self, lease: Lease, condition: str, values: dict[str, Any]) -> bool:
        item = {
            "pk": {"S": lease.replica},
            "sk": {"S": LOCK_KEY},
            "holder": {"S": lease.holder},
            "acquiredAt": {"S": iso(lease.acquired_at)},
            "expiresAt": {"N": _epoch(lease.expires_at)},
            "expires": {"S": iso(lease.expires_at)},
        }
        if lease.owner:
            item["owner"] = {"S": lease.owner}
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def release(self, replica: str, holder: str) -> bool:
        try:
            self.client.delete_item(
                TableName=self.table_name,
                Key={"pk": {"S": replica}, "sk": {"S": LOCK_KEY}},
                ConditionExpression="holder = :holder",
                ExpressionAttributeValues={":holder": {"S": holder}},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False  # free, or another replication's: not ours to release
        return True

    def lease(self, replica: str) -> Lease | None:
        item = self.client.get_item(
            TableName=self.table_name,
            Key={"pk": {"S": replica}, "sk": {"S": LOCK_KEY}},
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            return None
        return Lease(
            replica=replica,
            holder=item["holder"]["S"],
            acquired_at=moment_of(item["acquiredAt"]["S"]),
            expires_at=datetime.fromtimestamp(float(item["expiresAt"]["N"]), UTC),
            owner=item.get("owner", {}).get("S"),
        )


def _outcome_item(item: dict[str, Any]) -> Outcome:
    def text(name: str) -> str | None:
        return item.get(name, {}).get("S")

    def moment(name: str) -> datetime | None:
        value = text(name)
        return moment_of(value) if value else None

    return Outcome(
        replica=item["pk"]["S"],
        replica_table=text("replicaTable") or "",
        last_success_at=moment("lastSuccessAt"),
        last_success_event=text("lastSuccessEvent"),
        source_version=text("sourceVersion"),
        source_read_at=moment("sourceReadAt"),
        failing_since=moment("failingSince"),
        last_failure_at=moment("lastFailureAt"),
        last_failure_event=text("lastFailureEvent"),
        last_error=text("lastError"),
    )


def _epoch(moment: datetime) -> str:
    return f"{moment.timestamp():.6f}"
