"""Breaking every state of the local state machine on purpose, and what Ferry promises then.

A fail point (``ferry.core.faults``) is armed in the emulator's Lambdas or in the Spark job: a
raised error, a Lambda timeout part-way through a batch, a permanent failure, an upload's
bytes corrupted or cut short on their way, a source changed between Plan and the copy.
After each:

- every location the replica table and its partitions reference exists and holds exactly
  the source's bytes (or the replica is exactly as it was);
- the execution ends with the named error (or, for a transient fault, is retried and
  succeeds);
- running the replication again converges to the source.
"""

from __future__ import annotations

import time

import boto3
import pytest

from ferry.catalog.glue import GlueCatalog
from ferry.copying.copy_records import recorded_batches
from ferry.local import deploy
from ferry.local.samples import order_rows, write_parquet
from ferry.planning.runs import RunLocations
from ferry.replicas.replica import REPLICATION_EVENT
from ferry.statemachine.executions import ExecutionOutcome, follow, start
from ferry.storage import fs
from tests.e2e.conftest import WEST
from tests.e2e.test_pipeline import table_entry
from tests.helpers import (
    assert_each_partition_is_complete,
    assert_replica_holds_source,
    catalog_state,
    config_document,
    files_below,
    partition_snapshots,
    rewrite_orders,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def hive(local_runtime, sample, tmp_path, source_catalog, replica_catalog, consumer):
    """A Hive → Hive replication of the partitioned sample table, one partition per call."""
    topic, messages = consumer
    target = fs.local_uri(tmp_path / "replica")
    replica_db = f"{sample.database}_dr"

    def document(**entry_extra):
        return config_document(
            local_runtime,
            [table_entry(sample, "orders", f"{target}/orders", **entry_extra)],
            replica={
                "name": "dr",
                "hive-metastore-uris": local_runtime.replica_uri,
                "batch-size": 1,
            },
            **{"sns-event-listener": {"topic": topic}},
        )

    def state():
        return catalog_state(replica_catalog, replica_db, ["orders"]), files_below(target)

    def holds_source():
        assert_replica_holds_source(
            replica_catalog, replica_db, "orders", source_catalog, sample.orders
        )

    return {
        "document": document,
        "state": state,
        "holds_source": holds_source,
        "messages": messages,
        "target": target,
        "replica_db": replica_db,
    }


def failed(outcome) -> set[tuple[str, str]]:
    return {(state, error) for state, error, _ in outcome.failed_states}


def table_result(outcome) -> dict:
    [result] = outcome.results
    return result


def kept_for_a_resume(result: dict) -> bool:
    """A failed copy's snapshot: kept for a resume when it copied files (then the cause says
    until when), else removed (``ferry.lifecycle.attempts``)."""
    if result["snapshotRemoved"]:
        return not files_below(result["snapshot"])
    assert "kept for a resume until" in result["cause"], result["cause"]
    return bool(files_below(result["snapshot"]))


def outside(files: dict[str, int], snapshot: str) -> dict[str, int]:
    """The files not below ``snapshot`` (a kept attempt's)."""
    return {uri: size for uri, size in files.items() if not fs.relative_path(uri, snapshot)}


@pytest.mark.parametrize(
    "fault",
    [
        {"point": "plan.planned", "error": "CatalogError", "times": 99},
        # Part-way through the listing that streams the manifest.
        {"point": "plan.listed", "error": "CatalogError", "skip": 1, "times": 99},
    ],
    ids=["planned", "mid-listing"],
)
def test_a_fault_in_plan_changes_nothing_and_a_rerun_converges(run, arm, hive, fault):
    assert run(hive["document"]()).status == "SUCCEEDED"
    before = hive["state"]()
    arm(fault)
    outcome = run(hive["document"]())
    assert (outcome.status, outcome.error) == ("FAILED", "CatalogError")
    assert ("Plan", "CatalogError") in failed(outcome)
    assert hive["state"]() == before
    arm()
    assert run(hive["document"]()).status == "SUCCEEDED"
    hive["holds_source"]()


def test_a_timeout_part_way_through_an_inline_copy_is_retried_and_converges(run, arm, hive):
    arm({"point": "copy.file", "action": "timeout", "skip": 1})
    outcome = run(hive["document"]())
    assert outcome.status == "SUCCEEDED", outcome
    assert ("Inline copy", "Sandbox.Timedout") in failed(outcome)
    hive["holds_source"]()


def test_a_failed_inline_copy_keeps_its_copies_for_a_resume_and_leaves_the_replica(
    run, arm, hive, sample
):
    assert run(hive["document"]()).status == "SUCCEEDED"
    rewrite_orders(sample)
    before = hive["state"]()
    arm({"point": "copy.file", "error": "TargetNotWritableError", "skip": 1, "times": 99})
    outcome = run(hive["document"]())
    assert (outcome.status, outcome.error) == ("FAILED", "TargetNotWritableError")
    result = table_result(outcome)
    assert result["snapshotRemoved"] is False and kept_for_a_resume(result)
    catalog, files = hive["state"]()
    assert (catalog, outside(files, result["snapshot"])) == before
    arm()
    resumed = run(hive["document"]())
    assert resumed.status == "SUCCEEDED", resumed
    plan = table_result(resumed)["plan"]
    assert plan["resumed"] is True and plan["eventId"] == result["eventId"]
    assert plan["reusedFiles"] >= 1
    hive["holds_source"]()


def test_a_failed_spark_copy_removes_its_snapshot_and_leaves_the_replica(run, arm, hive, sample):
    spark = {"copier-options": {"inline-threshold-mib": 0}}
    assert run(hive["document"]()).status == "SUCCEEDED"
    rewrite_orders(sample)
    before = hive["state"]()
    # In the job's own workers: every file fails (after the job's per-file retries).
    arm({"point": "copy.file", "error": "CopyError", "times": 999})
    outcome = run(hive["document"](**spark))
    assert (outcome.status, outcome.error) == ("FAILED", "CopyError")
    assert ("Spark copy", "States.TaskFailed") in failed(outcome)
    assert "3 files not copied" in outcome.cause
    assert hive["state"]() == before
    arm()
    retried = run(hive["document"](**spark))
    assert retried.status == "SUCCEEDED" and table_result(retried)["plan"]["copier"] == "spark"
    hive["holds_source"]()


@pytest.mark.parametrize(
    ("fault", "ends"),
    [
        ({"action": "timeout"}, ("SUCCEEDED", None)),
        ({"error": "CatalogUnreachableError"}, ("SUCCEEDED", None)),
        ({"error": "CatalogError", "times": 99}, ("FAILED", "CatalogError")),
    ],
    ids=["lambda-timeout", "metastore-unreachable", "metastore-refuses"],
)
def test_commit_broken_part_way_through_its_partition_batches(
    run, arm, hive, replica_catalog, source_catalog, sample, fault, ends
):
    first = run(hive["document"]())
    assert first.status == "SUCCEEDED"
    old_event = table_result(first)["eventId"]
    old = partition_snapshots(source_catalog, sample.database, "orders")
    rewrite_orders(sample)
    new = partition_snapshots(source_catalog, sample.database, "orders")
    # After the first of three one-partition batches.
    arm({"point": "commit.partition-batch", "skip": 1, **fault})
    outcome = run(hive["document"]())
    assert (outcome.status, outcome.error) == ends
    assert any(state == "Commit" for state, _ in failed(outcome))
    result = table_result(outcome)
    # Whatever happened, every partition points at a complete snapshot of the source.
    assert_each_partition_is_complete(replica_catalog, hive["replica_db"], "orders", old, new)
    table = replica_catalog.get_table(hive["replica_db"], "orders")
    events = {p.parameters[REPLICATION_EVENT] for p in replica_catalog.list_partitions(table)}
    if ends[0] == "SUCCEEDED":
        hive["holds_source"]()
        new_event = table_result(outcome)["eventId"]
        assert table.parameters[REPLICATION_EVENT] == new_event and events == {new_event}
    else:
        # Part-way: one partition at the new snapshot, the rest and the table at the old.
        new_event = result["eventId"]
        assert table.parameters[REPLICATION_EVENT] == old_event
        assert events == {old_event, new_event}
        assert result["snapshotRemoved"] is False
        assert "it was kept" in outcome.cause
        arm()
        assert run(hive["document"]()).status == "SUCCEEDED"
        hive["holds_source"]()


def test_a_failed_success_notification_keeps_the_committed_replica(run, arm, hive, replica_catalog):
    arm({"point": "notify.success", "error": "NotificationError", "times": 99})
    outcome = run(hive["document"]())
    assert (outcome.status, outcome.error) == ("FAILED", "NotificationError")
    result = table_result(outcome)
    assert result["snapshotRemoved"] is False
    table = replica_catalog.get_table(hive["replica_db"], "orders")
    assert table.parameters[REPLICATION_EVENT] == result["eventId"]
    hive["holds_source"]()
    [failure] = [m["body"] for m in hive["messages"]() if m["body"]["type"] == "FAILURE"]
    assert failure["eventId"] == result["eventId"]
    assert f"the replica references snapshot {result['snapshot']}" in failure["errorMessage"]
    arm()
    assert run(hive["document"]()).status == "SUCCEEDED"
    hive["holds_source"]()


def test_a_failed_summary_is_reported_as_such_and_the_replicas_stand(run, arm, hive):
    arm({"point": "summarize", "error": "KeyError", "times": 99})
    outcome = run(hive["document"]())
    assert (outcome.status, outcome.error) == ("FAILED", "KeyError")
    assert ("Summarize", "KeyError") in failed(outcome)
    assert [m["body"]["type"] for m in hive["messages"]()] == ["START", "SUCCESS"]
    hive["holds_source"]()


def copy_batch_results(plan: dict) -> list[dict]:
    """Each batch's result, as the S3 copy Map's ResultWriter wrote it."""
    from ferry.statemachine.outcomes import map_results

    bucket, prefix = plan["manifestBucket"], plan["copyResultsPrefix"]
    listed = boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix)
    # A resumed event's folder also holds its failed attempt's Map Run: the newest is this one.
    manifests = [o for o in listed["Contents"] if o["Key"].endswith("manifest.json")]
    manifest = max(manifests, key=lambda o: o["LastModified"])["Key"]
    return [child.output for child in map_results({"Bucket": bucket, "Key": manifest})]


