"""``rpo`` and ``priority``: parsed once, defaulted from the config's top level."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ferry.config import Priority, parse_config_text
from ferry.core.errors import ConfigError

CONFIG = """
source-catalog: {{name: s, hive-metastore-uris: "thrift://a:9083"}}
replica-catalog: {{name: r, hive-metastore-uris: "thrift://b:9083"}}
{top}
table-replications:
  - source-table: {{database-name: d, table-name: t}}
    replica-table: {{table-location: "s3://b/t"}}
    {own}
  - source-table: {{database-name: d, table-name: u}}
    replica-table: {{table-location: "s3://b/u"}}
"""


def parse(top: str = "", own: str = ""):
    return parse_config_text(CONFIG.format(top=top, own=own), "config.yml")


def test_a_table_overrides_the_top_level_objectives():
    config = parse("rpo: PT15M\npriority: bulk", "rpo: PT1H\n    priority: CRITICAL")
    own, default = config.table_replications
    assert (own.rpo, own.priority) == (timedelta(hours=1), Priority.CRITICAL)
    assert (default.rpo, default.priority) == (timedelta(minutes=15), Priority.BULK)


def test_without_objectives_a_table_is_normal_and_has_no_rpo():
    config = parse()
    assert [(r.rpo, r.priority) for r in config.table_replications] == [
        (None, Priority.NORMAL),
        (None, Priority.NORMAL),
    ]


@pytest.mark.parametrize(
    ("top", "own", "message"),
    [
        ("rpo: 15min", "", "rpo: '15min' is not an ISO-8601 duration"),
        ("rpo: PT0S", "", "rpo: 'PT0S': give a positive duration"),
        ("", "rpo: 5", "table-replications[0].rpo: 5 is not an ISO-8601 duration"),
        ("", "priority: urgent", "table-replications[0].priority: 'urgent' is not a priority"),
        ("priority: 1", "", "priority: 1 is not a priority; give one of critical, normal, bulk"),
    ],
)
def test_a_bad_objective_is_one_line_naming_its_key(top, own, message):
    with pytest.raises(ConfigError) as error:
        parse(top, own)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_priorities_rank_critical_first():
    assert sorted(Priority, key=lambda p: p.rank) == [
        Priority.CRITICAL,
        Priority.NORMAL,
        Priority.BULK,
    ]
