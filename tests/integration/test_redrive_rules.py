"""The emulated Step Functions redrives an execution as AWS does (``ferry.local.
emulator_redrive``): which executions may be redriven and why not, the same execution going
on from its unsuccessful state, a Distributed Map's Map Run redriven in place (only its
unsuccessful children run again), ``clientToken`` idempotency.

The state machines are small: a task that reads an S3 object (``aws-sdk:s3:headObject``)
fails until the test writes the object, then succeeds when redriven.
"""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.exceptions import ClientError

from ferry.local import deploy, emulator, processes
from ferry.local.emulator_redrive import DRILL_PATH
from ferry.statemachine.execution_redrive import NotRedrivableError, plan_redrive
from ferry.statemachine.executions import start

pytestmark = pytest.mark.integration


def _trust(service: str) -> str:
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


@pytest.fixture(scope="module")
def world(local_runtime):
    session = boto3.session.Session(region_name="us-east-1")
    iam, s3 = session.client("iam"), session.client("s3")
    suffix = str(time.monotonic_ns())
    bucket = f"redrive-{suffix}"
    s3.create_bucket(Bucket=bucket)

    def role(name: str, actions: list[str]) -> str:
        arn = iam.create_role(
            RoleName=f"redrive-{name}-{suffix}",
            AssumeRolePolicyDocument=_trust("states.amazonaws.com"),
        )["Role"]["Arn"]
        policy = {"Version": "2012-10-17",
                  "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}  # fmt: skip
        iam.put_role_policy(
            RoleName=arn.rsplit("/", 1)[1], PolicyName="redrive", PolicyDocument=json.dumps(policy)
        )
        return arn

    everything = ["s3:GetObject", "s3:PutObject", "s3:ListBucket", "states:StartExecution",
                  "states:DescribeExecution", "states:StopExecution"]  # fmt: skip
    return {
        "bucket": bucket,
        "role": role("states", [*everything, "states:RedriveExecution"]),
        "no_redrive_role": role("no-redrive", everything),
    }


@pytest.fixture
def sfn(local_runtime):
    return boto3.client("stepfunctions", region_name="us-east-1")


@pytest.fixture
def s3(local_runtime):
    return boto3.client("s3", region_name="us-east-1")


@pytest.fixture
def machine(sfn, world):
    created = []

    def create(document: dict, role: str = "role") -> str:
        arn = sfn.create_state_machine(
            name=f"redrive-{len(created)}-{time.monotonic_ns()}",
            definition=json.dumps(document),
            roleArn=world[role],
        )["stateMachineArn"]
        created.append(arn)
        return arn

    yield create
    for arn in created:
        sfn.delete_state_machine(stateMachineArn=arn)


@pytest.fixture
def drill(local_runtime):
    """Send a drill to the emulator's redrive rules; the clock goes back after the test."""

    def send(body: dict) -> dict:
        request = urllib.request.Request(
            f"{local_runtime.endpoint}{DRILL_PATH}", data=json.dumps(body).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.loads(reply.read())

    yield send
    send({"clockOffsetSeconds": 0})


def read_task(**fields) -> dict:
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::aws-sdk:s3:headObject",
        "Parameters": {"Bucket.$": "$.bucket", "Key.$": "$.key"},
        "ResultSelector": {"size.$": "$.ContentLength"},
        "ResultPath": "$.read",
        **fields,
    }


SEQUENCE = {
    "StartAt": "First",
    "States": {
        "First": {"Type": "Pass", "Result": "done", "ResultPath": "$.first", "Next": "Read"},
        "Read": read_task(Next="Done"),
        "Done": {"Type": "Succeed"},
    },
}


def fan_out(tolerated: int = 0, results: str | None = None) -> dict:
    """A Distributed Map over ``$.keys``, each child reading its key; its children's results
    written under ``s3://<results>/results`` when given."""
    writer = (
        {"ResultWriter": {"Resource": "arn:aws:states:::s3:putObject",
                          "Parameters": {"Bucket": results, "Prefix": "results"}}}
        if results else {}
    )  # fmt: skip
    return {
        "StartAt": "Fan",
        "States": {
            "Fan": {
                **writer,
                "Type": "Map",
                "ItemsPath": "$.keys",
                "ItemSelector": {"bucket.$": "$.bucket", "key.$": "$$.Map.Item.Value"},
                "ToleratedFailurePercentage": tolerated,
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                    "StartAt": "Ready",
                    "States": {
                        "Ready": {"Type": "Pass", "Next": "Read"},
                        "Read": read_task(End=True),
                    },
                },
                "End": True,
            }
        },
    }


