"""A Map state's items in the in-process driver: up to the state's ``MaxConcurrency`` at once.

Step Functions runs a Map's iterations concurrently, at most ``MaxConcurrency`` of them
(none given, or 0: as many as it can). Here a Map that names a ``MaxConcurrency`` above one
runs that many items at a time on threads (the S3 server-side copy's batches: 16); a Map that
names none runs its items one after another in the calling thread. That is the per-table Map:
unbounded on AWS, where each table is its own child execution, but in one process every table
at once would plan, copy and print over each other, and Ctrl-C aborts the one table in hand.

Failures as a Map Run applies them: with no tolerated failures, the first failed item fails
the Map (``States.ExceedToleratedFailureThreshold``): no item starts after it, and the items
already running finish (a thread cannot be stopped part-way; each is a retryable step that
records what it did). With a tolerance, every item runs and the share that failed is compared
with it at the end. Results stay in item order whatever order the items finish in.

Ctrl-C reaches the calling thread only: no item starts after it, the running ones finish,
then the interruption goes on up, to the table's abort.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from typing import Any

from ferry.core.errors import StateError

logger = logging.getLogger(__name__)

#: Runs one item: ``(index, value)`` → its output; raises ``StateError`` when it failed.
RunItem = Callable[[int, Any], Any]


def concurrency(state: dict[str, Any]) -> int:
    """How many of the Map ``state``'s items run at once here: its ``MaxConcurrency``, one
    when it names none (see the module's docstring)."""
    return max(1, int(state.get("MaxConcurrency") or 1))


def run_items(
    name: str, values: Sequence[Any], run_item: RunItem, *, limit: int, tolerated: float
) -> list[dict[str, Any]]:
    """Run every value of the Map ``name``, at most ``limit`` at once; each item's record
    (``index``, ``input``, ``status``, ``start``, ``stop``, ``output`` or ``error`` and
    ``cause``), in item order. Raises ``States.ExceedToleratedFailureThreshold`` as a Map Run
    does when the failures pass ``tolerated`` (a percentage)."""
    if limit <= 1 or len(values) <= 1:
        children = []
        for index, value in enumerate(values):
            children.append(_child(run_item, index, value))
            _fail_fast(name, children[-1], tolerated)
    else:
        children = _concurrently(name, values, run_item, limit, tolerated)
    failed = sum(1 for child in children if child["status"] == "FAILED")
    if failed and failed * 100 > tolerated * len(children):
        raise StateError(
            "States.ExceedToleratedFailureThreshold",
            f"{failed} of {len(children)} items of {name} failed",
        )
    return children


def _concurrently(
    name: str, values: Sequence[Any], run_item: RunItem, limit: int, tolerated: float
) -> list[dict[str, Any]]:
    waiting = list(enumerate(values))[::-1]
    running: dict[Future[dict[str, Any]], int] = {}
    children: dict[int, dict[str, Any]] = {}
    stopped = False
    pool = ThreadPoolExecutor(min(limit, len(values)), thread_name_prefix="ferry-map")
    try:
        while waiting or running:
            while waiting and not stopped and len(running) < limit:
                index, value = waiting.pop()
                running[pool.submit(_child, run_item, index, value)] = index
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                child = future.result()
                children[running.pop(future)] = child
                # No tolerance: the first failure fails the Map; nothing more starts.
                stopped = stopped or (child["status"] == "FAILED" and not tolerated)
    except KeyboardInterrupt:
        logger.warning("%s: interrupted; the items running finish first", name)
        raise
    finally:
        pool.shutdown(wait=True)
    ordered = [children[index] for index in sorted(children)]
    for child in ordered:
        _fail_fast(name, child, tolerated)
    return ordered


def _fail_fast(name: str, child: dict[str, Any], tolerated: float) -> None:
    if child["status"] == "FAILED" and not tolerated:
        # As a Map Run whose failures pass its tolerance (none, by default).
        raise StateError(
            "States.ExceedToleratedFailureThreshold",
            f"The specified tolerated failure threshold was exceeded: item {child['index']} "
            f"of {name} failed with {child['error']}: {child['cause']}",
        )


def _child(run_item: RunItem, index: int, value: Any) -> dict[str, Any]:
    started = _now()
    try:
        output = run_item(index, value)
    except StateError as error:
        return {"index": index, "input": value, "status": "FAILED", "start": started,
                "stop": _now(), "error": error.error, "cause": error.cause}  # fmt: skip
    return {"index": index, "input": value, "status": "SUCCEEDED", "start": started,
            "stop": _now(), "output": output}  # fmt: skip


def _now() -> str:
    return datetime.now(UTC).isoformat()
