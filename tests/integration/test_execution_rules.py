"""The emulated Step Functions keeps AWS's run-time rules (``ferry.local.emulator_executions``,
``ferry.local.emulator_states``): an execution's and a task's time limits, execution names,
the ``AWS/States`` metrics the stack's alarms read, and a Distributed Map's run and children
listed while they run.

Each state machine here is small and short (time limits of 1 s); a Lambda task that must
overrun runs a deployed-style function of this project (Summarize) held at its fail point.
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from ferry.core.faults import FaultFile
from ferry.local import deploy
from ferry.local.emulator_executions import name_problem
from ferry.local.emulator_server import FAULTS_FILE
from ferry.statemachine.executions import follow, start

pytestmark = pytest.mark.integration

#: How long the held function hangs: well past every time limit below.
HANG_SECONDS = 3


def _trust(service: str) -> str:
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


@pytest.fixture(scope="module")
def world(local_runtime):
    """A role for the state machines, a topic for callback tasks, and a function that hangs
    (Summarize held at its fail point ``summarize``) while the test arms it."""
    session = boto3.session.Session(region_name="us-east-1")
    iam, lam, s3, sns = (session.client(s) for s in ("iam", "lambda", "s3", "sns"))
    suffix = str(time.monotonic_ns())
    role = iam.create_role(
        RoleName=f"rules-states-{suffix}", AssumeRolePolicyDocument=_trust("states.amazonaws.com")
    )["Role"]
    actions = [
        "lambda:InvokeFunction",
        "sns:Publish",
        "states:StartExecution",
        "states:DescribeExecution",
        "states:StopExecution",
        "events:PutTargets",
        "events:PutRule",
        "events:DescribeRule",
    ]
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions,
                                                      "Resource": "*"}]}  # fmt: skip
    iam.put_role_policy(
        RoleName=role["RoleName"], PolicyName="rules", PolicyDocument=json.dumps(policy)
    )
    function_role = iam.create_role(
        RoleName=f"rules-function-{suffix}", AssumeRolePolicyDocument=_trust("lambda.amazonaws.com")
    )["Role"]["Arn"]
    bucket = f"rules-{suffix}"
    s3.create_bucket(Bucket=bucket)
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("lambdas/__init__.py", "")  # the code runs from the checkout
    function = lam.create_function(
        FunctionName=f"rules-held-{suffix}",
        Runtime="python3.12",
        Role=function_role,
        Handler="lambdas.summarize.handler",
        Code={"ZipFile": code.getvalue()},
        Timeout=30,
        Environment={"Variables": {"FERRY_WORK_URI": f"s3://{bucket}/work"}},
    )["FunctionArn"]
    topic = sns.create_topic(Name=f"rules-{suffix}")["TopicArn"]
    return {"role": role["Arn"], "function": function, "topic": topic, "bucket": bucket}


@pytest.fixture
def sfn(local_runtime):
    return boto3.client("stepfunctions", region_name="us-east-1")


@pytest.fixture
def machine(sfn, world):
    """A state machine of the given definition, with the world's role; deleted after."""
    created = []

    def create(document: dict) -> str:
        arn = sfn.create_state_machine(
            name=f"rules-{len(created)}-{time.monotonic_ns()}",
            definition=json.dumps(document),
            roleArn=world["role"],
        )["stateMachineArn"]
        created.append(arn)
        return arn

    yield create
    for arn in created:
        sfn.delete_state_machine(stateMachineArn=arn)


@pytest.fixture
def held(local_runtime):
    """Hold the world's function at its fail point for HANG_SECONDS, every invocation."""
    fault_file = FaultFile(local_runtime.state_dir / "aws" / FAULTS_FILE)
    fault_file.write([{"point": "summarize", "action": "hang", "seconds": HANG_SECONDS,
                       "times": 100}])  # fmt: skip
    yield
    fault_file.clear()


def held_task(world: dict, **fields) -> dict:
    """A Task that invokes the held function (its input is valid: it reaches the fail point)."""
    payload = {"results": {"Bucket": world["bucket"], "Key": "none.json"}}
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": world["function"], "Payload": payload},
        **fields,
    }


