"""Time, injected: what a run reads as "now" is a clock it is given.

Plans, event ids and partition filters take a ``Clock`` instead of reading the system time,
so a test (or a replay) fixes the moment and gets the same event ids and filters.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

#: A function that answers the current time (aware, UTC).
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The system's current time in UTC: the clock of every real run."""
    return datetime.now(UTC)