def run(sfn, arn: str, execution_input: dict) -> str:
    execution_arn = start(sfn, arn, deploy.execution_name("redrive"), execution_input)
    wait(sfn, execution_arn)
    return execution_arn


def wait(sfn, execution_arn: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=execution_arn)
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.1)
    raise TimeoutError(f"{execution_arn} still running after {timeout} s")


def history(sfn, execution_arn: str) -> list[dict]:
    return sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]


def entered(events: list[dict], name: str) -> int:
    return sum(1 for e in events if e.get("stateEnteredEventDetails", {}).get("name") == name)


def refusal(sfn, execution_arn: str) -> str:
    with pytest.raises(ClientError) as refused:
        sfn.redrive_execution(executionArn=execution_arn)
    assert refused.value.response["Error"]["Code"] == "ExecutionNotRedrivable"
    return refused.value.response["Error"]["Message"]


def test_the_same_execution_goes_on_from_its_failed_state(sfn, s3, machine, world):
    key = f"sequence-{time.monotonic_ns()}"
    execution = run(sfn, machine(SEQUENCE), {"bucket": world["bucket"], "key": key})
    failed = sfn.describe_execution(executionArn=execution)
    assert failed["status"] == "FAILED"
    assert failed["redriveStatus"] == "REDRIVABLE" and failed["redriveCount"] == 0

    s3.put_object(Bucket=world["bucket"], Key=key, Body=b"12345")
    redriven = sfn.redrive_execution(executionArn=execution)
    done = wait(sfn, execution)

    assert done["status"] == "SUCCEEDED"
    assert done["redriveCount"] == 1 and done["redriveDate"] == redriven["redriveDate"]
    assert json.loads(done["output"])["read"] == {"size": 5}
    assert json.loads(done["input"]) == {"bucket": world["bucket"], "key": key}
    events = history(sfn, execution)
    assert [e["type"] for e in events].count("ExecutionRedriven") == 1
    assert entered(events, "First") == 1  # the state that succeeded did not run again
    assert events[-1]["type"] == "ExecutionSucceeded"
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    listed = sfn.list_executions(stateMachineArn=done["stateMachineArn"], redriveFilter="REDRIVEN")
    assert [e["executionArn"] for e in listed["executions"]] == [execution]
    assert listed["executions"][0]["redriveCount"] == 1
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    now = datetime.now(UTC)
    points = cloudwatch.get_metric_statistics(
        Namespace="AWS/States", MetricName="ExecutionsRedriven", Period=60, Statistics=["Sum"],
        Dimensions=[{"Name": "StateMachineArn", "Value": done["stateMachineArn"]}],
        StartTime=now - timedelta(minutes=10), EndTime=now + timedelta(minutes=1),
    )["Datapoints"]  # fmt: skip
    assert sum(point["Sum"] for point in points) == 1
    # A SUCCEEDED execution is not redrivable, with AWS's reason.
    assert done["redriveStatus"] == "NOT_REDRIVABLE"
    assert refusal(sfn, execution) == "Execution is SUCCEEDED and cannot be redriven"
    assert done["redriveStatusReason"] == "Execution is SUCCEEDED and cannot be redriven"


def test_a_client_token_answers_its_redrive_again(sfn, machine, world):
    key = f"missing-{time.monotonic_ns()}"
    execution = run(sfn, machine(SEQUENCE), {"bucket": world["bucket"], "key": key})
    first = sfn.redrive_execution(executionArn=execution, clientToken="once")
    again = sfn.redrive_execution(executionArn=execution, clientToken="once")
    described = wait(sfn, execution)
    assert again["redriveDate"] == first["redriveDate"]
    assert described["redriveCount"] == 1 and described["status"] == "FAILED"