def run(sfn, arn: str, execution_input: dict | None = None, timeout: float = 30):
    return follow(
        sfn,
        start(sfn, arn, deploy.execution_name("rules"), execution_input or {}),
        poll_seconds=0.1,
        timeout_seconds=timeout,
    )


def history(sfn, execution_arn: str) -> list[dict]:
    return sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]


def metric_sum(local_runtime, machine_arn: str, metric: str) -> float:
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    now = datetime.now(UTC)
    points = cloudwatch.get_metric_statistics(
        Namespace="AWS/States",
        MetricName=metric,
        Dimensions=[{"Name": "StateMachineArn", "Value": machine_arn}],
        StartTime=now - timedelta(minutes=10),
        EndTime=now + timedelta(minutes=1),
        Period=60,
        Statistics=["Sum"],
    )["Datapoints"]
    return sum(point["Sum"] for point in points)


# -- An execution's time limit ----------------------------------------------------------------


def test_an_execution_past_its_timeout_ends_timed_out_at_once_and_counts_as_timed_out(
    sfn, machine, world, held, local_runtime
):
    arn = machine({"TimeoutSeconds": 1, "StartAt": "Held", "States": {"Held": held_task(world,
                   End=True)}})  # fmt: skip
    outcome = run(sfn, arn)
    assert outcome.status == "TIMED_OUT"
    described = sfn.describe_execution(executionArn=outcome.execution_arn)
    # It ends at its 1 s limit, not when the function returns after 3 s.
    assert (described["stopDate"] - described["startDate"]).total_seconds() < HANG_SECONDS
    assert history(sfn, outcome.execution_arn)[-1]["type"] == "ExecutionTimedOut"
    # The function goes on and then fails (its input names no results): nothing of that is
    # the execution's any more.
    time.sleep(HANG_SECONDS + 1)
    events = history(sfn, outcome.execution_arn)
    assert events[-1]["type"] == "ExecutionTimedOut"
    assert not [e for e in events if e["type"] in ("TaskFailed", "ExecutionFailed")]
    assert sfn.describe_execution(executionArn=outcome.execution_arn)["status"] == "TIMED_OUT"
    # What the stack's replication-timed-out alarm reads (metric_timed_out(): Sum).
    assert metric_sum(local_runtime, arn, "ExecutionsStarted") == 1
    assert metric_sum(local_runtime, arn, "ExecutionsTimedOut") == 1
    assert metric_sum(local_runtime, arn, "ExecutionsFailed") == 0


def test_a_stopped_execution_is_aborted_at_once_whatever_its_running_task_does(
    sfn, machine, world, held, local_runtime
):
    arn = machine({"StartAt": "Held", "States": {"Held": held_task(world, End=True)}})
    execution = start(sfn, arn, deploy.execution_name("rules"), {})
    time.sleep(0.5)  # in the held function
    sfn.stop_execution(executionArn=execution, error="Stopped", cause="by the test")
    described = sfn.describe_execution(executionArn=execution)  # at once: no waiting
    assert described["status"] == "ABORTED"
    assert described["stopDate"] >= described["startDate"]
    last = history(sfn, execution)[-1]
    assert last["type"] == "ExecutionAborted"
    assert last["executionAbortedEventDetails"] == {"error": "Stopped", "cause": "by the test"}
    time.sleep(HANG_SECONDS + 1)  # the function returns, then fails: not the execution's
    assert sfn.describe_execution(executionArn=execution)["status"] == "ABORTED"
    assert history(sfn, execution)[-1]["type"] == "ExecutionAborted"
    assert metric_sum(local_runtime, arn, "ExecutionsAborted") == 1
    assert metric_sum(local_runtime, arn, "ExecutionsFailed") == 0


def test_a_parent_waiting_on_a_timed_out_execution_fails_with_its_status(sfn, machine):
    child = machine({"TimeoutSeconds": 1, "StartAt": "Wait",
                     "States": {"Wait": {"Type": "Wait", "Seconds": 5, "End": True}}})  # fmt: skip
    parent = machine(
        {
            "StartAt": "Run the child",
            "States": {
                "Run the child": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::states:startExecution.sync:2",
                    "Parameters": {"StateMachineArn": child, "Input": {}},
                    "End": True,
                }
            },
        }
    )
    outcome = run(sfn, parent)
    assert (outcome.status, outcome.error) == ("FAILED", "States.TaskFailed")
    cause = json.loads(outcome.cause)
    assert cause["Status"] == "TIMED_OUT" and cause["StateMachineArn"] == child
    assert cause["StopDate"] >= cause["StartDate"]


