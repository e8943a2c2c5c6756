"""What a replica promises its readers: how far behind it may fall (``rpo``) and how soon its
copies start when the environment's copy budget is taken (``priority``).

Both may be given at the config's top level (the default of every table replication) and
per table replication, which overrides it.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from typing import Any

from ferry.core.duration import parse_duration


class Priority(StrEnum):
    """Which copies start first when the copy budget is taken (``ferry.copying.budget``)."""

    CRITICAL = "critical"  # may take every slot of the budget; first in line
    NORMAL = "normal"
    BULK = "bulk"  # never takes the slots kept for critical tables; last in line

    @property
    def rank(self) -> int:
        """0 for critical, 1 for normal, 2 for bulk: lower starts first."""
        return list(Priority).index(self)


DEFAULT_PRIORITY = Priority.NORMAL


def parse_rpo(value: Any) -> timedelta:
    """``PT15M`` → 15 minutes; a positive ISO-8601 duration of days, hours, minutes, seconds."""
    if isinstance(value, timedelta):
        duration = value
    elif isinstance(value, str):
        duration = parse_duration(value)
    else:
        raise ValueError(
            f"{value!r} is not an ISO-8601 duration of days, hours, minutes and seconds, "
            "e.g. PT15M, PT1H, P1D"
        )
    if duration <= timedelta(0):
        raise ValueError(f"{value!r}: give a positive duration, e.g. PT15M")
    return duration


def parse_priority(value: Any) -> Priority:
    """``critical``, ``normal`` or ``bulk`` (any case); anything else is named."""
    if isinstance(value, Priority):
        return value
    if isinstance(value, str):
        try:
            return Priority(value.strip().lower())
        except ValueError:
            pass
    choices = ", ".join(priority.value for priority in Priority)
    raise ValueError(f"{value!r} is not a priority; give one of {choices}")