def test_a_timeout_in_an_s3_copy_batch_is_retried_and_a_failed_batch_is_resumed_next_run(
    run, arm, cross_region
):
    east, west, sample = cross_region.east, cross_region.west, cross_region.sample
    document = cross_region.document(**{"copier-options": {"s3-batch-files": 1}})
    replica_db = f"{sample.database}_dr"

    # The second batch's Lambda times out after copying, before recording: retried, and the
    # retry copies nothing again (its object is at the target whole).
    arm({"point": "copy.batch", "action": "timeout", "skip": 1})
    outcome = run(document)
    assert outcome.status == "SUCCEEDED", outcome
    result = table_result(outcome)
    assert result["plan"]["copier"] == "s3"
    assert_replica_holds_source(west, replica_db, "orders", east, sample.orders)
    batches = copy_batch_results(result["plan"])
    assert sorted(b["resumed"] for b in batches) == [0] * (len(batches) - 1) + [1]
    rewrite_orders(sample)
    before = catalog_state(west, replica_db, ["orders"])

    # Batches fail for good: the distributed Map then fails (it tolerates no failed batch:
    # States.ExceedToleratedFailureThreshold), which the table reports as a CopyError.
    # Nothing is committed.
    arm({"point": "copy.batch", "error": "CopyError", "skip": 1, "times": 99})
    outcome = run(document)
    assert outcome.status == "FAILED"
    assert outcome.error == "CopyError"
    result = table_result(outcome)
    assert result["failedState"] == "S3 server-side copy"
    assert "batches of the S3 copy failed" in result["cause"]
    # The batch copied before the failures is kept for a resume; the replica is as it was.
    assert result["snapshotRemoved"] is False and kept_for_a_resume(result)
    assert catalog_state(west, replica_db, ["orders"]) == before
    # The failed batches failed after their copy (the fail point is before the record).
    copied = files_below(result["snapshot"])
    assert copied

    # The next execution for the table continues the same event and copies only what is
    # missing: an object the attempt copied is not written again (its LastModified stands).
    s3 = boto3.client("s3", region_name=WEST)

    def written():
        """Each copied object's LastModified."""
        found = {}
        for uri in copied:
            bucket, key = fs.object_location(uri)
            found[uri] = s3.head_object(Bucket=bucket, Key=key)["LastModified"]
        return found

    before_resume = written()
    time.sleep(1.1)  # S3's LastModified has seconds
    arm()
    resumed = run(document)
    assert resumed.status == "SUCCEEDED", resumed
    plan = table_result(resumed)["plan"]
    assert (plan["resumed"], plan["eventId"]) == (True, result["eventId"])
    assert (plan["reusedFiles"], plan["files"]) == (len(copied), len(sample.days))
    assert written() == before_resume
    assert sum(b["resumed"] for b in copy_batch_results(plan)) == len(copied)
    assert_replica_holds_source(west, replica_db, "orders", east, sample.orders)