def test_a_child_its_task_no_longer_waits_for_is_stopped(sfn, machine):
    child = machine(
        {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 30, "End": True}}}
    )
    parent = machine(
        {
            "StartAt": "Run the child",
            "States": {
                "Run the child": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::states:startExecution.sync:2",
                    "Parameters": {"StateMachineArn": child, "Input": {}},
                    "TimeoutSeconds": 1,
                    "End": True,
                }
            },
        }
    )
    outcome = run(sfn, parent)
    assert (outcome.status, outcome.error) == ("FAILED", "States.Timeout")
    deadline = time.monotonic() + 5
    while True:  # the child stops shortly after: its parent's task polls it twice a second
        started = sfn.list_executions(stateMachineArn=child)["executions"]
        if started and started[0]["status"] != "RUNNING":
            break
        assert time.monotonic() < deadline, f"the child is still running: {started}"
        time.sleep(0.1)
    assert [execution["status"] for execution in started] == ["ABORTED"]


# -- A task's time limits ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "limit", [{"TimeoutSeconds": 1}, {"TimeoutSecondsPath": "$.limit"}], ids=["fixed", "path"]
)
def test_a_lambda_task_past_its_timeout_fails_with_states_timeout_which_retry_and_catch_match(
    sfn, machine, world, held, limit
):
    arn = machine(
        {
            "StartAt": "Held",
            "States": {
                "Held": held_task(
                    world,
                    **limit,
                    Retry=[{"ErrorEquals": ["States.Timeout"], "MaxAttempts": 1,
                            "IntervalSeconds": 1}],
                    Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error",
                            "Next": "Caught"}],
                    End=True,
                ),
                "Caught": {"Type": "Pass", "End": True},
            },
        }
    )  # fmt: skip
    outcome = run(sfn, arn, {"limit": 1})
    assert outcome.status == "SUCCEEDED"
    assert outcome.output["error"]["Error"] == "States.Timeout"
    # Each attempt ends at its 1 s limit, not when the function returns after 3 s. Read from
    # the history's own clock, so a loaded machine's start-up time is not counted.
    attempts, scheduled = [], None
    for event in history(sfn, outcome.execution_arn):
        if event["type"] == "TaskScheduled":
            scheduled = event["timestamp"]
        elif event["type"] == "TaskTimedOut":
            attempts.append((event["timestamp"] - scheduled).total_seconds())
    assert len(attempts) == 2  # the first attempt, and its retry
    assert all(seconds < HANG_SECONDS for seconds in attempts), attempts


def callback_task(world: dict, **fields) -> dict:
    """A Task that publishes its token and waits for it (no one sends it back)."""
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::sns:publish.waitForTaskToken",
        "Parameters": {"TopicArn": world["topic"], "Message": {"token.$": "$$.Task.Token"}},
        "HeartbeatSeconds": 1,
        "TimeoutSeconds": 30,
        **fields,
    }


def test_a_callback_task_without_a_heartbeat_fails_with_states_timeout(sfn, machine, world):
    arn = machine({"StartAt": "Wait", "States": {"Wait": callback_task(world, End=True)}})
    began = time.monotonic()
    outcome = run(sfn, arn)
    assert (outcome.status, outcome.error) == ("FAILED", "States.Timeout")
    assert time.monotonic() - began < 10


