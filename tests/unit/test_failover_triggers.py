"""Which of a deployed config's rules and schedules the failover switch turns off: their
names as the stack gives them (``infra/triggers.py`` names them with the same function), and
only when every table of the config fails over."""

from __future__ import annotations

import yaml

from ferry.config import parse_config_text
from ferry.failover.deployed import every_table
from ferry.failover.trigger_names import config_triggers, trigger_name

HIVE = {"name": "onprem", "hive-metastore-uris": "thrift://source:9083"}
GLUE = {"name": "landing", "glue": {"region": "us-east-1"}}
DR = {"name": "dr", "glue": {"region": "us-west-2"}}


def config(source=HIVE, triggers=None, tables=("orders", "customers")):
    document = {
        "source-catalog": source,
        "replica-catalog": DR,
        **({"triggers": triggers} if triggers else {}),
        "table-replications": [
            {"source-table": {"database-name": "sales", "table-name": t},
             "replica-table": {"table-location": f"s3://dr/{t}"}}
            for t in tables
        ],
    }  # fmt: skip
    return parse_config_text(yaml.safe_dump(document), "sales.yml", {})


def test_a_configs_schedule_s3_rules_and_poller_by_the_stacks_names():
    triggers = {
        "schedule": {"expression": "rate(1 hour)"},
        "s3": [{"bucket": "landing", "prefix": "a/"}, {"bucket": "landing", "prefix": "b/"}],
        "catalog-events": {},
    }
    found = config_triggers("prod", "sales", config(triggers=triggers))

    assert found.rules == ("ferry-prod-sales-s3-0", "ferry-prod-sales-s3-1")
    assert found.schedules == ("ferry-prod-sales", "ferry-prod-sales-catalog-poller")
    assert found.group == "ferry-prod"


def test_a_glue_sources_catalog_events_are_a_rule_and_housekeeping_is_never_turned_off():
    found = config_triggers("prod", "sales", config(GLUE, {"catalog-events": {}}))

    assert (found.rules, found.schedules) == (("ferry-prod-sales-catalog-events",), ())
    assert "ferry-prod-sales-housekeeping" not in found.names()


def test_a_long_config_name_is_shortened_as_the_stack_shortens_it():
    name = "a-config-whose-name-is-far-too-long-for-a-rule-of-sixty-four"
    [rule] = config_triggers("prod", name, config(triggers={"s3": [{"bucket": "landing"}]})).rules

    assert len(rule) <= 64
    assert rule == trigger_name("prod", name, "-s3-0")
    assert rule.startswith("ferry-prod-a-config") and rule.endswith("-s3-0")


def test_triggers_go_off_only_when_every_table_fails_over():
    two = config()

    assert every_table(two, ["sales.orders", "sales.customers"])
    assert every_table(two, ["SALES.Orders", "sales.customers"])
    assert every_table(two, [])
    assert not every_table(two, ["sales.orders"])
