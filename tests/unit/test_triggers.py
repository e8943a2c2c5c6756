"""Trigger declarations: what the config accepts, and what each trigger matches and sends."""

import json
from pathlib import Path

import pytest
import yaml
from moto.events.models import EventPattern
from moto.events.utils import EventTemplateParser

from ferry.commands.cli import main
from ferry.config import S3Trigger, ScheduleTrigger, check_schedule_expression, parse_config
from ferry.core.errors import ConfigError
from ferry.feeds import trigger_events
from ferry.statemachine.outcomes import resolved_tables
from ferry.states import resolve_tables
from ferry.states.context import StateContext

EVENTS = Path(__file__).parents[2] / "events"

DOCUMENT = {
    "source-catalog": {"name": "onprem", "hive-metastore-uris": "thrift://ms1:9083"},
    "replica-catalog": {"name": "dr", "hive-metastore-uris": "thrift://ms2:9083"},
    "table-replications": [
        {
            "source-table": {"database-name": "sales", "table-name": "orders"},
            "replica-table": {"database-name": "sales_dr"},
            "replication-mode": "METADATA_MIRROR",
        }
    ],
}


def with_triggers(declared) -> dict:
    return {**DOCUMENT, "triggers": declared}


def load_triggers(declared):
    return parse_config(with_triggers(declared), "c.yml", {}).triggers


def refusal(declared) -> str:
    with pytest.raises(ConfigError) as raised:
        load_triggers(declared)
    line = str(raised.value)
    assert "\n" not in line
    return line


# -- the declarations -------------------------------------------------------------------------


def test_a_config_declares_a_schedule_and_s3_triggers():
    declared = load_triggers(
        {
            "schedule": {"expression": "cron(0 3 * * ? *)", "time-zone": "Europe/London"},
            "s3": [
                {
                    "bucket": "onprem-landing",
                    "prefix": "warehouse/sales.db/",
                    "region": "eu-west-1",
                },
                {"bucket": "other.landing", "suffix": ""},
            ],
        }
    )
    assert declared.schedule == ScheduleTrigger(
        expression="cron(0 3 * * ? *)", time_zone="Europe/London"
    )
    assert declared.s3 == (
        S3Trigger(
            bucket="onprem-landing",
            prefix="warehouse/sales.db/",
            suffix="_SUCCESS",
            region="eu-west-1",
        ),
        S3Trigger(bucket="other.landing", prefix="", suffix="", region=None),
    )
    assert declared.declared


def test_without_triggers_nothing_is_declared_and_defaults_apply():
    assert not parse_config(DOCUMENT, "c.yml", {}).triggers.declared
    assert not load_triggers(None).declared  # `triggers:` with no value
    declared = load_triggers({"schedule": {"expression": "rate(6 hours)"}, "s3": {"bucket": "b1c"}})
    assert declared.schedule.time_zone == "UTC"
    assert declared.s3 == (S3Trigger(bucket="b1c"),)  # one mapping is a list of one
    assert declared.s3[0].suffix == "_SUCCESS"