# -- a source changed after planning, a corrupted or short upload --------------------------


@pytest.fixture
def hive_to_s3(local_runtime, sample, aws, bucket, source_catalog):
    """The sample ``orders`` (Hive, local files) replicated to S3 with a Glue replica: the
    inline copier's file→S3 path, where every file is one PutObject with its Content-MD5."""
    glue = GlueCatalog("dr", aws["glue"])
    replica_db = f"{sample.database}_dr"
    target = f"s3://{bucket}/orders"

    def document():
        return config_document(
            local_runtime,
            [table_entry(sample, "orders", target)],
            replica={"name": "dr", "glue": {"region": "us-east-1"}},
        )

    def state():
        return catalog_state(glue, replica_db, ["orders"]), files_below(target)

    def holds_source():
        assert_replica_holds_source(glue, replica_db, "orders", source_catalog, sample.orders)

    return {"document": document, "state": state, "holds_source": holds_source}


@pytest.mark.parametrize("action", ["corrupt", "truncate"], ids=["corrupted", "short"])
def test_a_corrupted_or_short_upload_is_caught_and_the_replica_stands(
    run, arm, hive_to_s3, sample, action
):
    # The bytes are altered after their MD5 was taken, as a network could: S3 refuses such a
    # body (BadDigest); moto stores it, and the ETag it answers with gives it away.
    first = run(hive_to_s3["document"]())
    assert first.status == "SUCCEEDED" and table_result(first)["plan"]["copier"] == "inline"
    rewrite_orders(sample)
    before = hive_to_s3["state"]()
    arm({"point": "copy.body", "action": action, "skip": 1, "times": 99})
    outcome = run(hive_to_s3["document"]())
    assert (outcome.status, outcome.error) == ("FAILED", "VerificationError"), outcome
    assert "the bytes sent have MD5" in outcome.cause
    result = table_result(outcome)
    # What was verified is kept for a resume; the object found wrong was removed.
    assert kept_for_a_resume(result)
    catalog, files = hive_to_s3["state"]()
    assert (catalog, outside(files, result["snapshot"])) == before
    arm()
    assert run(hive_to_s3["document"]()).status == "SUCCEEDED"
    hive_to_s3["holds_source"]()


