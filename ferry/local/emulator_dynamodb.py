"""The AWS emulator's DynamoDB writes one item at a time, as DynamoDB does.

moto evaluates a ``ConditionExpression`` and then stores the item in two steps, and the
emulator answers requests on many threads: two conditional writes racing for one item
(two copy claims for the last slot, two Plans for one replica's lock) could both see the
condition hold and both succeed. DynamoDB applies each conditional write atomically (and a
``TransactWriteItems`` as one), so one of them fails with
``ConditionalCheckFailedException``. Every write of the backend runs under one lock here.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

#: The backend's writes; reads need no lock (an item is replaced whole).
WRITES = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")

_lock = threading.RLock()


def install() -> None:
    from moto.dynamodb.models import DynamoDBBackend

    for name in WRITES:
        method = getattr(DynamoDBBackend, name)
        if getattr(method, "_one_at_a_time", False):
            continue
        setattr(DynamoDBBackend, name, _one_at_a_time(method))


def _one_at_a_time(method: Any) -> Any:
    @functools.wraps(method)
    def write(*args: Any, **kwargs: Any) -> Any:
        with _lock:
            return method(*args, **kwargs)

    write._one_at_a_time = True  # type: ignore[attr-defined]
    return write