@pytest.mark.parametrize(
    ("expression", "written"),
    [
        ("cron(0 3 * * ? *)", "cron(0 3 * * ? *)"),
        ("cron(0/15 8-17 ? * MON-FRI *)", "cron(0/15 8-17 ? * MON-FRI *)"),
        ("cron(15 10 ? * 6L 2026-2030)", "cron(15 10 ? * 6L 2026-2030)"),
        ("cron(0 12 L * ? *)", "cron(0 12 L * ? *)"),
        ("cron(0 6 15W JAN,JUL ? *)", "cron(0 6 15W JAN,JUL ? *)"),
        ("cron(0 9 ? * 2#1 *)", "cron(0 9 ? * 2#1 *)"),
        ("cron(5,35 */2 1 * ? *)", "cron(5,35 */2 1 * ? *)"),
        ("  cron( 0  3 * * ? * )", "cron(0 3 * * ? *)"),
        ("rate(1 minute)", "rate(1 minute)"),
        ("rate(30 minutes)", "rate(30 minutes)"),
        ("rate(1 hour)", "rate(1 hour)"),
        ("rate(6 hours)", "rate(6 hours)"),
        ("rate(1 day)", "rate(1 day)"),
        ("rate(7 days)", "rate(7 days)"),
    ],
)
def test_schedule_expressions_eventbridge_takes_load(expression, written):
    assert load_triggers({"schedule": {"expression": expression}}).schedule.expression == written


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("cron(0 3 * * *)", "cron(0 3 * * *) has 5 fields; EventBridge's cron has 6"),
        ("cron(0 3 * * ? * *)", "has 7 fields"),
        ("cron(0 3 * * * *)", "exactly one of day-of-month and day-of-week must be '?'"),
        ("cron(0 3 ? * ? *)", "exactly one of day-of-month and day-of-week must be '?'"),
        ("cron(60 3 * * ? *)", "'60' is not a minute (0-59)"),
        ("cron(0 24 * * ? *)", "'24' is not an hour (0-23)"),
        ("cron(0 3 0 * ? *)", "'0' is not a day-of-month (1-31)"),
        ("cron(0 3 * 13 ? *)", "'13' is not a month (1-12 or JAN-DEC)"),
        ("cron(0 3 ? * 8 *)", "'8' is not a day-of-week (1-7 or SUN-SAT)"),
        ("cron(0 3 ? * MON-FUN *)", "'FUN' is not a day-of-week"),
        ("cron(0 3 * * ? 1969)", "'1969' is not a year (1970-2199)"),
        ("cron(0/0 3 * * ? *)", "'0/0': the increment after / is a whole number, 1-60"),
        ("cron(0 3 ? * 2#6 *)", "'2#6': the week after # is 1-5"),
        ("cron(? 3 * * ? *)", "'?' is not a minute"),
        ("rate(1 hours)", "rate(1 hours): EventBridge wants the unit singular for 1: rate(1 hour)"),
        ("rate(5 hour)", "rate(5 hour): EventBridge wants the unit plural for 5: rate(5 hours)"),
        ("rate(0 minutes)", "write rate(N unit), N a whole number from 1"),
        ("rate(1.5 hours)", "write rate(N unit), N a whole number from 1"),
        ("rate(2 weeks)", "'weeks' is not a unit; use minutes, hours or days"),
        ("rate(6hours)", "write rate(N unit)"),
        ("at(2026-11-21T03:00:00)", "is a one-time schedule: write cron(...)"),
        ("0 3 * * *", "is not a schedule: write cron(...)"),
        ("CRON(0 3 * * ? *)", "is not a schedule"),
    ],
)
def test_a_schedule_expression_eventbridge_refuses_is_one_line_naming_the_key(expression, message):
    line = refusal({"schedule": {"expression": expression}})
    assert line.startswith("c.yml: triggers.schedule.expression: ")
    assert message in line


@pytest.mark.parametrize("zone", ["UTC", "Europe/London", "America/New_York", "Asia/Kolkata"])
def test_iana_time_zones_load(zone):
    declared = {"schedule": {"expression": "cron(0 3 * * ? *)", "time-zone": zone}}
    assert load_triggers(declared).schedule.time_zone == zone


@pytest.mark.parametrize(
    ("zone", "message"),
    [
        ("Europe/Londn", "'Europe/Londn' is not an IANA time zone; did you mean 'Europe/London'?"),
        ("CEST+2", "'CEST+2' is not an IANA time zone"),
        ("../../etc/passwd", "is not an IANA time zone"),
    ],
)
def test_an_unknown_time_zone_is_refused(zone, message):
    line = refusal({"schedule": {"expression": "cron(0 3 * * ? *)", "time-zone": zone}})
    assert line.startswith("c.yml: triggers.schedule.time-zone: ")
    assert message in line


@pytest.mark.parametrize("bucket", ["abc", "onprem-landing", "data.lake.2026", "a" * 63])
def test_s3_bucket_names_load(bucket):
    assert load_triggers({"s3": [{"bucket": bucket}]}).s3[0].bucket == bucket


