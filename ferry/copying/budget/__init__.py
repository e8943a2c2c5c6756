"""The environment's copy budget: how many tables copy data at once, critical tables first.

A table's copy (inline, S3 server-side, Spark) holds one **copy slot** from before its first
byte to its Commit or Abort. An environment has ``slots`` of them (its settings'
``copy-budget``); the first ``critical_reserved`` are kept for critical tables: a normal or
bulk copy never takes one, so a critical table never waits for a bulk copy.

A claim that cannot be granted **waits in line** (its priority, when it first asked) and
asks again after ``Answer.wait_seconds`` (the state machine's ``Wait for a copy slot``). It
is granted only when a slot its priority may take is free and no claim ahead of it in line
can take that slot. The line is ordered by *effective* rank — the table's priority, raised
one rank per ``aging`` period waited (so bulk reaches critical's rank after two periods:
nothing waits forever) — then first come, first served.

A slot is a lease like the replica's lock (``ferry.replicas.ledger``): its holder is the event, it
names the execution (or process) that holds it, it expires with the replication's time
limit, and it is taken over once its holder is gone. A waiting claim not renewed for
``STALE_WAITER`` (its execution stopped while it waited) leaves the line.

The rules are here (``grant``); the stores are ``ferry.copying.budget.sqlite`` (``ferry replicate``,
a SQLite file) and ``ferry.copying.budget.dynamodb`` (the pipeline's state table).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from ferry.config import Priority
from ferry.core.errors import ConfigError

#: The default aging period: a waiting claim counts one priority higher after each.
DEFAULT_AGING = timedelta(minutes=15)
#: The default wait between two claims of a table that waits for a slot.
DEFAULT_WAIT_SECONDS = 5
#: The longest wait between two claims (the wait grows with the time waited, so a long
#: wait stays well within an execution's 25,000 history events).
LONGEST_WAIT_SECONDS = 30
#: A waiting claim not renewed for this long has left the line (its execution stopped).
STALE_WAITER = timedelta(seconds=6 * LONGEST_WAIT_SECONDS)


@dataclass(frozen=True)
class CopyBudget:
    """An environment's budget (``infra/settings.py``'s ``copy-budget``)."""

    slots: int
    critical_reserved: int = 0
    aging: timedelta = DEFAULT_AGING
    #: How long a slot is held at most: the replication's time limit.
    lease: timedelta = timedelta(hours=24)
    wait_seconds: int = DEFAULT_WAIT_SECONDS

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ConfigError(f"copy slots: {self.slots} is fewer than one")
        if not 0 <= self.critical_reserved < self.slots:
            raise ConfigError(
                f"critical-reserved-slots: {self.critical_reserved} must be at least 0 and "
                f"fewer than the {self.slots} copy slots (normal and bulk tables need one)"
            )
        if self.aging <= timedelta(0):
            raise ConfigError("priority-aging: give a positive duration, e.g. PT15M")

    def may_take(self, priority: Priority) -> range:
        """The slots a table of ``priority`` may take, in the order it takes them: a critical
        table the reserved ones first (leaving the others to the rest)."""
        if priority is Priority.CRITICAL:
            return range(self.slots)
        return range(self.critical_reserved, self.slots)


@dataclass(frozen=True)
class Holder:
    """A slot's holder: one table's copy."""

    slot: int
    event_id: str
    priority: Priority
    acquired_at: datetime
    expires_at: datetime
    #: The execution (ARN) or process holding it, when it can be told.
    owner: str | None = None


@dataclass(frozen=True)
class Waiter:
    """A claim waiting in line."""

    event_id: str
    priority: Priority
    #: When it first asked: its place in line, and how long it has aged.
    enqueued_at: datetime
    #: When it last asked: a waiter not renewed for ``STALE_WAITER`` has left.
    seen_at: datetime
    owner: str | None = None

    def rank(self, now: datetime, aging: timedelta) -> int:
        """Its priority's rank, one better per aging period waited (0: critical's)."""
        return max(0, self.priority.rank - int((now - self.enqueued_at) / aging))


@dataclass(frozen=True)
class Answer:
    """What a claim got: a slot, or how long to wait before asking again."""

    granted: bool
    slot: int | None
    priority: Priority
    #: Seconds since the claim first asked (0 when granted at once).
    waited_seconds: float
    wait_seconds: int
    #: Claims waiting in line after this one, by priority.
    queued: dict[Priority, int] = field(default_factory=dict)


#: Whether a slot's holder no longer runs (an ended execution, a dead process).
Gone = Callable[[Holder], bool]


class Slots(Protocol):
    """A store of the budget's slots and line (``ferry.copying.budget.sqlite``, ``.dynamodb``)."""

    def claim(
        self, budget: CopyBudget, event_id: str, priority: Priority, now: datetime,
        owner: str | None = None, gone: Gone = lambda holder: False,
    ) -> Answer:  # fmt: skip
        """Take a slot for ``event_id`` (again, when it holds one), or wait in line."""

    def release(self, event_id: str) -> bool:
        """Free the event's slot and leave the line; True when it held a slot."""

    def holders(self) -> list[Holder]:
        """Every slot held, in slot order."""

    def waiting(self) -> list[Waiter]:
        """Every claim in line (stale ones too), in no particular order."""


