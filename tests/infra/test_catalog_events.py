"""The catalog change feeds as a first deploy creates them, read from the templates.

``infra/replications/sales-dr.yml`` (a Hive source, in both environments) and
``landing-dr.yml`` (a Glue source in us-east-1, prod in us-west-2) declare
``triggers.catalog-events``: the Hive poller's schedule, the rule on Glue's events and its
forwarding from us-east-1, the change window state machine, and each role's grants,
evaluated by the IAM policy simulator the local runtime uses (as ``test_first_deploy.py``).
"""

from __future__ import annotations

import json

import pytest

from ferry import statemachine
from ferry.feeds import trigger_events
from infra.pipeline import STATES_SYNC_RULE
from infra.settings import load_environment
from tests.infra.test_first_deploy import decide, of_type, role_of_function

pytestmark = pytest.mark.infra


def config_uri(template, resolved, stem: str) -> str:
    key = "ConfigUri" + stem.title().replace("-", "")
    return resolved.value(template["Outputs"][key]["Value"])


def named(template, kind: str, suffix: str) -> tuple[str, dict]:
    [(logical, resource)] = [
        (k, r) for k, r in of_type(template, kind).items()
        if str(r["Properties"].get("Name") or r["Properties"].get("StateMachineName")).endswith(suffix)
    ]  # fmt: skip
    return logical, resource


# -- what the templates hold -------------------------------------------------------------------


def test_a_hive_source_is_polled_every_minute_by_its_own_schedule(deployed):
    stack, template, resolved = deployed
    name = stack.settings.name
    _, schedule = named(template, "AWS::Scheduler::Schedule", "-sales-dr-catalog-poller")
    properties = resolved.value(schedule["Properties"])
    assert properties["ScheduleExpression"] == trigger_events.POLLER_SCHEDULE
    assert properties["GroupName"] == f"ferry-{name}"
    target = properties["Target"]
    assert target["Arn"].endswith(f":function:ferry-{name}-catalog-poller")
    uri = config_uri(template, resolved, "sales-dr")
    assert json.loads(target["Input"]) == trigger_events.poller_input(uri)
    assert target["RoleArn"] == resolved.value(template["Outputs"]["PollerScheduleRoleArn"]["Value"])
    # The poller polls for POLL_SECONDS, within its own time.
    [poller] = [
        f["Properties"] for f in of_type(template, "AWS::Lambda::Function").values()
        if f["Properties"]["FunctionName"] == f"ferry-{name}-catalog-poller"
    ]  # fmt: skip
    assert trigger_events.POLL_SECONDS + 10 <= poller["Timeout"] <= 120
    assert "VpcConfig" in poller, "it reads the metastore over Thrift, as the other catalog steps"


def test_a_glue_source_is_a_rule_on_glues_events_whose_target_is_the_intake(stacks):
    from aws_cdk.assertions import Template

    from ferry.local.template import resolved_statically

    stack = stacks["prod"]
    template = Template.from_stack(stack).to_json()
    resolved = resolved_statically(template, stack.stack_name, "222222222222", "us-west-2")
    logical, rule = named(template, "AWS::Events::Rule", "-landing-dr-catalog-events")
    config = next(c for p, c in stack.settings.configs.items() if p.stem == "landing-dr")
    properties = rule["Properties"]
    assert properties["EventPattern"] == trigger_events.glue_event_pattern(config)
    [target] = properties["Targets"]
    assert resolved.value(target["Arn"]).endswith(":function:ferry-prod-catalog-events")
    assert "RoleArn" not in target  # Lambda targets are allowed by the function's policy
    uri = config_uri(template, resolved, "landing-dr")
    assert target["InputTransformer"] == {
        "InputPathsMap": {},
        "InputTemplate": trigger_events.catalog_event_input_template(uri),
    }
    # EventBridge may invoke the intake for this rule only.
    [permission] = [
        p["Properties"] for p in of_type(template, "AWS::Lambda::Permission").values()
        if p["Properties"]["SourceArn"] == {"Fn::GetAtt": [logical, "Arn"]}
    ]  # fmt: skip
    assert permission["Principal"] == "events.amazonaws.com"
    assert permission["Action"] == "lambda:InvokeFunction"
    assert permission["FunctionName"] == target["Arn"]
    # A Hive source has no rule, a Glue source no poller.
    assert not [
        r for r in of_type(template, "AWS::Scheduler::Schedule").values()
        if r["Properties"]["Name"] == "ferry-prod-landing-dr-catalog-poller"
    ]  # fmt: skip