@pytest.mark.parametrize(
    ("bucket", "message"),
    [
        ("ab", "S3 bucket names have 3-63 characters"),
        ("a" * 64, "S3 bucket names have 3-63 characters"),
        ("Landing", "lower-case letters, digits, '.' and '-' only"),
        ("land_ing", "lower-case letters, digits, '.' and '-' only"),
        ("-landing", "starting and ending with a letter or digit"),
        ("landing.", "starting and ending with a letter or digit"),
        ("data..lake", "no '..'"),
        ("192.168.5.4", "S3 refuses names like IP addresses"),
        ("xn--landing", "S3 reserves its prefix or suffix"),
        ("landing-s3alias", "S3 reserves its prefix or suffix"),
        ("s3://landing/warehouse", "give the bucket alone (e.g. landing)"),
    ],
)
def test_a_bucket_name_s3_refuses_is_one_line_naming_the_key(bucket, message):
    line = refusal({"s3": [{"bucket": "fine-bucket"}, {"bucket": bucket}]})
    assert line.startswith("c.yml: triggers.s3[1].bucket: ")
    assert message in line


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"s3": [{"bucket": "landing", "region": "eu-west"}]}, "triggers.s3[0].region: 'eu-west'"),
        (
            {"s3": [{"bucket": "landing", "prefix": "s3://landing/warehouse/"}]},
            "triggers.s3[0].prefix: 's3://landing/warehouse/': give the start of the keys",
        ),
        ({"s3": [{"prefix": "warehouse/"}]}, "missing key 'bucket' in triggers.s3[0]"),
        ({"schedule": {"time-zone": "UTC"}}, "missing key 'expression' in triggers.schedule"),
        (
            {"s3": [{"bucket": "landing", "sufix": "_DONE"}]},
            "unknown key 'sufix' in triggers.s3[0]; did you mean 'suffix'?",
        ),
        (
            {"schedule": {"expression": "rate(1 day)", "timezone": "UTC"}},
            "unknown key 'timezone' in triggers.schedule; did you mean 'time-zone'?",
        ),
        ({"shedule": {"expression": "rate(1 day)"}}, "unknown key 'shedule' in triggers; did you"),
        (
            {"catalog-events": {"window": "PT1H"}},
            "triggers.catalog-events.window: PT1H is not a merge window: give one from PT0S to "
            "PT15M",
        ),
        (
            {"catalog-events": {"poll-interval": "PT0.5S"}},
            "triggers.catalog-events.poll-interval: PT0.5S is not a poll interval",
        ),
        ({"catalog-events": {"window": "30s"}}, "triggers.catalog-events.window: '30s' is not"),
        (
            {"catalog-events": {"windows": "PT10S"}},
            "unknown key 'windows' in triggers.catalog-events; did you mean 'window'?",
        ),
        (
            {"s3": [{"bucket": "landing"}, {"bucket": "landing", "suffix": "_SUCCESS"}]},
            "triggers: s3[0] and s3[1] are the same trigger; each object would start two runs",
        ),
    ],
)
def test_other_mistakes_in_triggers_are_one_line_naming_the_key(declared, message):
    assert message in refusal(declared)


def test_catalog_events_default_to_a_thirty_second_window_and_five_second_polls():
    declared = load_triggers({"catalog-events": {}})
    assert declared.declared
    assert declared.catalog_events.window.total_seconds() == 30
    assert declared.catalog_events.poll_interval.total_seconds() == 5
    assert load_triggers({"catalog-events": {"window": "PT0S"}}).catalog_events.window.seconds == 0