def test_running_and_old_executions_are_not_redrivable(sfn, machine, world, drill):
    waiting = machine({"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3,
                                                                "End": True}}})  # fmt: skip
    running = start(sfn, waiting, deploy.execution_name("redrive"), {})
    assert refusal(sfn, running) == "Execution is RUNNING and cannot be redriven"
    key = f"old-{time.monotonic_ns()}"
    old = run(sfn, machine(SEQUENCE), {"bucket": world["bucket"], "key": key})

    drill({"clockOffsetSeconds": 14 * 86400 + 60})  # 14 days and a minute after its stop
    assert refusal(sfn, old) == "Execution redrivable period exceeded"
    described = sfn.describe_execution(executionArn=old)
    assert described["redriveStatus"] == "NOT_REDRIVABLE"
    assert described["redriveStatusReason"] == "Execution redrivable period exceeded"
    with pytest.raises(NotRedrivableError, match="redrivable period exceeded"):
        plan_redrive(sfn, old)
    assert sfn.describe_execution(executionArn=old)["redriveCount"] == 0  # nothing started
    drill({"clockOffsetSeconds": 0})
    assert sfn.describe_execution(executionArn=old)["redriveStatus"] == "REDRIVABLE"


def test_a_map_run_redrives_only_its_unsuccessful_children(sfn, s3, machine, world):
    prefix = f"fan-{time.monotonic_ns()}"
    keys = [f"{prefix}/{n}" for n in range(4)]
    for key in keys[:2]:
        s3.put_object(Bucket=world["bucket"], Key=key, Body=b"x")
    fan = machine(fan_out(results=world["bucket"]))
    execution = run(sfn, fan, {"bucket": world["bucket"], "keys": keys})
    assert sfn.describe_execution(executionArn=execution)["status"] == "FAILED"
    (map_run,) = sfn.list_map_runs(executionArn=execution)["mapRuns"]
    arn = map_run["mapRunArn"]
    before = {c["executionArn"]: c for c in sfn.list_executions(mapRunArn=arn)["executions"]}
    assert sorted(c["status"] for c in before.values()) == ["FAILED", "FAILED", "SUCCEEDED",
                                                             "SUCCEEDED"]  # fmt: skip
    plan = plan_redrive(sfn, execution)
    assert (plan.state, plan.tables_again, plan.tables) == ("Fan", 2, 4)

    for key in keys[2:]:
        s3.put_object(Bucket=world["bucket"], Key=key, Body=b"x")
    sfn.redrive_execution(executionArn=execution)
    done = wait(sfn, execution)

    assert done["status"] == "SUCCEEDED"
    assert [r["mapRunArn"] for r in sfn.list_map_runs(executionArn=execution)["mapRuns"]] == [arn]
    run_described = sfn.describe_map_run(mapRunArn=arn)
    assert run_described["status"] == "SUCCEEDED" and run_described["redriveCount"] == 1
    assert run_described["executionCounts"]["succeeded"] == 4
    assert run_described["executionCounts"]["failed"] == 0
    assert run_described["executionCounts"]["total"] == 4
    after = {c["executionArn"]: c for c in sfn.list_executions(mapRunArn=arn)["executions"]}
    assert set(after) == set(before)  # the same children, in place
    for child_arn, child in before.items():
        events = history(sfn, child_arn)
        redriven = [e for e in events if e["type"] == "ExecutionRedriven"]
        assert after[child_arn]["status"] == "SUCCEEDED"
        if child["status"] == "SUCCEEDED":
            assert not redriven and after[child_arn]["redriveCount"] == 0
        else:
            assert len(redriven) == 1 and after[child_arn]["redriveCount"] == 1
            assert entered(events, "Ready") == 1  # went on from Read
            assert after[child_arn]["startDate"] == child["startDate"]
    types = [e["type"] for e in history(sfn, execution)]
    assert types.count("MapRunStarted") == 1 and types.count("MapRunRedriven") == 1
    # The ResultWriter's files hold every child: the kept ones and the redriven ones.
    written = json.loads(done["output"])["ResultWriterDetails"]
    manifest = json.loads(
        s3.get_object(Bucket=written["Bucket"], Key=written["Key"])["Body"].read()
    )
    assert manifest["MapRunArn"] == arn and not manifest["ResultFiles"]["FAILED"]
    (succeeded,) = manifest["ResultFiles"]["SUCCEEDED"]
    entries = json.loads(
        s3.get_object(Bucket=written["Bucket"], Key=succeeded["Key"])["Body"].read()
    )
    assert sorted(e["ExecutionArn"] for e in entries) == sorted(before)
    assert sorted(e["RedriveCount"] for e in entries) == [0, 0, 1, 1]
    assert run_described["executionCounts"]["resultsWritten"] == 4