def line(waiters: Iterable[Waiter], now: datetime, aging: timedelta) -> list[Waiter]:
    """The claims in the order they are served: effective rank, then first come."""
    return sorted(waiters, key=lambda w: (w.rank(now, aging), w.enqueued_at, w.event_id))


def grant(
    budget: CopyBudget,
    claimant: Waiter,
    now: datetime,
    holders: Sequence[Holder],
    waiters: Sequence[Waiter],
    gone: Gone = lambda holder: False,
) -> int | None:
    """The slot ``claimant`` takes now, or None: it waits.

    The free slots (never held, expired, or their holder gone) are handed out down the line:
    each claim takes the first free slot its priority may take; a claim that can take none
    (bulk, when only reserved slots are free) does not hold up those behind it. Whether a
    holder is gone (a call to Step Functions) is asked only when nothing else is free, and
    only of the slots the claimant may take.
    """
    slot = _hand_out(budget, claimant, now, holders, waiters, lambda holder: False)
    if slot is not None:
        return slot
    mine = set(budget.may_take(claimant.priority))
    if not any(h.slot in mine and h.expires_at > now for h in holders):
        return None
    return _hand_out(
        budget, claimant, now, holders, waiters, lambda h: h.slot in mine and gone(h)
    )


def _hand_out(
    budget: CopyBudget, claimant: Waiter, now: datetime, holders: Sequence[Holder],
    waiters: Sequence[Waiter], gone: Gone,
) -> int | None:  # fmt: skip
    held = {h.slot: h for h in holders if h.slot < budget.slots}
    free = [
        slot
        for slot in range(budget.slots)
        if slot not in held or held[slot].expires_at <= now or gone(held[slot])
    ]
    others = [w for w in waiters if w.event_id != claimant.event_id and live(w, now)]
    for waiter in line([*others, claimant], now, budget.aging):
        slot = next((s for s in budget.may_take(waiter.priority) if s in free), None)
        if slot is None:
            continue
        if waiter.event_id == claimant.event_id:
            return slot
        free.remove(slot)
    return None


def live(waiter: Waiter, now: datetime) -> bool:
    """A waiter that asked within ``STALE_WAITER``: still in line."""
    return now - waiter.seen_at < STALE_WAITER


def queued(waiters: Iterable[Waiter], now: datetime) -> dict[Priority, int]:
    """How many live claims wait, by priority (every priority named, 0 when none)."""
    counts = dict.fromkeys(Priority, 0)
    for waiter in waiters:
        if live(waiter, now):
            counts[waiter.priority] += 1
    return counts


def wait_seconds(budget: CopyBudget, waited: float) -> int:
    """How long a waiting claim sleeps before asking again: the budget's wait, growing by
    a tenth of the time waited, at most ``LONGEST_WAIT_SECONDS``."""
    return int(min(LONGEST_WAIT_SECONDS, budget.wait_seconds + waited / 10))


@dataclass(frozen=True)
class Decision:
    """A claim decided on what a store read: the answer, and what the store writes."""

    answer: Answer
    #: The claim as it stands in line (written when it waits, removed when granted).
    claimant: Waiter
    #: The slot to take (None: nothing to take: it waits, or it holds one already).
    take: int | None
    #: The holder the slot had, which the store's write must still find there (None: free).
    previous: Holder | None = None


def decide(
    budget: CopyBudget, event_id: str, priority: Priority, now: datetime, owner: str | None,
    holders: Sequence[Holder], waiters: Sequence[Waiter], gone: Gone = lambda holder: False,
) -> Decision:  # fmt: skip
    """A claim of ``event_id`` against the slots and line a store read (``grant``'s rules)."""
    earlier = next((w for w in waiters if w.event_id == event_id), None)
    claimant = Waiter(event_id, priority, earlier.enqueued_at if earlier else now, now, owner)
    waited = (now - claimant.enqueued_at).total_seconds()
    others = [w for w in waiters if w.event_id != event_id]
    own = next((h for h in holders if h.event_id == event_id), None)
    if own is not None:  # asked again (a retry): it holds its slot already
        return Decision(
            Answer(True, own.slot, priority, waited, 0, queued(others, now)), claimant, None
        )
    slot = grant(budget, claimant, now, holders, waiters, gone)
    if slot is None:
        waiting = queued([*others, claimant], now)
        answer = Answer(False, None, priority, waited, wait_seconds(budget, waited), waiting)
        return Decision(answer, claimant, None)
    previous = next((h for h in holders if h.slot == slot), None)
    answer = Answer(True, slot, priority, waited, 0, queued(others, now))
    return Decision(answer, claimant, slot, previous)


def holder_for(budget: CopyBudget, decision: Decision, now: datetime) -> Holder:
    """The holder a granted decision writes into its slot."""
    claimant = decision.claimant
    assert decision.take is not None
    return Holder(
        decision.take, claimant.event_id, claimant.priority, now, now + budget.lease,
        claimant.owner,
    )  # fmt: skip


@dataclass(frozen=True)
class EnvironmentBudget:
    """What the states' ``StateContext`` is given to claim and free copy slots: the budget and the
    store of its slots. None (no budget): every claim is granted at once."""

    budget: CopyBudget
    slots: Slots
