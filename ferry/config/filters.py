"""Partition filters: metastore filter expressions rendered from a sandboxed Jinja2 template.

A filter such as ``dt >= '{{ days_ago(2) }}'`` is rendered at plan time with date helpers
that read an injected clock, then handed to the catalog as a metastore filter expression.
Circus Train's SpEL expressions (``#{ ... }``) are recognised and refused with the
equivalent Jinja2 template, so its users can port their files.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING

from ferry.core.clock import Clock, utc_now
from ferry.core.errors import ConfigError

if TYPE_CHECKING:
    from jinja2.sandbox import SandboxedEnvironment

HELPER_NAMES = "now_utc(), days_ago(n, fmt), hours_ago(n, fmt)"


@cache
def _environment() -> SandboxedEnvironment:
    """The sandbox templates render in, made on first use: a config without a partition
    filter (and every command or function that loads one) does without Jinja2's import."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


# The clock a filter is rendered against once when the config loads, so that a wrong
# argument to a helper is a config error then, not a failed table after the run started.
CHECK_TIME = datetime(2000, 1, 1, tzinfo=UTC)


def helpers(clock: Clock = utc_now) -> dict[str, Callable[..., object]]:
    """The functions a partition-filter template may call.

    They check their arguments themselves: Python's own errors (``unsupported type for
    timedelta days component: str``) would not tell a person which call was wrong.
    """

    def now_utc() -> datetime:
        return clock()

    def days_ago(days: int, fmt: str = "%Y-%m-%d") -> str:
        _check_arguments("days_ago", days, fmt)
        return (clock() - timedelta(days=days)).strftime(fmt)

    def hours_ago(hours: int, fmt: str = "%Y-%m-%d-%H") -> str:
        _check_arguments("hours_ago", hours, fmt)
        return (clock() - timedelta(hours=hours)).strftime(fmt)

    return {"now_utc": now_utc, "days_ago": days_ago, "hours_ago": hours_ago}


def _check_arguments(helper: str, amount: object, fmt: object) -> None:
    if not isinstance(amount, int) or isinstance(amount, bool):
        raise ValueError(f"{helper}() takes a whole number first, not {amount!r}")
    if not isinstance(fmt, str):
        raise ValueError(f"{helper}() takes a strftime format second, not {fmt!r}")


def check_template(template: str) -> None:
    """Raise ``ValueError`` with a one-line reason when ``template`` cannot be rendered.

    The template is rendered once against a fixed clock: an undefined helper or a wrong
    argument is found when the config loads, before anything runs.
    """
    if "#{" in template:
        equivalent = spel_equivalent(template)
        hint = (
            f"write {equivalent!r} instead"
            if equivalent
            else f"use a Jinja2 template with {HELPER_NAMES}, e.g. dt >= '{{{{ days_ago(1) }}}}'"
        )
        raise ValueError(f"Circus Train SpEL expressions are not supported; {hint}")
    from jinja2 import TemplateError, UndefinedError

    try:
        _environment().parse(template)
    except TemplateError as error:
        raise ValueError(f"invalid template: {error}") from None
    try:
        _render(template, lambda: CHECK_TIME)
    except Exception as error:  # any failure of a template is the config's
        hint = f" (the helpers are {HELPER_NAMES})" if isinstance(error, UndefinedError) else ""
        raise ValueError(f"cannot be rendered: {_one_line(error)}{hint}") from None


def render_partition_filter(template: str | None, clock: Clock = utc_now) -> str | None:
    """The metastore filter expression for ``template`` at the clock's current time."""
    if template is None or not template.strip():
        return None
    try:
        return _render(template, clock)
    except Exception as error:  # e.g. a date out of range at this clock
        raise ConfigError(
            f"partition-filter {template!r} cannot be rendered: {_one_line(error)}"
        ) from None


def _render(template: str, clock: Clock) -> str | None:
    return _environment().from_string(template).render(**helpers(clock)).strip() or None


def _one_line(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else ""
    return text or type(error).__name__


# Joda-Time pattern letters that Circus Train filters use, and their strftime equivalents.
_JODA_TO_STRFTIME = [
    ("yyyy", "%Y"),
    ("MM", "%m"),
    ("dd", "%d"),
    ("HH", "%H"),
    ("mm", "%M"),
    ("ss", "%S"),
]
_SPEL_CALL = re.compile(
    r"#\{\s*#nowUtc\(\)(?:\.minus(?P<unit>Days|Hours)\((?P<amount>\d+)\))?"
    r"\.toString\(\s*['\"](?P<format>[^'\"]+)['\"]\s*\)\s*\}"
)


def spel_equivalent(expression: str) -> str | None:
    """The common Circus Train date expressions as Ferry's Jinja2 helpers, or None."""

    def rewrite(match: re.Match[str]) -> str:
        fmt = match["format"]
        for joda, strftime in _JODA_TO_STRFTIME:
            fmt = fmt.replace(joda, strftime)
        amount = int(match["amount"] or 0)
        if match["unit"] == "Hours":
            return f"{{{{ hours_ago({amount}, '{fmt}') }}}}"
        return f"{{{{ days_ago({amount}, '{fmt}') }}}}"

    rewritten = _SPEL_CALL.sub(rewrite, expression)
    return None if "#{" in rewritten else rewritten
