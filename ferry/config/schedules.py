"""Checks of a schedule (``triggers.schedule``): EventBridge Scheduler's cron and rate
expressions, and IANA time zones. Each returns the value it accepts and raises
``ValueError`` with the line a person reads.
"""

from __future__ import annotations

import difflib
import functools
import zoneinfo

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


class _CronField:
    """One field of an EventBridge cron expression: its values, and the names of some."""

    def __init__(self, name: str, low: int, high: int, names: tuple[str, ...] = ()):
        self.name, self.low, self.high, self.labels = name, low, high, names
        self.names = {label: low + index for index, label in enumerate(names)}

    def value(self, text: str, expression: str) -> int:
        """The number ``text`` stands for (names in any case), else ``ValueError``."""
        number = self.names.get(text.upper())
        if number is None and text.isdigit():
            number = int(text)
        if number is None or not self.low <= number <= self.high:
            names = f" or {self.labels[0]}-{self.labels[-1]}" if self.labels else ""
            article = "an" if self.name == "hour" else "a"
            raise ValueError(
                f"{expression}: {text!r} is not {article} {self.name} "
                f"({self.low}-{self.high}{names})"
            )
        return number


_CRON_FIELDS = (
    _CronField("minute", 0, 59),
    _CronField("hour", 0, 23),
    _CronField("day-of-month", 1, 31),
    _CronField("month", 1, 12, _MONTHS),
    _CronField("day-of-week", 1, 7, _WEEKDAYS),
    _CronField("year", 1970, 2199),
)
_DAY_OF_MONTH, _DAY_OF_WEEK = 2, 4
_CRON_EXAMPLE = "e.g. cron(0 3 * * ? *) for 03:00 every day"
_RATE_UNITS = {"minute": "minutes", "hour": "hours", "day": "days"}


def check_schedule_expression(expression: str) -> str:
    """``expression`` when EventBridge Scheduler takes it as a recurring schedule, else
    ``ValueError``; extra blanks are dropped.

    ``cron(minutes hours day-of-month month day-of-week year)``, with one of the two day
    fields ``?``, or ``rate(N unit)``, the unit singular for 1: ``rate(1 hour)``,
    ``rate(6 hours)``.
    """
    text = expression.strip()
    kind, opening, rest = text.partition("(")
    if not opening or not rest.endswith(")") or kind not in ("cron", "rate"):
        what = "a one-time schedule" if kind.strip().lower() == "at" else "not a schedule"
        raise ValueError(
            f"{expression!r} is {what}: write cron(...) ({_CRON_EXAMPLE}) "
            "or rate(...) (e.g. rate(6 hours))"
        )
    words = rest[:-1].split()
    return _check_cron(words, text) if kind == "cron" else _check_rate(words, text)


def _check_rate(words: list[str], expression: str) -> str:
    if len(words) != 2 or not words[0].isdigit() or int(words[0]) < 1:
        raise ValueError(
            f"{expression}: write rate(N unit), N a whole number from 1, "
            "e.g. rate(30 minutes), rate(6 hours), rate(1 day)"
        )
    number, unit = int(words[0]), words[1]
    singular = next((s for s, plural in _RATE_UNITS.items() if unit in (s, plural)), None)
    if singular is None:
        raise ValueError(f"{expression}: {unit!r} is not a unit; use minutes, hours or days")
    expected = singular if number == 1 else _RATE_UNITS[singular]
    if unit != expected:
        raise ValueError(
            f"{expression}: EventBridge wants the unit {'singular' if number == 1 else 'plural'}"
            f" for {number}: rate({number} {expected})"
        )
    return f"rate({number} {unit})"


def _check_cron(fields: list[str], expression: str) -> str:
    if len(fields) != len(_CRON_FIELDS):
        raise ValueError(
            f"{expression} has {len(fields)} field{'s' if len(fields) != 1 else ''}; "
            "EventBridge's cron has 6: minutes hours day-of-month month day-of-week year, "
            + _CRON_EXAMPLE
        )
    for index, (field, text) in enumerate(zip(_CRON_FIELDS, fields, strict=True)):
        _check_cron_field(index, field, text, expression)
    day_of_month, day_of_week = fields[_DAY_OF_MONTH], fields[_DAY_OF_WEEK]
    if (day_of_month == "?") == (day_of_week == "?"):
        raise ValueError(
            f"{expression}: exactly one of day-of-month and day-of-week must be '?' "
            f"(EventBridge takes one of them), {_CRON_EXAMPLE}"
        )
    return f"cron({' '.join(fields)})"


def _check_cron_field(index: int, field: _CronField, text: str, expression: str) -> None:
    """One field: a list of values, ranges and increments, or one of the day fields' specials.

    The specials, as EventBridge documents them: ``?`` (either day field), ``L`` (the last
    day of the month, or of the week), ``3W`` (the weekday nearest the 3rd), ``6L`` (the
    last Friday of the month), ``3#2`` (its second Tuesday).
    """
    if index in (_DAY_OF_MONTH, _DAY_OF_WEEK) and text in ("?", "L"):
        return
    if index == _DAY_OF_MONTH and text.upper().endswith("W"):
        field.value(text[:-1], expression)
        return
    if index == _DAY_OF_WEEK and text.upper().endswith("L"):
        field.value(text[:-1], expression)
        return
    if index == _DAY_OF_WEEK and "#" in text:
        day, _, nth = text.partition("#")
        field.value(day, expression)
        if nth not in ("1", "2", "3", "4", "5"):
            raise ValueError(f"{expression}: {text!r}: the week after # is 1-5")
        return
    for item in text.split(","):
        base, slash, step = item.partition("/")
        if slash and not (step.isdigit() and 1 <= int(step) <= field.high - field.low + 1):
            raise ValueError(
                f"{expression}: {item!r}: the increment after / is a whole number, "
                f"1-{field.high - field.low + 1}"
            )
        if base == "*":
            continue
        start, dash, end = base.partition("-")
        field.value(start, expression)
        if dash:
            field.value(end, expression)


@functools.cache
def _time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def check_time_zone(name: str) -> str:
    """``name`` when it is an IANA time zone (``Europe/London``, ``UTC``), else ``ValueError``.

    Names are those of this system's time zone database. Where there is none (a minimal
    container) a name cannot be checked and is accepted: EventBridge Scheduler checks it
    again when the schedule is deployed.
    """
    zones = _time_zones()
    if not zones or name in zones:
        return name
    close = difflib.get_close_matches(name, zones, n=1)
    suggestion = f"; did you mean {close[0]!r}?" if close else ", e.g. Europe/London or UTC"
    raise ValueError(f"{name!r} is not an IANA time zone{suggestion}")
