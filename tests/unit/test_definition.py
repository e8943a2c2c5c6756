"""The one state machine definition: complete, parseable by the emulator, and defensive."""

import importlib
import json
import re
from pathlib import Path

import pytest
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

from ferry import statemachine as definition
from ferry.core.errors import error_names, transient_errors
from ferry.local.emulator_states import tolerance_as_moto_reads_it

EVENTS = Path(__file__).parents[2] / "events"
SUBSTITUTIONS = {
    **{
        f"{name}FunctionArn": f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        for name in definition.FUNCTIONS
    },
    "SparkApplicationId": "00abc",
    "SparkJobRoleArn": "arn:aws:iam::123456789012:role/spark",
    "CopyJobEntryPoint": "s3://assets/copy_files.py",
    "SparkSubmitParameters": "--conf spark.executor.cores=4",
}


@pytest.fixture(scope="module")
def rendered():
    return definition.load(SUBSTITUTIONS)


def test_every_placeholder_is_known_and_filled():
    assert definition.placeholders() == set(SUBSTITUTIONS)
    with pytest.raises(KeyError, match="SparkApplicationId"):
        definition.render({k: v for k, v in SUBSTITUTIONS.items() if k != "SparkApplicationId"})


def test_the_emulator_parses_the_definition():
    # moto's grammar reads ToleratedFailurePercentage as a decimal only: the local runtime
    # gives it one (ferry.local.emulator_states).
    AmazonStateLanguageParser.parse(tolerance_as_moto_reads_it(definition.render(SUBSTITUTIONS)))


def test_no_state_has_an_item_or_a_list_that_grows_with_the_run(rendered):
    """256 KiB per state: what grows with the tables or the files travels through S3."""
    maps = {n: s for n, s in definition.states(rendered).items() if s["Type"] == "Map"}
    for name, state in maps.items():
        assert "ItemReader" in state and "ItemsPath" not in state, name
        assert "ResultWriter" in state, name
        assert state["ItemProcessor"]["ProcessorConfig"]["Mode"] == "DISTRIBUTED", name
    selected = rendered["States"]["Resolve tables"]["ResultSelector"]
    assert "tables.$" in selected and selected["tables.$"] == "$.Payload.count"


def test_every_task_has_retry_and_catch(rendered):
    tasks = {
        name: state
        for name, state in definition.states(rendered).items()
        if state["Type"] == "Task"
    }
    assert {
        "Resolve tables",
        "Plan",
        "Inline copy",
        "Copy batch",
        "Spark copy",
        "Commit",
        "Notify success",
        "Abort table",
        "Summarize",
    } <= set(tasks)
    for name, state in tasks.items():
        assert "Comment" in state and "ResultPath" in state, name


def _every_state(node, path=()):
    """Every state of a definition, nested Map processors and Parallel branches included,
    walked from the JSON itself (not through ``definition.states``)."""
    for name, state in node.get("States", {}).items():
        yield (*path, name), state
        for key in ("ItemProcessor", "Iterator"):
            if key in state:
                yield from _every_state(state[key], (*path, name))
        for branch in state.get("Branches", []):
            yield from _every_state(branch, (*path, name))


@pytest.mark.parametrize("path", definition.DEFINITIONS, ids=lambda p: p.name)
def test_every_task_and_map_of_every_definition_has_retry_and_catch(path):
    document = json.loads(path.read_text())
    walked = list(_every_state(document))
    assert any(state["Type"] == "Task" for _, state in walked)
    for where, state in walked:
        if state["Type"] in ("Task", "Map", "Parallel"):
            assert state.get("Retry"), f"{path.name}: {' > '.join(where)} has no Retry"
            assert state.get("Catch"), f"{path.name}: {' > '.join(where)} has no Catch"
            # The last catcher takes every error: nothing escapes past the state's clean-up.
            assert state["Catch"][-1]["ErrorEquals"] == ["States.ALL"], where


def test_the_walk_finds_a_nested_task_without_catch():
    document = json.loads(definition.DEFINITION_PATH.read_text())
    batch = document["States"]["Replicate tables"]["ItemProcessor"]["States"][
        "S3 server-side copy"
    ]["ItemProcessor"]["States"]["Copy batch"]
    del batch["Catch"]
    missing = [w for w, s in _every_state(document) if s["Type"] == "Task" and not s.get("Catch")]
    assert missing == [("Replicate tables", "S3 server-side copy", "Copy batch")]


@pytest.mark.parametrize(
    ("path", "seconds"),
    [
        (definition.DEFINITION_PATH, 24 * 3600),
        (definition.HOUSEKEEPING_PATH, 2 * 3600),
        (definition.CHANGES_PATH, 50 * 3600),
    ],
    ids=lambda v: getattr(v, "name", str(v)),
)
def test_each_definition_bounds_its_executions(path, seconds):
    assert json.loads(path.read_text())["TimeoutSeconds"] == seconds
    assert definition.timeout_seconds(path) == seconds


