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

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from ferry.errors import ConfigError

Clock = Callable[[], datetime]

_ENVIRONMENT = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


def utc_now() -> datetime:
    return datetime.now(UTC)


def helpers(clock: Clock = utc_now) -> dict[str, Callable[..., object]]:
    """The functions a partition-filter template may call."""

    def now_utc() -> datetime:
        return clock()

    def days_ago(days: int, fmt: str = "%Y-%m-%d") -> str:
        return (clock() - timedelta(days=days)).strftime(fmt)

    def hours_ago(hours: int, fmt: str = "%Y-%m-%d-%H") -> str:
        return (clock() - timedelta(hours=hours)).strftime(fmt)

    return {"now_utc": now_utc, "days_ago": days_ago, "hours_ago": hours_ago}


def check_template(template: str) -> None:
    """Raise ``ValueError`` with a one-line reason when ``template`` cannot be rendered."""
    if "#{" in template:
        equivalent = spel_equivalent(template)
        hint = (
            f"write {equivalent!r} instead"
            if equivalent
            else "use a Jinja2 template with now_utc(), days_ago(n, fmt) or hours_ago(n, fmt), "
            "e.g. dt >= '{{ days_ago(1) }}'"
        )
        raise ValueError(f"Circus Train SpEL expressions are not supported; {hint}")
    try:
        _ENVIRONMENT.parse(template)
    except TemplateError as error:
        raise ValueError(f"invalid template: {error}") from None


def render_partition_filter(template: str | None, clock: Clock = utc_now) -> str | None:
    """The metastore filter expression for ``template`` at the clock's current time."""
    if template is None or not template.strip():
        return None
    try:
        return _ENVIRONMENT.from_string(template).render(**helpers(clock)).strip() or None
    except TemplateError as error:
        raise ConfigError(f"partition-filter {template!r} cannot be rendered: {error}") from None


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