def test_a_map_run_redriven_1000_times_fails_with_states_runtime(sfn, machine, world, drill):
    prefix = f"limit-{time.monotonic_ns()}"
    execution = run(sfn, machine(fan_out()), {"bucket": world["bucket"], "keys": [f"{prefix}/0"]})
    (map_run,) = sfn.list_map_runs(executionArn=execution)["mapRuns"]
    drill({"mapRunArn": map_run["mapRunArn"], "redriveCount": 1000})
    with pytest.raises(NotRedrivableError, match="redriven 1000 times"):
        plan_redrive(sfn, execution)

    sfn.redrive_execution(executionArn=execution)  # AWS accepts it; its Map then fails
    done = wait(sfn, execution)
    assert done["status"] == "FAILED" and done["error"] == "States.Runtime"


def test_the_role_must_allow_redriving_the_children(sfn, machine, world):
    prefix = f"denied-{time.monotonic_ns()}"
    execution = run(
        sfn,
        machine(fan_out(), role="no_redrive_role"),
        {"bucket": world["bucket"], "keys": [f"{prefix}/0"]},
    )
    sfn.redrive_execution(executionArn=execution)
    done = wait(sfn, execution)
    assert done["status"] == "FAILED" and done["error"] == "States.Runtime"
    assert "states:RedriveExecution" in done["cause"]


def test_a_fail_state_fails_again_when_redriven(sfn, machine):
    failing = machine({"StartAt": "Give up", "States": {"Give up": {
        "Type": "Fail", "Error": "Gave.Up", "Cause": "always"}}})  # fmt: skip
    execution = run(sfn, failing, {})
    with pytest.raises(NotRedrivableError, match="Fail state 'Give up'"):
        plan_redrive(sfn, execution)
    sfn.redrive_execution(executionArn=execution)
    done = wait(sfn, execution)
    assert (done["status"], done["error"], done["redriveCount"]) == ("FAILED", "Gave.Up", 1)


def test_a_redrive_after_the_emulator_stopped_and_started_keeps_the_map_run(tmp_path):
    """``ferry local down`` / ``up`` in between: the execution, its redrives and its Map Run
    (children and results) come back, and a redrive still runs only what did not succeed."""
    port = processes.free_port()

    def client(service: str):
        return boto3.client(
            service,
            endpoint_url=emulator.endpoint_url(port),
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    emulator.start_emulator(tmp_path, port)
    try:
        iam, s3, sfn = client("iam"), client("s3"), client("stepfunctions")
        s3.create_bucket(Bucket="redrive")
        s3.put_object(Bucket="redrive", Key="0", Body=b"x")
        role = iam.create_role(
            RoleName="states", AssumeRolePolicyDocument=_trust("states.amazonaws.com")
        )["Role"]["Arn"]
        policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Resource": "*",
                  "Action": ["s3:GetObject", "states:RedriveExecution"]}]}  # fmt: skip
        iam.put_role_policy(RoleName="states", PolicyName="p", PolicyDocument=json.dumps(policy))
        arn = sfn.create_state_machine(name="fan", definition=json.dumps(fan_out()), roleArn=role)[
            "stateMachineArn"
        ]
        execution = start(sfn, arn, "before-down", {"bucket": "redrive", "keys": ["0", "1"]})
        assert wait(sfn, execution)["status"] == "FAILED"
        sfn.redrive_execution(executionArn=execution)  # "1" is still missing: fails again
        assert wait(sfn, execution)["status"] == "FAILED"
        (map_run,) = sfn.list_map_runs(executionArn=execution)["mapRuns"]
        children = sfn.list_executions(mapRunArn=map_run["mapRunArn"])["executions"]
        succeeded = [c["executionArn"] for c in children if c["status"] == "SUCCEEDED"]

        processes.stop_process(tmp_path, "aws")  # saves its state
        port = processes.free_port()
        emulator.start_emulator(tmp_path, port)
        s3, sfn = client("s3"), client("stepfunctions")
        assert sfn.describe_execution(executionArn=execution)["redriveCount"] == 1
        s3.put_object(Bucket="redrive", Key="1", Body=b"x")
        sfn.redrive_execution(executionArn=execution)
        done = wait(sfn, execution)

        assert (done["status"], done["redriveCount"]) == ("SUCCEEDED", 2)
        assert [r["mapRunArn"] for r in sfn.list_map_runs(executionArn=execution)["mapRuns"]] == [
            map_run["mapRunArn"]
        ]
        described = sfn.describe_map_run(mapRunArn=map_run["mapRunArn"])
        assert described["redriveCount"] == 2
        assert described["executionCounts"]["succeeded"] == 2
        assert described["executionCounts"]["total"] == 2
        (kept,) = succeeded
        assert sfn.describe_execution(executionArn=kept)["redriveCount"] == 0
        assert len(json.loads(done["output"])) == 2
    finally:
        processes.stop_process(tmp_path, "aws")