def test_the_change_window_outlasts_its_wait_a_replication_and_a_follow_up():
    from ferry.config.triggers import MAX_WINDOW

    window = int(MAX_WINDOW.total_seconds())
    replication = definition.timeout_seconds(definition.DEFINITION_PATH)
    assert definition.timeout_seconds(definition.CHANGES_PATH) >= 2 * (window + replication)


def test_a_change_window_that_cannot_claim_or_close_tries_again_after_a_wait():
    states = json.loads(definition.CHANGES_PATH.read_text())["States"]
    for task, wait in (("Claim changes", "Wait to claim again"),
                       ("Close the window", "Wait to close again")):  # fmt: skip
        catch = states[task]["Catch"][-1]
        assert catch["ErrorEquals"] == ["States.ALL"] and catch["Next"] == wait
        assert states[wait]["Type"] == "Wait" and states[wait]["Next"] == task
    # A config that cannot be read is not waited for: the execution fails (and is alarmed on).
    assert states["Claim changes"]["Catch"][0]["ErrorEquals"] == ["ConfigError"]
    assert states[states["Claim changes"]["Catch"][0]["Next"]]["Type"] == "Fail"
    # A failed replication still closes the window (its table failed on its own).
    assert states["Replicate the table"]["Catch"][0]["Next"] == "Close the window"


def test_every_state_has_a_comment_and_every_transition_exists(rendered):
    every = definition.states(rendered)
    for name, state in every.items():
        assert state.get("Comment"), f"{name} has no Comment"
        targets = [
            state.get("Next"),
            state.get("Default"),
            *(c["Next"] for c in state.get("Choices", [])),
            *(c["Next"] for c in state.get("Catch", [])),
        ]
        assert all(t in every for t in targets if t), f"{name} points at a missing state"


def test_failures_are_caught_per_table_and_end_the_execution_with_the_named_error(rendered):
    per_table = rendered["States"]["Replicate tables"]["ItemProcessor"]["States"]
    for name, state in per_table.items():
        for catch in state.get("Catch", []):
            target = catch["Next"]
            # A Pass that records which state failed, then Abort table.
            if target == f"{name} failed":
                assert per_table[target]["Result"] == name
                assert per_table[target]["ResultPath"] == "$.failedState"
                target = per_table[target]["Next"]
            assert target in {"Abort table", "Abort before plan", "Abort failed"}, name
    failed = rendered["States"]["Replication failed"]
    assert (failed["Type"], failed["ErrorPath"], failed["CausePath"]) == (
        "Fail",
        "$.summary.error",
        "$.summary.cause",
    )


def test_sample_events_exist_for_every_state_and_trigger():
    names = {path.stem for path in EVENTS.glob("*.json")}
    handlers = {handler.split(".")[1] for handler in definition.FUNCTIONS.values()}
    assert handlers | {"manual-start", "scheduled", "s3-object-created"} <= names
    for path in EVENTS.glob("*.json"):
        json.loads(path.read_text())


def test_every_lambda_step_retries_with_the_one_policy_derived_from_ferrys_errors(rendered):
    policy = definition.retry_policy()
    assert "CatalogUnreachableError" in policy[0]["ErrorEquals"]
    assert "Sandbox.Timedout" in policy[0]["ErrorEquals"]  # every step is safe to run again
    for name, state in definition.lambda_tasks(rendered).items():
        assert state["Retry"] == policy, f"{name}: run `python -m ferry.statemachine`"


def test_the_definition_names_only_errors_that_exist(rendered):
    aws_prefixes = ("States.", "Lambda.", "Sandbox.", "EMRServerless.", "StepFunctions.")
    named = {
        error
        for path in definition.DEFINITIONS
        for state in definition.states(json.loads(path.read_text())).values()
        for block in state.get("Retry", []) + state.get("Catch", [])
        for error in block["ErrorEquals"]
    }
    unknown = {e for e in named if not e.startswith(aws_prefixes)} - error_names()
    assert unknown == set()
    assert "StepFunctions.ExecutionLimitExceededException" in named
    assert {e for e in named if not e.startswith(aws_prefixes)} >= set(transient_errors())


def test_each_function_runs_the_state_module_its_handler_calls():
    for function, handler in definition.FUNCTIONS.items():
        module = handler.rsplit(".", 1)[0]
        source = Path(importlib.import_module(module).__file__).read_text()
        state = definition.STATES[function]
        assert f"{state.rsplit('.', 1)[1]}.run(" in source, module
        assert callable(importlib.import_module(state).run)


def test_the_in_process_driver_understands_every_path_the_definition_uses():
    from ferry.commands.in_process import substitutions
    from ferry.commands.in_process_data_flow import PATH

    text = json.dumps(definition.load(substitutions()))
    for path in re.findall(r'"(\$\$?\.[^"]*|\$)"', text):
        assert PATH.match(path), path