def test_a_missed_heartbeat_is_matched_by_states_heartbeat_timeout_too(sfn, machine, world):
    arn = machine(
        {
            "StartAt": "Wait",
            "States": {
                "Wait": callback_task(
                    world,
                    Retry=[{"ErrorEquals": ["States.HeartbeatTimeout"], "MaxAttempts": 1,
                            "IntervalSeconds": 1}],
                    Catch=[{"ErrorEquals": ["States.Timeout"], "ResultPath": "$.error",
                            "Next": "Caught"}],
                    End=True,
                ),
                "Caught": {"Type": "Pass", "End": True},
            },
        }
    )  # fmt: skip
    outcome = run(sfn, arn)
    assert outcome.status == "SUCCEEDED"
    assert outcome.output["error"]["Error"] == "States.Timeout"
    timed_out = [e for e in history(sfn, outcome.execution_arn) if e["type"] == "TaskTimedOut"]
    assert len(timed_out) == 2  # retried once as a heartbeat timeout, then caught


# -- Execution names ----------------------------------------------------------------------------


PASS = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}


@pytest.mark.parametrize(
    ("name", "code"),
    [("x" * 90, "ValidationException"), ("a table", "InvalidName"), ("db/table", "InvalidName")],
    ids=["90 characters", "whitespace", "slash"],
)
def test_start_execution_refuses_a_name_aws_refuses(sfn, machine, name, code):
    arn = machine(PASS)
    with pytest.raises(sfn.exceptions.ClientError) as refused:
        sfn.start_execution(stateMachineArn=arn, name=name, input="{}")
    assert refused.value.response["Error"]["Code"] == code
    assert name in refused.value.response["Error"]["Message"]
    assert sfn.list_executions(stateMachineArn=arn)["executions"] == []


@pytest.mark.parametrize(
    ("name", "error"),
    [("x" * 90, "StepFunctions.ValidationException"),
     ("a table", "StepFunctions.InvalidNameException")],
    ids=["90 characters", "whitespace"],
)  # fmt: skip
def test_a_task_starting_an_execution_with_a_name_aws_refuses_fails(sfn, machine, name, error):
    child = machine(PASS)
    parent = machine(
        {
            "StartAt": "Start the child",
            "States": {
                "Start the child": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::states:startExecution",
                    "Parameters": {"StateMachineArn": child, "Input": {}, "Name": name},
                    "End": True,
                }
            },
        }
    )
    outcome = run(sfn, parent)
    assert (outcome.status, outcome.error) == ("FAILED", error)
    assert sfn.list_executions(stateMachineArn=child)["executions"] == []


# -- Metrics of executions that end otherwise ---------------------------------------------------


def test_every_ending_counts_in_its_metric(sfn, machine, local_runtime):
    succeeded = machine(PASS)
    failed = machine({"StartAt": "Fail", "States": {"Fail": {"Type": "Fail", "Error": "Broken"}}})
    aborted = machine({"StartAt": "Wait",
                       "States": {"Wait": {"Type": "Wait", "Seconds": 30, "End": True}}})  # fmt: skip
    assert run(sfn, succeeded).status == "SUCCEEDED"
    assert run(sfn, failed).status == "FAILED"
    execution = start(sfn, aborted, deploy.execution_name("rules"), {})
    sfn.stop_execution(executionArn=execution)
    assert follow(sfn, execution, poll_seconds=0.1, timeout_seconds=10).status == "ABORTED"
    assert metric_sum(local_runtime, succeeded, "ExecutionsSucceeded") == 1
    assert metric_sum(local_runtime, failed, "ExecutionsFailed") == 1
    assert metric_sum(local_runtime, aborted, "ExecutionsAborted") == 1
    assert metric_sum(local_runtime, aborted, "ExecutionsFailed") == 0


# -- A Distributed Map followed while it runs ---------------------------------------------------


def held_map(seconds: int) -> dict:
    """A Distributed Map over ``$.tables`` whose children each wait ``seconds``."""
    return {
        "StartAt": "Tables",
        "States": {
            "Tables": {
                "Type": "Map",
                "ItemsPath": "$.tables",
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                    "StartAt": "Hold",
                    "States": {"Hold": {"Type": "Wait", "Seconds": seconds, "End": True}},
                },
                "ResultPath": None,
                "End": True,
            }
        },
    }


def running_children(sfn, execution: str, count: int) -> tuple[str, list[dict]]:
    """The execution's Map Run and its children, once ``count`` of them are listed."""
    deadline = time.monotonic() + 2
    map_run, children = "", []
    while len(children) < count and time.monotonic() < deadline:
        runs = sfn.list_map_runs(executionArn=execution)["mapRuns"]
        map_run = runs[0]["mapRunArn"] if runs else ""
        children = sfn.list_executions(mapRunArn=map_run)["executions"] if runs else []
        time.sleep(0.1)
    return map_run, children