def test_catalog_events_left_empty_declare_the_trigger_with_its_defaults():
    # ``catalog-events:`` with nothing under it, as a person writes it to take the defaults.
    document = yaml.safe_load("triggers:\n  catalog-events:\n")
    declared = load_triggers(document["triggers"])
    assert declared.declared
    assert declared.catalog_events.window.total_seconds() == 30
    assert declared.catalog_events.poll_interval.total_seconds() == 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "window: true",
            "c.yml: triggers.catalog-events.window: true is not a duration: write an ISO-8601 "
            "duration such as PT5S",
        ),
        (
            "poll-interval: 5",
            "c.yml: triggers.catalog-events.poll-interval: 5 is not a duration (in which unit?): "
            "write an ISO-8601 duration such as PT5S",
        ),
        ("window: 0.5", "triggers.catalog-events.window: 0.5 is not a duration (in which unit?)"),
    ],
)
def test_a_duration_that_is_not_iso_8601_is_one_line_naming_the_key(text, message):
    declared = yaml.safe_load(f"catalog-events:\n  {text}\n")
    assert message in refusal(declared)


def test_a_poll_interval_for_a_glue_source_is_refused_in_one_line():
    glue = {"name": "lake", "glue": {"region": "us-east-1"}}
    document = {**with_triggers({"catalog-events": {"poll-interval": "PT5S"}}),
                "source-catalog": glue}  # fmt: skip
    with pytest.raises(ConfigError) as raised:
        parse_config(document, "c.yml", {})
    line = str(raised.value)
    assert "\n" not in line
    assert line.startswith("c.yml: triggers.catalog-events.poll-interval: the source catalog is ")
    assert "sends its changes to EventBridge: nothing is polled; remove poll-interval" in line
    # The window alone is a Glue source's setting; a Hive source may set both.
    document["triggers"] = {"catalog-events": {"window": "PT5S"}}
    assert parse_config(document, "c.yml", {}).triggers.catalog_events.window.seconds == 5
    hive = load_triggers({"catalog-events": {"poll-interval": "PT5S"}})
    assert hive.catalog_events.poll_interval.seconds == 5


def test_the_poller_schedule_is_one_eventbridge_takes():
    assert check_schedule_expression(trigger_events.POLLER_SCHEDULE) == trigger_events.POLLER_SCHEDULE


def test_the_housekeeping_schedule_is_one_eventbridge_takes():
    assert check_schedule_expression(trigger_events.HOUSEKEEPING_SCHEDULE) == (
        trigger_events.HOUSEKEEPING_SCHEDULE
    )


# -- what an S3 trigger matches, and the input it starts a run with --------------------------


def object_created(bucket: str, key: str) -> dict:
    event = json.loads((EVENTS / "s3-object-created.json").read_text())
    event["detail"]["bucket"]["name"] = bucket
    event["detail"]["object"]["key"] = key
    return event


KEYS = (
    "warehouse/sales.db/orders/_SUCCESS",
    "warehouse/sales.db/orders/part-00000.parquet",
    "staging/sales.db/orders/_SUCCESS",
    "warehouse/_SUCCESS",
)


def matched_keys(trigger: S3Trigger, bucket: str = "landing") -> list[str]:
    pattern = EventPattern.load(json.dumps(trigger_events.s3_event_pattern(trigger)))
    return [key for key in KEYS if pattern.matches_event(object_created(bucket, key))]


def test_a_prefix_and_a_suffix_match_marker_objects_below_the_prefix():
    trigger = S3Trigger(bucket="landing", prefix="warehouse/sales.db/", suffix="_SUCCESS")
    assert matched_keys(trigger) == ["warehouse/sales.db/orders/_SUCCESS"]
    assert matched_keys(trigger, bucket="elsewhere") == []


def test_a_prefix_alone_matches_every_object_below_it():
    trigger = S3Trigger(bucket="landing", prefix="warehouse/", suffix="")
    assert matched_keys(trigger) == [
        "warehouse/sales.db/orders/_SUCCESS",
        "warehouse/sales.db/orders/part-00000.parquet",
        "warehouse/_SUCCESS",
    ]


def test_a_suffix_alone_matches_markers_anywhere_in_the_bucket():
    assert matched_keys(S3Trigger(bucket="landing")) == [
        "warehouse/sales.db/orders/_SUCCESS",
        "staging/sales.db/orders/_SUCCESS",
        "warehouse/_SUCCESS",
    ]


