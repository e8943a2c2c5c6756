"""ISO-8601 durations (``P3D``, ``PT1H``): the lock's lease, and the grace period's spelling.

Days, hours, minutes and seconds only, as Java's ``Duration.parse`` (which Circus Train's
``expired-path-duration`` goes through) and the config's own parser take them: years,
months and weeks are refused rather than guessed.
"""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION = re.compile(
    r"P(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> timedelta:
    """``P3D`` → 3 days, ``PT1H30M`` → 90 minutes; ``ValueError`` names what is wrong."""
    value = text.strip()
    match = _DURATION.fullmatch(value)
    if match is None or value.upper() in ("P", "PT") or value.upper().endswith("T"):
        raise ValueError(
            f"{text!r} is not an ISO-8601 duration of days, hours, minutes and seconds, "
            "e.g. P3D, PT12H, P1DT6H"
        )
    parts = {
        name: float((number or "0").replace(",", ".")) for name, number in match.groupdict().items()
    }
    try:
        return timedelta(**parts)
    except OverflowError:  # past timedelta's 999,999,999 days
        raise ValueError(f"{text!r} is longer than any duration Ferry can use") from None


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
