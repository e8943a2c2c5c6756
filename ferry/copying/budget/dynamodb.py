"""The copy budget's slots and line in the pipeline's state table
(``ferry.replicas.ledger.dynamodb``'s).

One partition, ``copy-budget``: a slot is the item ``slot#<nn>``, a waiting claim the item
``wait#<event id>``. A claim reads the partition (one strongly consistent ``Query``), decides
(``ferry.copying.budget.decide``) and takes its slot with a conditional write that holds only if the
slot is still as it read it; when another claim took it first, this one waits and asks again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ferry.config import Priority
from ferry.copying.budget import (
    Answer,
    CopyBudget,
    Gone,
    Holder,
    Waiter,
    decide,
    holder_for,
    queued,
    wait_seconds,
)

#: The budget's partition key in the state table (the Claim copy slot function's role may
#: touch these items and no other).
BUDGET_KEY = "copy-budget"
SLOT_PREFIX = "slot#"
WAIT_PREFIX = "wait#"


class DynamoDbSlots:
    """The budget in the state table (see the module's key design)."""

    def __init__(self, client: Any, table_name: str):
        self.client = client
        self.table_name = table_name

    def claim(
        self, budget: CopyBudget, event_id: str, priority: Priority, now: datetime,
        owner: str | None = None, gone: Gone = lambda holder: False,
    ) -> Answer:  # fmt: skip
        holders, waiters = self._read()
        decision = decide(budget, event_id, priority, now, owner, holders, waiters, gone)
        if decision.take is not None and not self._take(
            holder_for(budget, decision, now), decision.previous
        ):
            # Another claim took the slot between the read and the write: wait in line.
            self._wait(decision.claimant)
            waited = decision.answer.waited_seconds
            return Answer(
                False, None, priority, waited, wait_seconds(budget, waited),
                queued([*(w for w in waiters if w.event_id != event_id), decision.claimant], now),
            )  # fmt: skip
        if decision.answer.granted:
            self._delete(WAIT_PREFIX + event_id)
        else:
            self._wait(decision.claimant)
        return decision.answer

    def release(self, event_id: str) -> bool:
        holders, _ = self._read()
        freed = False
        for holder in holders:
            if holder.event_id != event_id:
                continue
            try:
                self.client.delete_item(
                    TableName=self.table_name,
                    Key=_key(_slot_key(holder.slot)),
                    ConditionExpression="eventId = :event",
                    ExpressionAttributeValues={":event": {"S": event_id}},
                )
                freed = True
            except self.client.exceptions.ConditionalCheckFailedException:
                pass  # taken over meanwhile: no longer this event's
        self._delete(WAIT_PREFIX + event_id)
        return freed

    def holders(self) -> list[Holder]:
        return self._read()[0]

    def waiting(self) -> list[Waiter]:
        return self._read()[1]

    # -- items

    def _read(self) -> tuple[list[Holder], list[Waiter]]:
        holders, waiters = [], []
        arguments: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": BUDGET_KEY}},
            "ConsistentRead": True,
        }
        while True:
            page = self.client.query(**arguments)
            for item in page.get("Items", []):
                sort_key = item["sk"]["S"]
                if sort_key.startswith(SLOT_PREFIX):
                    holders.append(_holder(item))
                elif sort_key.startswith(WAIT_PREFIX):
                    waiters.append(_waiter(item))
            if "LastEvaluatedKey" not in page:
                return sorted(holders, key=lambda h: h.slot), waiters
            arguments["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _take(self, holder: Holder, previous: Holder | None) -> bool:
        """Write ``holder`` if the slot is as read: free, or still ``previous``'s."""
        if previous is None:
            condition, values = "attribute_not_exists(pk)", None
        else:
            condition = "eventId = :previous AND expiresAt = :expires"
            values = {
                ":previous": {"S": previous.event_id},
                ":expires": {"N": _epoch(previous.expires_at)},
            }
        item = {
            **_key(_slot_key(holder.slot)),
            "eventId": {"S": holder.event_id},
            "priority": {"S": holder.priority.value},
            "acquiredAt": {"N": _epoch(holder.acquired_at)},
            "expiresAt": {"N": _epoch(holder.expires_at)},
            **({"owner": {"S": holder.owner}} if holder.owner else {}),
        }
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression=condition,
                **({"ExpressionAttributeValues": values} if values else {}),
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _wait(self, waiter: Waiter) -> None:
        self.client.put_item(
            TableName=self.table_name,
            Item={
                **_key(WAIT_PREFIX + waiter.event_id),
                "eventId": {"S": waiter.event_id},
                "priority": {"S": waiter.priority.value},
                "enqueuedAt": {"N": _epoch(waiter.enqueued_at)},
                "seenAt": {"N": _epoch(waiter.seen_at)},
                **({"owner": {"S": waiter.owner}} if waiter.owner else {}),
            },
        )

    def _delete(self, sort_key: str) -> None:
        self.client.delete_item(TableName=self.table_name, Key=_key(sort_key))


def _key(sort_key: str) -> dict[str, Any]:
    return {"pk": {"S": BUDGET_KEY}, "sk": {"S": sort_key}}


def _slot_key(slot: int) -> str:
    return f"{SLOT_PREFIX}{slot:04d}"


def _epoch(moment: datetime) -> str:
    return f"{moment.timestamp():.6f}"


def _moment(item: dict[str, Any], name: str) -> datetime:
    return datetime.fromtimestamp(float(item[name]["N"]), UTC)


def _holder(item: dict[str, Any]) -> Holder:
    return Holder(
        slot=int(item["sk"]["S"].removeprefix(SLOT_PREFIX)),
        event_id=item["eventId"]["S"],
        priority=Priority(item["priority"]["S"]),
        acquired_at=_moment(item, "acquiredAt"),
        expires_at=_moment(item, "expiresAt"),
        owner=item.get("owner", {}).get("S"),
    )


def _waiter(item: dict[str, Any]) -> Waiter:
    return Waiter(
        event_id=item["eventId"]["S"],
        priority=Priority(item["priority"]["S"]),
        enqueued_at=_moment(item, "enqueuedAt"),
        seen_at=_moment(item, "seenAt"),
        owner=item.get("owner", {}).get("S"),
    )