def test_neither_matches_every_object_of_the_bucket():
    assert matched_keys(S3Trigger(bucket="landing", suffix="")) == list(KEYS)
    assert matched_keys(S3Trigger(bucket="landing", suffix=""), bucket="elsewhere") == []


def test_a_star_in_a_prefix_is_a_character_of_the_key_not_a_wildcard():
    trigger = S3Trigger(bucket="landing", prefix="warehouse/*/", suffix="_SUCCESS")
    pattern = EventPattern.load(json.dumps(trigger_events.s3_event_pattern(trigger)))
    assert pattern.matches_event(object_created("landing", "warehouse/*/x/_SUCCESS"))
    assert not pattern.matches_event(object_created("landing", "warehouse/sales.db/_SUCCESS"))


def test_an_s3_trigger_starts_a_run_of_the_config_with_the_object_as_trigger():
    event = {**object_created("landing", "warehouse/sales.db/orders/_SUCCESS")}
    event["ingestion-time"] = event["time"]  # moto's template parser needs it; AWS sets it
    body = EventTemplateParser.parse(
        trigger_events.s3_input_template("s3://w/c.yml"), trigger_events.S3_INPUT_PATHS, event
    )
    assert body == {
        "configUri": "s3://w/c.yml",
        "trigger": {
            "bucket": "landing",
            "key": "warehouse/sales.db/orders/_SUCCESS",
            "time": event["time"],
        },
    }


def test_a_schedule_starts_a_run_with_its_expression_and_the_time_it_was_due():
    sample = json.loads((EVENTS / "scheduled.json").read_text())
    schedule = ScheduleTrigger(expression=sample["trigger"]["schedule"], time_zone="Europe/London")
    sent = trigger_events.scheduled_input(sample["configUri"], schedule)
    assert sent["trigger"]["scheduledTime"] == "<aws.scheduler.scheduled-time>"
    # EventBridge Scheduler fills the time in: the sample is what the state machine receives.
    delivered = json.loads(
        json.dumps(sent).replace(trigger_events.SCHEDULED_TIME, sample["trigger"]["scheduledTime"])
    )
    assert delivered == sample


@pytest.mark.parametrize("sample", ["scheduled.json", "s3-object-created.json"])
def test_resolve_tables_runs_the_config_whatever_started_it(tmp_path, sample):
    path = tmp_path / "replication.yml"
    path.write_text(yaml.safe_dump(DOCUMENT))
    if sample == "scheduled.json":
        payload = json.loads((EVENTS / sample).read_text())
    else:
        event = object_created("landing", "warehouse/sales.db/orders/_SUCCESS")
        event["ingestion-time"] = event["time"]
        payload = EventTemplateParser.parse(
            trigger_events.s3_input_template("unused"), trigger_events.S3_INPUT_PATHS, event
        )
    payload["configUri"] = str(path)
    context = StateContext((tmp_path / "work").as_uri(), event_ids=lambda _: "ferry-e1")
    result = resolve_tables.run(context, payload, max_concurrency=4)
    assert [(t["sourceTable"], t["replicaTable"]) for t in resolved_tables(result)] == [
        ("sales.orders", "sales_dr.orders")
    ]


# -- ferry local trigger: what it refuses before touching the local runtime --------------------


