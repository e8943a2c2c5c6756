"""At synth: every state machine carries its definition's TimeoutSeconds, the functions'
lock lease matches the replication's, and every literal resource name fits its service's
limits — a long config name is shortened (deterministically), a name a service refuses
stops the synth with one line naming the resource, the config and the limit."""

from __future__ import annotations

import json

import pytest
import yaml
from aws_cdk import Stack
from aws_cdk import aws_events as events
from aws_cdk.assertions import Template

from ferry import statemachine
from ferry.core.resource_names import NAME_RULES, name_problem
from infra import settings as settings_module
from infra.checks import name_problems
from infra.settings import SettingsError

pytestmark = pytest.mark.infra

#: 34 characters: with "ferry-production-" and "-catalog-poller", 66 before shortening.
LONG_CONFIG = "sales-and-customers-nightly-dr-eu1"

CONFIG = """
source-catalog: {name: onprem, glue: {region: eu-west-1}}
replica-catalog: {name: dr, glue: {region: eu-west-2}}
triggers:
  schedule: {expression: "cron(0 3 * * ? *)"}
  s3:
    - {bucket: landing-bucket, prefix: sales/, suffix: _SUCCESS}
  catalog-events: {}
table-replications:
  - source-table: {database-name: sales, table-name: orders}
    replica-table: {table-location: "s3://dr-bucket/warehouse/orders"}
"""


def test_each_state_machine_carries_its_definitions_timeout(stacks):
    for stack in stacks.values():
        template = Template.from_stack(stack)
        machines = template.find_resources("AWS::StepFunctions::StateMachine")
        timeouts = {
            properties["Properties"]["StateMachineName"].removeprefix(
                f"ferry-{stack.settings.name}-"
            ): json.loads(properties["Properties"]["DefinitionString"]).get("TimeoutSeconds")
            for properties in machines.values()
        }
        assert timeouts == {
            "replication": 24 * 3600,
            "housekeeping": 2 * 3600,
            "catalog-changes": 50 * 3600,
        }


def test_the_functions_lock_lease_is_the_replications_timeout(stacks):
    for stack in stacks.values():
        functions = Template.from_stack(stack).find_resources("AWS::Lambda::Function")
        leases = {
            f["Properties"]["Environment"]["Variables"].get("FERRY_LOCK_LEASE")
            for f in functions.values()
            if "Environment" in f["Properties"]
        }
        assert leases == {f"PT{statemachine.timeout_seconds()}S"}


@pytest.fixture
def environment(tmp_path, monkeypatch):
    """An environment named ``production`` whose one config has the file name given."""
    folder = tmp_path / "environments"
    folder.mkdir()
    monkeypatch.setattr(settings_module, "ENVIRONMENTS", folder)

    def write(config_name: str) -> None:
        (tmp_path / f"{config_name}.yml").write_text(CONFIG)
        document = {
            "account": "111111111111",
            "region": "eu-west-1",
            "replications": [
                {
                    "config": str(tmp_path / f"{config_name}.yml"),
                    "read-locations": ["s3://landing-bucket/sales/"],
                }
            ],
            "write-locations": ["s3://dr-bucket/warehouse/"],
        }
        (folder / "production.yml").write_text(yaml.safe_dump(document))

    return write


def _names(template: dict) -> dict[str, str]:
    found = {}
    for logical, resource in template["Resources"].items():
        rule = NAME_RULES.get(resource["Type"])
        name = resource.get("Properties", {}).get(rule.property) if rule else None
        if isinstance(name, str):
            found[logical] = name
    return found


def test_a_34_character_config_name_gives_no_rule_or_schedule_over_64(environment, tmp_path):
    from infra.app import build_app

    environment(LONG_CONFIG)
    app = build_app(str(tmp_path / "cdk.out"), environments=["production"])
    (stack,) = [c for c in app.node.children if isinstance(c, Stack)]
    template = Template.from_stack(stack).to_json()
    triggers = {
        logical: name
        for logical, name in _names(template).items()
        if template["Resources"][logical]["Type"]
        in ("AWS::Events::Rule", "AWS::Scheduler::Schedule")
    }
    # The schedule, the S3 rule, Glue's events, housekeeping, the freshness check.
    assert len(triggers) == 5
    assert all(len(name) <= 64 for name in triggers.values()), triggers
    assert all(name_problem("AWS::Events::Rule", n) is None for n in triggers.values())
    # Shortened only where it had to be, keeping what the name says.
    assert f"ferry-production-{LONG_CONFIG}" in triggers.values()  # the schedule: 51
    events_rule = next(n for n in triggers.values() if n.endswith("-catalog-events"))
    assert len(events_rule) == 64 and events_rule.startswith("ferry-production-sales-and-")
    assert all(problem is None for problem in name_problems(stack))
    # The same config gets the same names in another synth.
    again = build_app(str(tmp_path / "cdk.out2"), environments=["production"])
    (second,) = [c for c in again.node.children if isinstance(c, Stack)]
    assert _names(Template.from_stack(second).to_json()) == _names(template)


def test_a_name_its_service_refuses_stops_the_synth_naming_the_config(environment, capsys):
    from infra import app

    environment("sales dr")  # a space: no rule or schedule may have one
    with pytest.raises(SystemExit) as stopped:
        app.main(["-c", "environment=production"])
    assert stopped.value.code == 2
    # (the CDK's own "Bundling asset ..." lines come before it)
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("ferry:")]
    assert line.startswith("ferry: error: Ferry-production: Ferry-production/Triggers/"), line
    assert "(config " in line and "sales dr.yml)" in line
    assert "'ferry-production-sales dr" in line and "allows letters, digits" in line


def test_a_literal_name_over_its_limit_is_one_line_with_the_limit():
    from aws_cdk import App

    stack = Stack(App(), "Names")
    events.CfnRule(stack, "Rule", name="r" * 65, schedule_expression="rate(1 hour)")
    (problem,) = name_problems(stack)
    assert problem == (
        "Names: Names/Rule (this stack): Name '" + "r" * 65 + "' has 65 characters; "
        "AWS::Events::Rule allows 1 to 64"
    )
    with pytest.raises(SettingsError, match="has 65 characters"):
        from infra.checks import check

        check(stack.node.root)
