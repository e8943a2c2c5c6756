"""The copy budget's slots and line in the local SQLite state file
(``ferry.replicas.ledger.sqlite``'s).

Two tables of their own; SQLite's write lock (``BEGIN IMMEDIATE``) makes a claim's read,
decision and write one step across the threads and processes of this machine.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from ferry.config import Priority
from ferry.copying.budget import Answer, CopyBudget, Gone, Holder, Waiter, decide, holder_for

_SCHEMA = """
CREATE TABLE IF NOT EXISTS copy_slots (
    slot INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL,
    priority TEXT NOT NULL,
    acquired_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    owner TEXT
);
CREATE TABLE IF NOT EXISTS copy_waiting (
    event_id TEXT PRIMARY KEY,
    priority TEXT NOT NULL,
    enqueued_at REAL NOT NULL,
    seen_at REAL NOT NULL,
    owner TEXT
);
"""


class SqliteSlots:
    """The budget in a SQLite file (the local state store's, ``<home>/state.sqlite3``)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        connection.executescript(_SCHEMA)
        return connection

    def claim(
        self, budget: CopyBudget, event_id: str, priority: Priority, now: datetime,
        owner: str | None = None, gone: Gone = lambda holder: False,
    ) -> Answer:  # fmt: skip
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            decision = decide(
                budget, event_id, priority, now, owner,
                _holders(connection), _waiting(connection), gone,
            )  # fmt: skip
            if decision.take is not None:
                holder = holder_for(budget, decision, now)
                connection.execute(
                    "INSERT OR REPLACE INTO copy_slots VALUES (?, ?, ?, ?, ?, ?)",
                    (holder.slot, holder.event_id, holder.priority.value,
                     holder.acquired_at.timestamp(), holder.expires_at.timestamp(), owner),
                )  # fmt: skip
            if decision.answer.granted:
                connection.execute("DELETE FROM copy_waiting WHERE event_id = ?", (event_id,))
            else:
                waiter = decision.claimant
                connection.execute(
                    "INSERT OR REPLACE INTO copy_waiting VALUES (?, ?, ?, ?, ?)",
                    (waiter.event_id, waiter.priority.value, waiter.enqueued_at.timestamp(),
                     waiter.seen_at.timestamp(), owner),
                )  # fmt: skip
            connection.execute("COMMIT")
            return decision.answer
        finally:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            connection.close()

    def release(self, event_id: str) -> bool:
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            freed = connection.execute("DELETE FROM copy_slots WHERE event_id = ?", (event_id,))
            connection.execute("DELETE FROM copy_waiting WHERE event_id = ?", (event_id,))
            connection.execute("COMMIT")
            return freed.rowcount > 0
        finally:
            connection.close()

    def holders(self) -> list[Holder]:
        connection = self._connect()
        try:
            return _holders(connection)
        finally:
            connection.close()

    def waiting(self) -> list[Waiter]:
        connection = self._connect()
        try:
            return _waiting(connection)
        finally:
            connection.close()


def _moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _holders(connection: sqlite3.Connection) -> list[Holder]:
    rows = connection.execute(
        "SELECT slot, event_id, priority, acquired_at, expires_at, owner FROM copy_slots "
        "ORDER BY slot"
    ).fetchall()
    return [Holder(r[0], r[1], Priority(r[2]), _moment(r[3]), _moment(r[4]), r[5]) for r in rows]


def _waiting(connection: sqlite3.Connection) -> list[Waiter]:
    rows = connection.execute(
        "SELECT event_id, priority, enqueued_at, seen_at, owner FROM copy_waiting"
    ).fetchall()
    return [Waiter(r[0], Priority(r[1]), _moment(r[2]), _moment(r[3]), r[4]) for r in rows]