def write(tmp_path, document) -> Path:
    path = tmp_path / "replication.yml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_local_trigger_refuses_a_config_that_declares_no_trigger(tmp_path, capsys):
    path = write(tmp_path, DOCUMENT)
    assert main(["local", "trigger", str(path), "--home", str(tmp_path / "home")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"ferry: error: {path}: declares no triggers: add the key 'triggers'")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("catalog_events", "source", "key"),
    [
        ("window: true", None, "triggers.catalog-events.window: true is not a duration"),
        ("poll-interval: 5", None, "triggers.catalog-events.poll-interval: 5 is not a duration"),
        (
            "poll-interval: PT5S",
            {"name": "lake", "glue": {"region": "us-east-1"}},
            "triggers.catalog-events.poll-interval: the source catalog is the Glue Data Catalog",
        ),
    ],
)
def test_local_trigger_refuses_a_bad_catalog_events_trigger_in_one_line(
    tmp_path, capsys, catalog_events, source, key
):
    document = {**DOCUMENT, **({"source-catalog": source} if source else {})}
    text = yaml.safe_dump(document) + f"triggers:\n  catalog-events:\n    {catalog_events}\n"
    path = tmp_path / "c.yml"
    path.write_text(text)
    assert main(["local", "trigger", str(path), "--home", str(tmp_path / "home")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"ferry: error: {path}: {key}")
    assert err.count("\n") == 1


def test_local_trigger_needs_a_config(tmp_path, capsys):
    assert main(["local", "trigger", "--home", str(tmp_path)]) == 2
    assert "local trigger needs CONFIG" in capsys.readouterr().err


def test_local_trigger_reports_a_schedule_it_does_not_fire(tmp_path, capsys):
    path = write(
        tmp_path,
        with_triggers(
            {"schedule": {"expression": "cron(0 3 * * ? *)", "time-zone": "Europe/Paris"}}
        ),
    )
    # No S3 trigger: nothing to install, so no local runtime is needed.
    assert main(["local", "trigger", str(path), "--home", str(tmp_path / "home")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f"the schedule cron(0 3 * * ? *) (Europe/Paris) starts {path} on AWS (EventBridge "
        "Scheduler); the local runtime fires no schedules: run "
        f"`ferry execute {path}` by hand"
    ]


# -- what a catalog-events rule matches, and what it sends the intake ------------------------


def glue_document(**glue) -> dict:
    return {
        **DOCUMENT,
        "source-catalog": {"name": "lake", "glue": {"region": "us-east-1", **glue}},
        "table-replications": [
            *DOCUMENT["table-replications"],
            {
                "source-table": {"database-name": "Events", "table-name-pattern": "clicks_.*"},
                "replica-table": {"database-name": "events_dr"},
                "replication-mode": "METADATA_MIRROR",
            },
        ],
        "triggers": {"catalog-events": {}},
    }


def glue_event(name: str, **changes) -> dict:
    event = json.loads((EVENTS / name).read_text())
    event["detail"].update(changes)
    return event


def test_the_glue_rule_matches_the_source_databases_events_and_no_others():
    config = parse_config(glue_document(), "c.yml", {})
    assert trigger_events.source_databases(config) == ["events", "sales"]
    pattern = EventPattern.load(json.dumps(trigger_events.glue_event_pattern(config)))
    assert pattern.matches_event(glue_event("glue-table-state-change.json"))
    assert pattern.matches_event(glue_event("glue-database-state-change.json"))
    assert pattern.matches_event(glue_event("glue-table-state-change.json", databaseName="events"))
    assert not pattern.matches_event(glue_event("glue-table-state-change.json", databaseName="hr"))
    crawler = {
        **glue_event("glue-table-state-change.json"),
        "detail-type": "Glue Crawler State Change",
    }
    assert not pattern.matches_event(crawler)


def test_a_catalog_of_another_account_is_matched_by_its_account():
    config = parse_config(glue_document(**{"catalog-id": "210987654321"}), "c.yml", {})
    pattern = EventPattern.load(json.dumps(trigger_events.glue_event_pattern(config)))
    event = glue_event("glue-table-state-change.json")
    assert not pattern.matches_event(event)
    assert pattern.matches_event({**event, "account": "210987654321"})


def test_the_glue_rule_sends_the_intake_the_config_and_the_whole_event():
    event = glue_event("glue-table-state-change.json")
    body = EventTemplateParser.parse(
        trigger_events.catalog_event_input_template('s3://w/c "x".yml'), {},
        {**event, "ingestion-time": event["time"]},
    )  # fmt: skip
    assert body["configUri"] == 's3://w/c "x".yml'
    # (moto's parser adds the ingestion time it was given, as AWS's event JSON would not)
    assert {k: v for k, v in body["event"].items() if k != "ingestion-time"} == event
