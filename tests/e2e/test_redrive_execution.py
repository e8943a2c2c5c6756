"""``ferry redrive EXECUTION_ARN`` on the local runtime: the deployed replication state
machine's execution goes on where it stopped (Step Functions' ``RedriveExecution``, as the
emulator runs it), and one that cannot be redriven is refused in one line.

- stopped while a table's S3 copy Map is part-way: the same execution succeeds, Plan and the
  batches that had succeeded do not run again, the replica reads as the source and the
  consumers hear SUCCESS;
- stopped in Summarize: only Summarize runs again;
- SUCCEEDED, RUNNING, ended in its Fail state "Replication failed": refused, exit 2,
  nothing starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from ferry.local import deploy
from tests.helpers import assert_replica_holds_source

pytestmark = pytest.mark.e2e


def ferry(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )


def started(pipeline, sfn, aws, write_config, document: dict) -> str:
    config_uri = deploy.upload_config(aws["s3"], pipeline.work_uri, write_config(document))
    return sfn.start_execution(
        stateMachineArn=pipeline.state_machine_arn,
        name=deploy.execution_name("redrive"),
        input=json.dumps({"configUri": config_uri}),
    )["executionArn"]


def until(check, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise TimeoutError(what)


def history(sfn, arn: str) -> list[dict]:
    return sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]


def entered(events: list[dict], name: str) -> int:
    return sum(1 for e in events if e.get("stateEnteredEventDetails", {}).get("name") == name)


def redriven(events: list[dict]) -> int:
    return sum(1 for e in events if e["type"] == "ExecutionRedriven")


def children(sfn, map_run_arn: str) -> list[dict]:
    return sfn.list_executions(mapRunArn=map_run_arn)["executions"]


def map_runs(sfn, execution_arn: str) -> list[str]:
    """The execution's Map Runs, in order: the tables', then each table's S3 copy's."""
    if not history(sfn, execution_arn):
        return []  # not started yet (moto's ListMapRuns fails before the first event)
    return [r["mapRunArn"] for r in sfn.list_map_runs(executionArn=execution_arn)["mapRuns"]]


def settled(sfn, execution_arn: str) -> bool:
    """Every child of every Map Run of the execution has ended (a stopped attempt's running
    task returns when it returns)."""
    return all(
        child["status"] != "RUNNING"
        for run in map_runs(sfn, execution_arn)
        for child in children(sfn, run)
    )


def test_a_stopped_execution_is_redriven_from_its_unfinished_batches(
    pipeline, sfn, aws, write_config, arm, cross_region, consumer
):
    east, west, sample = cross_region.east, cross_region.west, cross_region.sample
    topic, messages = consumer
    document = cross_region.document(
        **{"copier-options": {"s3-batch-files": 1}, "sns-event-listener": {"topic": topic}}
    )
    # The third batch to be copied hangs before it is recorded: two are done when it stops.
    arm({"point": "copy.batch", "action": "hang", "seconds": 4, "skip": 2, "times": 99})
    execution = started(pipeline, sfn, aws, write_config, document)

    def batches() -> list[dict]:
        runs = map_runs(sfn, execution)
        return [c for run in runs[1:] for c in children(sfn, run)] if len(runs) > 1 else []

    until(
        lambda: (
            sum(c["status"] == "SUCCEEDED" for c in batches()) == 2
            and any(c["status"] == "RUNNING" for c in batches())
        ),
        "two batches copied, the third held",
    )
    sfn.stop_execution(executionArn=execution, error="Operator", cause="stopped mid-copy")
    arm()
    until(lambda: settled(sfn, execution), "the stopped attempt's tasks returned")
    assert sfn.describe_execution(executionArn=execution)["status"] == "ABORTED"
    tables_run, copy_run = map_runs(sfn, execution)
    (table,) = children(sfn, tables_run)
    before = {c["executionArn"]: c["status"] for c in children(sfn, copy_run)}
    assert sorted(before.values()) == ["ABORTED", "SUCCEEDED", "SUCCEEDED"]

    done = ferry("redrive", execution, "--wait")

    assert done.returncode == 0, done.stderr
    first, *_, last = done.stdout.splitlines()
    assert first == f"redriven (1): {execution} from Replicate tables (1 of 1 tables again)"
    assert last.startswith("SUCCEEDED in ")
    described = sfn.describe_execution(executionArn=execution)
    assert (described["status"], described["redriveCount"]) == ("SUCCEEDED", 1)
    assert map_runs(sfn, execution) == [tables_run, copy_run]  # redriven in place
    table_events = history(sfn, table["executionArn"])
    assert entered(table_events, "Plan") == 1 and redriven(table_events) == 1
    assert entered(table_events, "Commit") == 1
    for batch in children(sfn, copy_run):
        events = history(sfn, batch["executionArn"])
        assert batch["status"] == "SUCCEEDED"
        assert redriven(events) == (before[batch["executionArn"]] != "SUCCEEDED")
    assert sfn.describe_map_run(mapRunArn=copy_run)["redriveCount"] == 1
    assert_replica_holds_source(west, f"{sample.database}_dr", "orders", east, sample.orders)
    told = [m["body"]["type"] for m in messages()]
    assert told == ["START", "SUCCESS"]


def test_an_execution_stopped_in_summarize_runs_only_summarize_again(
    pipeline, sfn, aws, write_config, arm, cross_region, local_runtime
):
    arm({"point": "summarize", "action": "hang", "seconds": 3, "times": 99})
    execution = started(pipeline, sfn, aws, write_config, cross_region.document())
    until(lambda: entered(history(sfn, execution), "Summarize"), "Summarize entered")
    sfn.stop_execution(executionArn=execution)
    arm()
    time.sleep(3)  # the held Summarize returns to nobody

    home = str(local_runtime.state_dir)  # the local runtime's home, as `ferry local up` makes it
    done = ferry("redrive", execution, "--environment", "local", "--home", home, "--wait", "--json")

    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["state"], answer["outcome"]["status"]) == ("Summarize", "SUCCEEDED")
    events = history(sfn, execution)
    assert entered(events, "Replicate tables") == 1
    types = [e["type"] for e in events]
    assert types.count("MapRunStarted") == 1 and "MapRunRedriven" not in types
    (tables_run, *_) = map_runs(sfn, execution)
    (table,) = children(sfn, tables_run)
    assert redriven(history(sfn, table["executionArn"])) == 0
    assert types[-1] == "ExecutionSucceeded"


def test_what_cannot_be_redriven_is_refused_in_one_line(
    pipeline, sfn, aws, write_config, arm, cross_region
):
    document = cross_region.document()
    missing = pipeline.state_machine_arn.replace(":stateMachine:", ":execution:") + ":no-such-run"
    refused = ferry("redrive", missing)
    assert (refused.returncode, refused.stderr) == (
        2, f"ferry: error: there is no execution {missing}\n"
    )  # fmt: skip
    # A table that failed was aborted and told its consumers; the execution ended in its
    # Fail state "Replication failed", where a redrive would only fail again.
    arm({"point": "plan.planned", "error": "CatalogError", "times": 99})
    failed = started(pipeline, sfn, aws, write_config, document)
    until(lambda: sfn.describe_execution(executionArn=failed)["status"] != "RUNNING", "failed")
    arm()
    refused = ferry("redrive", failed)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1
    assert "ended in its Fail state 'Replication failed'" in refused.stderr
    assert "ferry resume EVENT" in refused.stderr
    (tables_run, *_) = map_runs(sfn, failed)
    (table,) = children(sfn, tables_run)
    refused = ferry("redrive", table["executionArn"])  # a table's own execution: its parent's
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "is a child execution of a Map Run: redrive its parent execution" in refused.stderr

    succeeded = started(pipeline, sfn, aws, write_config, document)
    until(lambda: sfn.describe_execution(executionArn=succeeded)["status"] != "RUNNING", "ended")
    refused = ferry("redrive", succeeded)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "Execution is SUCCEEDED and cannot be redriven" in refused.stderr

    arm({"point": "summarize", "action": "hang", "seconds": 2, "times": 99})
    running = started(pipeline, sfn, aws, write_config, document)
    refused = ferry("redrive", running)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "Execution is RUNNING and cannot be redriven" in refused.stderr
    arm()
    until(lambda: sfn.describe_execution(executionArn=running)["status"] != "RUNNING", "ended")
    for arn in (failed, succeeded, running):
        assert sfn.describe_execution(executionArn=arn)["redriveCount"] == 0  # nothing started