def test_the_time_limit_counts_again_from_the_redrive(sfn, machine):
    # 5 s in all: the first Wait (3 s) ends in time, the second overruns. Redriven, the second
    # alone has 5 s again, as AWS counts it ("reset to 0"); 2 s of slack on a loaded machine.
    arn = machine({
        "TimeoutSeconds": 5,
        "StartAt": "First",
        "States": {
            "First": {"Type": "Wait", "Seconds": 3, "Next": "Second"},
            "Second": {"Type": "Wait", "Seconds": 3, "End": True},
        },
    })  # fmt: skip
    execution = run(sfn, arn, {})
    assert sfn.describe_execution(executionArn=execution)["status"] == "TIMED_OUT"
    sfn.redrive_execution(executionArn=execution)
    done = wait(sfn, execution)
    assert (done["status"], done["redriveCount"]) == ("SUCCEEDED", 1)
    events = history(sfn, execution)
    assert entered(events, "First") == 1
    assert [e["type"] for e in events].count("ExecutionTimedOut") == 1


def test_a_parallel_state_runs_again_only_its_branches_that_did_not_succeed(
    sfn, s3, machine, world
):
    key = f"branch-{time.monotonic_ns()}"
    arn = machine({
        "StartAt": "Both",
        "States": {"Both": {"Type": "Parallel", "End": True, "Branches": [
            {"StartAt": "Left", "States": {"Left": {"Type": "Pass", "Result": "left",
                                                    "End": True}}},
            {"StartAt": "Ready", "States": {
                "Ready": {"Type": "Pass", "Next": "Right"},
                "Right": read_task(End=True)}},
        ]}},
    })  # fmt: skip
    execution = run(sfn, arn, {"bucket": world["bucket"], "key": key})
    assert sfn.describe_execution(executionArn=execution)["status"] == "FAILED"

    s3.put_object(Bucket=world["bucket"], Key=key, Body=b"123")
    sfn.redrive_execution(executionArn=execution)
    done = wait(sfn, execution)

    assert done["status"] == "SUCCEEDED", done
    left, right = json.loads(done["output"])
    assert left == "left" and right["read"] == {"size": 3}
    events = history(sfn, execution)
    assert entered(events, "Left") == 1  # the branch that succeeded kept its result
    assert entered(events, "Ready") == 1  # the other went on from Right
    assert entered(events, "Right") == 2


def test_an_inline_map_runs_again_only_its_iterations_that_did_not_succeed(sfn, s3, machine, world):
    prefix = f"inline-{time.monotonic_ns()}"
    keys = [f"{prefix}/{n}" for n in range(3)]
    for key in keys[:2]:
        s3.put_object(Bucket=world["bucket"], Key=key, Body=b"x")
    arn = machine({
        "StartAt": "Each",
        "States": {"Each": {
            "Type": "Map", "ItemsPath": "$.keys", "MaxConcurrency": 1, "End": True,
            "ItemSelector": {"bucket.$": "$.bucket", "key.$": "$$.Map.Item.Value"},
            "ItemProcessor": {"StartAt": "Ready", "States": {
                "Ready": {"Type": "Pass", "Next": "Read"}, "Read": read_task(End=True)}},
        }},
    })  # fmt: skip
    execution = run(sfn, arn, {"bucket": world["bucket"], "keys": keys})
    assert sfn.describe_execution(executionArn=execution)["status"] == "FAILED"
    assert entered(history(sfn, execution), "Ready") == 3

    s3.put_object(Bucket=world["bucket"], Key=keys[2], Body=b"xyz")
    sfn.redrive_execution(executionArn=execution)
    done = wait(sfn, execution)

    assert done["status"] == "SUCCEEDED", done
    assert [item["read"]["size"] for item in json.loads(done["output"])] == [1, 1, 3]
    assert entered(history(sfn, execution), "Ready") == 4  # only the third iteration again