def test_glue_events_of_another_region_are_forwarded_to_the_pipelines(app):
    from aws_cdk.assertions import Template

    from infra.forwarding import EventForwarding
    from infra.triggers import foreign_regions

    settings = load_environment("prod")
    config = next(c for p, c in settings.configs.items() if p.stem == "landing-dr")
    assert trigger_events.glue_event_pattern(config) in foreign_regions(settings)["us-east-1"]
    [forwarder] = [
        c for c in app.node.children
        if isinstance(c, EventForwarding) and c.region == "us-east-1"
    ]  # fmt: skip
    rules = of_type(Template.from_stack(forwarder).to_json(), "AWS::Events::Rule").values()
    patterns = [r["Properties"]["EventPattern"] for r in rules]
    assert trigger_events.glue_event_pattern(config) in patterns


def test_the_change_window_state_machine_runs_the_definition_with_its_functions(deployed):
    stack, template, resolved = deployed
    name = stack.settings.name
    _, machine = named(template, "AWS::StepFunctions::StateMachine", "-catalog-changes")
    properties = machine["Properties"]
    definition = properties["DefinitionString"]
    assert definition == statemachine.CHANGES_PATH.read_text()
    substitutions = resolved.value(properties["DefinitionSubstitutions"])
    assert set(substitutions) == statemachine.placeholders(statemachine.CHANGES_PATH)
    assert substitutions["ClaimChangesFunctionArn"].endswith(f":function:ferry-{name}-claim-changes")
    assert substitutions["CloseWindowFunctionArn"].endswith(f":function:ferry-{name}-close-window")
    assert substitutions["ReplicationStateMachineArn"].endswith(f":stateMachine:ferry-{name}-replication")
    machine_arn = resolved.value(template["Outputs"]["CatalogChangesStateMachineArn"]["Value"])
    assert machine_arn.endswith(f":stateMachine:ferry-{name}-catalog-changes")
    # The feeds start it: its ARN is in their environment.
    for function in of_type(template, "AWS::Lambda::Function").values():
        variables = resolved.value(function["Properties"]["Environment"]["Variables"])
        feed = function["Properties"]["FunctionName"] in (
            f"ferry-{name}-catalog-events", f"ferry-{name}-catalog-poller"
        )  # fmt: skip
        assert (variables.get("FERRY_CHANGES_STATE_MACHINE_ARN") == machine_arn) == feed


# -- least privilege -------------------------------------------------------------------------


def test_the_change_window_may_run_and_watch_replications_and_nothing_more(deployed, simulator):
    stack, template, resolved = deployed
    name, region, account = stack.settings.name, stack.settings.region, stack.settings.account
    _, machine = named(template, "AWS::StepFunctions::StateMachine", "-catalog-changes")
    role = machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]

    def may(action: str, resource: str) -> bool:
        return decide(simulator, template, resolved, role, action, resource) == "Allowed"

    states = f"arn:aws:states:{region}:{account}"
    function = f"arn:aws:lambda:{region}:{account}:function:ferry-{name}"
    assert may("lambda:InvokeFunction", f"{function}-claim-changes")
    assert may("lambda:InvokeFunction", f"{function}-close-window")
    assert may("states:StartExecution", f"{states}:stateMachine:ferry-{name}-replication")
    for action in ("states:DescribeExecution", "states:StopExecution"):
        assert may(action, f"{states}:execution:ferry-{name}-replication:window-1")
    for action in ("events:PutTargets", "events:PutRule", "events:DescribeRule"):
        assert may(action, f"arn:aws:events:{region}:{account}:rule/{STATES_SYNC_RULE}")
    # not the other functions, machines, rules
    assert not may("lambda:InvokeFunction", f"{function}-commit")
    assert not may("lambda:InvokeFunction", f"{function}-catalog-events")
    assert not may("states:StartExecution", f"{states}:stateMachine:ferry-{name}-housekeeping")
    assert not may("states:StopExecution", f"{states}:execution:ferry-{name}-housekeeping:x")
    assert not may("events:PutRule", f"arn:aws:events:{region}:{account}:rule/any-rule")


