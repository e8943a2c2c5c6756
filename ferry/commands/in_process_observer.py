"""What the in-process driver tells about its run (the CLI shows it), from any of its threads.

A Map runs its items on threads (``ferry.commands.in_process_map``), so an observer hears from
several at once: ``Guarded`` passes each call on under one lock, and gives a table's copy one
progress for all of its steps running at once — asked for when the first starts, finished when
the last ends — so that a copy of many batches draws one bar, not one per batch.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from ferry.copying.copier import Progress


class Observer(Protocol):
    """Told what the driver does (the CLI shows it)."""

    def state_entered(self, table: str | None, state: str) -> None: ...

    def copy_progress(self, table: str, plan: dict[str, Any]) -> Progress | None: ...

    def copy_finished(self, table: str) -> None: ...

    def table_finished(
        self, table: str, result: Any, states: list[str], seconds: float
    ) -> None: ...


class Silent:
    """An observer told nothing worth keeping."""

    def state_entered(self, table: str | None, state: str) -> None:
        pass

    def copy_progress(self, table: str, plan: dict[str, Any]) -> Progress | None:
        return None

    def copy_finished(self, table: str) -> None:
        pass

    def table_finished(self, table: str, result: Any, states: list[str], seconds: float) -> None:
        pass


class Guarded:
    """``observer``'s calls one at a time; one copy progress per table for its steps at once."""

    def __init__(self, observer: Observer):
        self.observer = observer
        self._lock = threading.RLock()
        #: table → (its copy steps running, the progress they share)
        self._copies: dict[str, tuple[int, Progress | None]] = {}

    def state_entered(self, table: str | None, state: str) -> None:
        with self._lock:
            self.observer.state_entered(table, state)

    def copy_progress(self, table: str, plan: dict[str, Any]) -> Progress | None:
        with self._lock:
            running, progress = self._copies.get(table, (0, None))
            if not running:
                progress = self.observer.copy_progress(table, plan)
            self._copies[table] = (running + 1, progress)
            return progress

    def copy_finished(self, table: str) -> None:
        with self._lock:
            running, progress = self._copies.pop(table, (1, None))
            if running > 1:
                self._copies[table] = (running - 1, progress)
            else:
                self.observer.copy_finished(table)

    def table_finished(self, table: str, result: Any, states: list[str], seconds: float) -> None:
        with self._lock:
            self.observer.table_finished(table, result, states, seconds)