@pytest.fixture
def run_changing_source(pipeline, sfn, aws, write_config, arm):
    """Replicate through the state machine, changing the source between Plan and the copy.

    Plan is held (a ``hang`` fail point) once it has written the manifest; ``change`` runs
    then, and the copy finds a source other than the one planned.
    """
    work_bucket, _, prefix = pipeline.work_uri.removeprefix("s3://").partition("/")

    def manifests() -> set[str]:
        pages = (
            aws["s3"]
            .get_paginator("list_objects_v2")
            .paginate(Bucket=work_bucket, Prefix="/".join(p for p in (prefix, "runs/") if p))
        )
        return {
            item["Key"]
            for page in pages
            for item in page.get("Contents", [])
            if item["Key"].endswith("/manifest.json")
        }

    def execute(document: dict, change) -> ExecutionOutcome:
        config_uri = deploy.upload_config(aws["s3"], pipeline.work_uri, write_config(document))
        known = manifests()
        arm({"point": "plan.planned", "action": "hang", "seconds": 10})
        arn = start(sfn, pipeline.state_machine_arn, deploy.execution_name("test"),
                    {"configUri": config_uri})  # fmt: skip
        deadline = time.monotonic() + 60
        while not manifests() - known:
            assert time.monotonic() < deadline, "Plan wrote no manifest"
            time.sleep(0.05)
        change()
        arm()  # the next runs are not held
        return follow(sfn, arn, poll_seconds=0.2, timeout_seconds=240)

    return execute


def test_a_local_source_changed_after_planning_is_refused_and_the_replica_stands(
    run, run_changing_source, hive, sample
):
    assert run(hive["document"]()).status == "SUCCEEDED"
    rewrite_orders(sample)
    before = hive["state"]()

    def change():
        day = sample.days[-1]
        write_parquet(f"{sample.orders.location}/dt={day}", "part-00000.parquet",
                      order_rows(day, count=9))  # fmt: skip

    outcome = run_changing_source(hive["document"](), change)
    assert (outcome.status, outcome.error) == ("FAILED", "VerificationError"), outcome
    assert "the source changed since it was planned" in outcome.cause
    result = table_result(outcome)
    assert kept_for_a_resume(result) or result["snapshotRemoved"]
    catalog, files = hive["state"]()
    assert (catalog, outside(files, result["snapshot"])) == before
    assert run(hive["document"]()).status == "SUCCEEDED"
    hive["holds_source"]()