def test_each_feed_function_may_touch_only_the_feeds_items_of_the_state_table(deployed, simulator):
    stack, template, resolved = deployed
    name, region, account = stack.settings.name, stack.settings.region, stack.settings.account
    table = f"arn:aws:dynamodb:{region}:{account}:table/ferry-{name}-state"
    uri = config_uri(template, resolved, "sales-dr")
    window = f"changes#{uri}"
    position = f"feed#{uri}"
    lock = "thrift://metastore-1:9083/sales_dr.orders"  # a replica's lock and ledger

    def may(function: str, action: str, key: str) -> bool:
        role = role_of_function(template, f"-{function}")
        context = {"dynamodb:LeadingKeys": [key]}
        return decide(simulator, template, resolved, role, action, table, context) == "Allowed"

    # The intake and the poller look through the config's open windows (a Query of its
    # partition) for one whose execution is gone.
    calls = {
        "catalog-events": {("dynamodb:UpdateItem", window), ("dynamodb:Query", window)},
        "catalog-poller": {
            ("dynamodb:GetItem", position), ("dynamodb:UpdateItem", position),
            ("dynamodb:UpdateItem", window), ("dynamodb:Query", window),
        },
        "claim-changes": {("dynamodb:GetItem", window), ("dynamodb:UpdateItem", window)},
        "close-window": {("dynamodb:DeleteItem", window)},
    }  # fmt: skip
    actions = ("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
               "dynamodb:PutItem", "dynamodb:Query")  # fmt: skip
    for function, needed in calls.items():
        for action in actions:
            for key in (window, position):
                # one grant covers both kinds of the feeds' items
                expected = any(a == action for a, _ in needed)
                assert may(function, action, key) == expected, (function, action, key)
            # never a lock or the ledger
            assert not may(function, action, lock), (function, action)


def test_the_feeds_start_and_look_at_change_windows_only(deployed, simulator):
    stack, template, resolved = deployed
    name, region, account = stack.settings.name, stack.settings.region, stack.settings.account
    states = f"arn:aws:states:{region}:{account}"
    for function in ("catalog-events", "catalog-poller"):
        role = role_of_function(template, f"-{function}")

        def may(action: str, resource: str, role: str = role) -> bool:
            return decide(simulator, template, resolved, role, action, resource) == "Allowed"

        changes = f"{states}:stateMachine:ferry-{name}-catalog-changes"
        assert may("states:StartExecution", changes), function
        assert may("states:DescribeExecution", f"{states}:execution:ferry-{name}-catalog-changes:w")
        assert not may("states:StartExecution", f"{states}:stateMachine:ferry-{name}-replication")
        assert not may("states:StopExecution", f"{states}:execution:ferry-{name}-catalog-changes:w")
    # The window's own steps start nothing.
    for function in ("claim-changes", "close-window"):
        role = role_of_function(template, f"-{function}")
        changes = f"{states}:stateMachine:ferry-{name}-catalog-changes"
        assert (
            decide(simulator, template, resolved, role, "states:StartExecution", changes)
            != "Allowed"
        )


