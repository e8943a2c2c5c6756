from datetime import UTC, datetime

import pytest

from ferry.config.filters import check_template, render_partition_filter, spel_equivalent
from ferry.core.errors import ConfigError

NOW = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)


def clock():
    return NOW


@pytest.mark.parametrize(
    ("template", "rendered"),
    [
        ("dt >= '{{ days_ago(2) }}'", "dt >= '2026-02-27'"),
        ("dt = '{{ days_ago(0, '%Y%m%d') }}'", "dt = '20260301'"),
        ("hr >= '{{ hours_ago(3) }}'", "hr >= '2026-02-28-23'"),
        ("y = '{{ now_utc().year }}'", "y = '2026'"),
        (
            "dt > '2020-01-01' AND region IN ('eu', 'us')",
            "dt > '2020-01-01' AND region IN ('eu', 'us')",
        ),
        ("  ", None),
        (None, None),
    ],
)
def test_templates_render_against_the_clock(template, rendered):
    assert render_partition_filter(template, clock) == rendered


def test_unknown_names_are_errors_not_empty_strings():
    with pytest.raises(ConfigError, match="'yesterday' is undefined"):
        render_partition_filter("dt = '{{ yesterday }}'", clock)


def test_the_sandbox_refuses_python_internals():
    with pytest.raises(ConfigError):
        render_partition_filter("{{ now_utc.__globals__ }}", clock)


def test_spel_is_translated_to_the_jinja_equivalent():
    spel = "dt >= '#{ #nowUtc().minusDays(3).toString(\"yyyy-MM-dd\") }'"
    assert spel_equivalent(spel) == "dt >= '{{ days_ago(3, '%Y-%m-%d') }}'"
    assert spel_equivalent("h = '#{#nowUtc().minusHours(1).toString('yyyy-MM-dd-HH')}'") == (
        "h = '{{ hours_ago(1, '%Y-%m-%d-%H') }}'"
    )
    with pytest.raises(ValueError, match="SpEL expressions are not supported"):
        check_template(spel)


def test_untranslatable_spel_gets_a_generic_hint():
    assert spel_equivalent("#{ #someOther() }") is None
    with pytest.raises(ValueError, match=r"use a Jinja2 template with now_utc\(\), days_ago"):
        check_template("dt = '#{ #someOther() }'")


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("dt = '{{ days_ago('x') }}'", "days_ago() takes a whole number first, not 'x'"),
        ("dt = '{{ hours_ago(1, 2) }}'", "hours_ago() takes a strftime format second, not 2"),
        ("dt = '{{ days_ago(10000000) }}'", "date value out of range"),
    ],
)
def test_a_wrong_helper_argument_is_one_config_error_line(template, message):
    with pytest.raises(ConfigError) as raised:
        render_partition_filter(template, clock)
    assert str(raised.value) == f"partition-filter {template!r} cannot be rendered: {message}"


def test_check_template_renders_once_so_argument_errors_surface_at_load():
    with pytest.raises(ValueError, match=r"cannot be rendered: days_ago\(\) takes a whole number"):
        check_template("dt = '{{ days_ago('x') }}'")
    with pytest.raises(ValueError, match=r"'weeks_ago' is undefined \(the helpers are now_utc\(\)"):
        check_template("dt = '{{ weeks_ago(1) }}'")
    check_template("dt >= '{{ days_ago(2) }}' AND hr = '{{ hours_ago(1, '%H') }}'")
