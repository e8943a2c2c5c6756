"""ISO-8601 durations, as Circus Train's ``expired-path-duration`` writes them (``P3D``).

Only exact units are accepted — weeks, days, hours, minutes, seconds (Java's
``Duration.parse`` takes the same, except weeks) — because years and months have no fixed
length: ``P1M`` is refused rather than guessed.
"""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION = re.compile(
    r"P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> timedelta:
    """``P3D`` → 3 days, ``PT1H30M`` → 90 minutes; ``ValueError`` names what is wrong."""
    value = text.strip()
    match = _DURATION.fullmatch(value)
    if match is None or value.upper() in ("P", "PT") or value.upper().endswith("T"):
        raise ValueError(
            f"{text!r} is not an ISO-8601 duration of weeks, days, hours, minutes or seconds "
            "(e.g. P3D, PT12H, PT90M)"
        )
    parts = {
        name: float((number or "0").replace(",", ".")) for name, number in match.groupdict().items()
    }
    return timedelta(**parts)


def format_duration(duration: timedelta) -> str:
    """The shortest ISO-8601 spelling of ``duration`` (``P3D``, ``PT1H``, ``PT0S``)."""
    seconds = duration.total_seconds()
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, whole = divmod(rest, 60)
    fraction = seconds - int(seconds)
    text = "P" + (f"{days}D" if days else "")
    clock = (
        (f"{hours}H" if hours else "")
        + (f"{minutes}M" if minutes else "")
        + (f"{whole + fraction:g}S" if whole or fraction else "")
    )
    if clock:
        text += "T" + clock
    return text if text != "P" else "PT0S"