def test_the_pollers_schedules_may_invoke_the_poller_only(deployed, simulator):
    stack, template, resolved = deployed
    name, region, account = stack.settings.name, stack.settings.region, stack.settings.account
    [(role, resource)] = [
        (k, r) for k, r in of_type(template, "AWS::IAM::Role").items() if "PollerScheduleRole" in k
    ]
    trust = resource["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert [s["Principal"] for s in trust] == [{"Service": "scheduler.amazonaws.com"}]
    function = f"arn:aws:lambda:{region}:{account}:function:ferry-{name}"
    assert (
        decide(simulator, template, resolved, role, "lambda:InvokeFunction", f"{function}-catalog-poller")
        == "Allowed"
    )
    for other in ("-catalog-events", "-plan", "-catalog-poller:1"):
        assert (
            decide(simulator, template, resolved, role, "lambda:InvokeFunction", function + other)
            != "Allowed"
        ), other


def test_eventbridge_may_invoke_the_intake_for_the_glue_rule_only(stacks, simulator):
    from aws_cdk.assertions import Template

    from ferry.local.simulator import Request
    from ferry.local.template import resolved_statically

    stack = stacks["prod"]
    template = Template.from_stack(stack).to_json()
    resolved = resolved_statically(template, stack.stack_name, "222222222222", "us-west-2")
    [permission] = [
        resolved.value(p["Properties"]) for p in of_type(template, "AWS::Lambda::Permission").values()
    ]
    # The function's resource policy, as Lambda writes it from the permission.
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": permission["Principal"]},
                "Action": permission["Action"],
                "Resource": permission["FunctionName"],
                "Condition": {
                    "ArnLike": {"AWS:SourceArn": permission["SourceArn"]},
                    "StringEquals": {"AWS:SourceAccount": permission["SourceAccount"]},
                },
            }
        ],
    }

    def invoke(rule_arn: str) -> str:
        return simulator.decide(
            Request(
                principal="events.amazonaws.com",
                action="lambda:InvokeFunction",
                resource=permission["FunctionName"],
                resource_account="222222222222",
                resource_policy=policy,
                context={"aws:SourceArn": rule_arn, "aws:SourceAccount": "222222222222"},
            )
        ).decision

    rules = "arn:aws:events:us-west-2:222222222222:rule"
    assert invoke(f"{rules}/ferry-prod-landing-dr-catalog-events") == "Allowed"
    assert invoke(f"{rules}/ferry-prod-sales-dr-s3-0") != "Allowed"


def test_a_glue_catalog_of_another_account_may_put_its_events_on_the_pipelines_bus(
    tmp_path, simulator
):
    """That account forwards its aws.glue events itself (docs/CONFIGURATION.md); the stack's
    rule matches only its account's events, and the default bus lets it put them."""
    import yaml
    from aws_cdk import App
    from aws_cdk.assertions import Template

    from ferry.local.simulator import Request
    from infra.settings import Replication
    from infra.stack import FerryStack
    from infra.triggers import foreign_regions

    config = tmp_path / "partner.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "source-catalog": {
                    "name": "partner",
                    "glue": {"region": "eu-west-1", "catalog-id": "333333333333"},
                },
                "replica-catalog": {"name": "dr", "glue": {"region": "eu-west-1"}},
                "triggers": {"catalog-events": {}},
                "table-replications": [
                    {
                        "source-table": {"database-name": "shared", "table-name": "orders"},
                        "replication-mode": "METADATA_MIRROR",
                        "replica-table": {"database-name": "shared_dr"},
                    }
                ],
            }
        )
    )
    settings = load_environment("dev").model_copy(
        update={
            "replications": [
                Replication(config=config, read_locations=["s3://partner-warehouse/shared/"])
            ]
        }
    )
    assert foreign_regions(settings) == {}  # the other account forwards, not this app
    template = Template.from_stack(FerryStack(App(), "Ferry-dev", settings=settings)).to_json()
    _, rule = named(template, "AWS::Events::Rule", "-partner-catalog-events")
    assert rule["Properties"]["EventPattern"]["account"] == ["333333333333"]
    [policy] = of_type(template, "AWS::Events::EventBusPolicy").values()
    statement = policy["Properties"]["Statement"]
    bus = "arn:aws:events:eu-west-1:111111111111:event-bus/default"

    def put_events(account: str) -> str:
        return simulator.decide(
            Request(
                principal=f"arn:aws:iam::{account}:role/forwarder",
                action="events:PutEvents",
                resource=bus,
                resource_account="111111111111",
                identity_policies=(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {"Effect": "Allow", "Action": "events:PutEvents", "Resource": bus}
                        ],
                    },
                ),
                resource_policy={"Version": "2012-10-17", "Statement": [statement]},
            )
        ).decision

    assert put_events("333333333333") == "Allowed"
    assert put_events("444444444444") != "Allowed"