def test_an_s3_source_changed_after_planning_is_refused_and_the_replica_stands(
    run, run_changing_source, cross_region, local_runtime, pipeline
):
    # S3 refuses the CopyObject pinned to the planned ETag (412). moto ignores the pin and
    # copies the new version; the copy's ETag, not the planned one, gives it away.
    east, west, sample = cross_region.east, cross_region.west, cross_region.sample
    replica_db = f"{sample.database}_dr"
    document = cross_region.document(**{"copier-options": {"s3-batch-files": 1}})
    first = run(document)
    assert first.status == "SUCCEEDED" and table_result(first)["plan"]["copier"] == "s3"
    rewrite_orders(sample)
    before = catalog_state(west, replica_db, ["orders"])
    changed = f"{sample.orders.location}/dt={sample.days[0]}/part-00000.parquet"

    def change():
        day = sample.days[0]
        write_parquet(f"{sample.orders.location}/dt={day}", "part-00000.parquet",
                      order_rows(day, count=9))  # fmt: skip

    log = local_runtime.state_dir / "aws" / "emulator.log"
    seen = log.stat().st_size
    outcome = run_changing_source(document, change)
    assert outcome.status == "FAILED", outcome
    # The distributed Map fails with the batch (it tolerates no failed batch): a CopyError
    # of the table. The batch itself (one file) failed with VerificationError, as the Lambda
    # service reports it; the others were copied.
    assert outcome.error == "CopyError"
    with open(log, encoding="utf-8", errors="replace") as reported:
        reported.seek(seen)
        failures = [line for line in reported if "ferry-local-s3-copy-batch failed: " in line]
    assert len(failures) == 1 and "VerificationError" in failures[0], failures
    assert f"{changed}: the source changed since it was planned" in failures[0]
    run_folder = RunLocations.for_event(pipeline.work_uri, table_result(outcome)["eventId"])
    assert len(recorded_batches(run_folder.manifest)) == len(sample.days) - 1
    result = table_result(outcome)
    # The batches copied before it are kept for a resume; the changed file is copied anew.
    assert result["snapshotRemoved"] is False and kept_for_a_resume(result)
    assert catalog_state(west, replica_db, ["orders"]) == before
    assert run(document).status == "SUCCEEDED"
    assert_replica_holds_source(west, replica_db, "orders", east, sample.orders)


# -- a lock its execution left ------------------------------------------------------------------


def test_a_lock_whose_execution_was_stopped_is_taken_over(
    pipeline, sfn, aws, write_config, run, arm, hive
):
    """An execution stopped by hand mid-copy runs no Abort: its table's lock stays, with a
    lease as long as the replication's time limit. The lock names the table's execution, and
    the next run's Plan, seeing it no longer runs, takes the lock over at once."""
    dynamodb = boto3.client("dynamodb", region_name=deploy.REGION)

    def locks() -> list[dict]:
        items = dynamodb.scan(TableName=pipeline.state_table)["Items"]
        return [i for i in items if i["sk"]["S"] == "lock" and hive["replica_db"] in i["pk"]["S"]]

    arm({"point": "copy.file", "action": "hang", "seconds": 15, "times": 99})
    config_uri = deploy.upload_config(
        aws["s3"], pipeline.work_uri, write_config(hive["document"]())
    )
    first = start(sfn, pipeline.state_machine_arn, deploy.execution_name("test"),
                  {"configUri": config_uri})  # fmt: skip
    deadline = time.monotonic() + 60
    while not locks() and time.monotonic() < deadline:
        time.sleep(0.2)
    [lock] = locks()
    owner = lock["owner"]["S"]
    assert owner.startswith("arn:aws:states:") and ":execution:" in owner, owner
    sfn.stop_execution(executionArn=first, error="Operator", cause="stopped by hand")
    assert follow(sfn, first, poll_seconds=0.2, timeout_seconds=30).status == "ABORTED"
    assert sfn.describe_execution(executionArn=owner)["status"] != "RUNNING"
    assert locks() == [lock]  # nothing released it
    arm()

    outcome = run(hive["document"]())
    assert outcome.status == "SUCCEEDED", outcome.results
    hive["holds_source"]()
    assert locks() == []  # the second run took it over, then released it