def test_a_map_run_and_its_children_are_listed_while_they_run(sfn, machine):
    arn = machine(held_map(3))
    execution = start(sfn, arn, deploy.execution_name("rules"), {"tables": ["a", "b", "c"]})
    map_run, children = running_children(sfn, execution, 3)
    assert [child["status"] for child in children] == ["RUNNING"] * 3
    assert not any("stopDate" in child for child in children)
    assert all(name_problem(child["name"]) is None for child in children)
    described = sfn.describe_map_run(mapRunArn=map_run)
    assert described["status"] == "RUNNING" and described["executionCounts"]["running"] == 3
    first = sfn.describe_execution(executionArn=children[0]["executionArn"])
    assert (first["status"], json.loads(first["input"])) == ("RUNNING", "a")
    assert [e["type"] for e in history(sfn, children[0]["executionArn"])] == ["WaitStateEntered"]
    assert sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"

    assert follow(sfn, execution, poll_seconds=0.2, timeout_seconds=30).status == "SUCCEEDED"
    ended = sfn.list_executions(mapRunArn=map_run)["executions"]
    assert [child["status"] for child in ended] == ["SUCCEEDED"] * 3
    assert all(child["stopDate"] >= child["startDate"] for child in ended)
    described = sfn.describe_map_run(mapRunArn=map_run)
    assert described["status"] == "SUCCEEDED"
    assert described["executionCounts"]["succeeded"] == 3
    assert described["executionCounts"]["running"] == 0


def test_a_map_run_counts_its_failed_children_as_failed_not_running(sfn, machine):
    document = held_map(0)
    tables = document["States"]["Tables"]
    tables["ToleratedFailurePercentage"] = 100
    tables["ItemProcessor"]["StartAt"] = "Broken?"
    tables["ItemProcessor"]["States"] = {
        "Broken?": {
            "Type": "Choice",
            "Choices": [{"Variable": "$", "StringEquals": "b", "Next": "Fail"}],
            "Default": "Done",
        },
        "Fail": {"Type": "Fail", "Error": "Broken", "Cause": "table b"},
        "Done": {"Type": "Succeed"},
    }
    execution = start(sfn, machine(document), deploy.execution_name("rules"),
                      {"tables": ["a", "b", "c"]})  # fmt: skip
    assert follow(sfn, execution, poll_seconds=0.2, timeout_seconds=30).status == "SUCCEEDED"
    map_run = sfn.list_map_runs(executionArn=execution)["mapRuns"][0]["mapRunArn"]
    counts = sfn.describe_map_run(mapRunArn=map_run)["executionCounts"]
    assert (counts["succeeded"], counts["failed"], counts["running"]) == (2, 1, 0)
    children = sfn.list_executions(mapRunArn=map_run)["executions"]
    statuses = [child["status"] for child in sorted(children, key=lambda child: child["name"])]
    assert statuses == ["SUCCEEDED", "FAILED", "SUCCEEDED"]


def test_stopping_an_execution_aborts_its_running_children_and_its_map_run(sfn, machine):
    execution = start(
        sfn, machine(held_map(30)), deploy.execution_name("rules"), {"tables": [1, 2]}
    )
    map_run, children = running_children(sfn, execution, 2)
    assert [child["status"] for child in children] == ["RUNNING"] * 2
    sfn.stop_execution(executionArn=execution)
    deadline = time.monotonic() + 5
    while sfn.describe_map_run(mapRunArn=map_run)["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    described = sfn.describe_map_run(mapRunArn=map_run)
    assert described["status"] == "ABORTED"
    assert (described["executionCounts"]["aborted"], described["executionCounts"]["running"]) == (
        2,
        0,
    )
    ended = sfn.list_executions(mapRunArn=map_run)["executions"]
    assert [child["status"] for child in ended] == ["ABORTED"] * 2
    assert sfn.describe_execution(executionArn=execution)["status"] == "ABORTED"
