"""A clock of the emulator: a background thread that calls one function at a fixed interval
until stopped (the schedules' firing, the alarms' evaluation)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)


class Ticker:
    """Calls ``tick`` every ``seconds`` in a daemon thread named ``name``; a failing tick is
    logged and the clock goes on."""

    def __init__(self, name: str, seconds: float, tick: Callable[[], None]):
        self.name, self.seconds, self.tick = name, seconds, tick
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.seconds):
            try:
                self.tick()
            except Exception:  # the clock must keep going whatever one tick does
                logger.exception("the %s clock failed a tick", self.name)
