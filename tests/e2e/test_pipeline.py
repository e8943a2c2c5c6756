"""The serverless pipeline, end to end on the emulator: the deployed state machine runs the
real handlers (in-process Lambdas), the real Spark job (spark-submit), and moto's services.
"""

from __future__ import annotations

import json
import time

import boto3
import pytest

from ferry.catalog.glue import GlueCatalog
from ferry.commands import run_command
from ferry.commands.local import run_local_trigger
from ferry.config import load_config
from ferry.feeds import trigger_events
from ferry.local import deploy
from ferry.local.samples import create_sample_tables, last_days, order_rows, write_parquet
from ferry.replicas.replica import REPLICATION_EVENT
from ferry.statemachine.executions import follow, start
from ferry.statemachine.payloads import trigger_time
from ferry.storage import fs
from tests.conftest import NOW
from tests.helpers import catalog_state, config_document, files_below, read_bytes

pytestmark = pytest.mark.e2e

WEST = "us-west-2"


def table_entry(sample, table, location=None, **extra):
    entry = {
        "source-table": {"database-name": sample.database, "table-name": table},
        "replica-table": {"database-name": f"{sample.database}_dr"},
        **extra,
    }
    if location:
        entry["replica-table"]["table-location"] = location
    return entry


def successes(messages) -> list[dict]:
    return [m["body"] for m in messages() if m["body"]["type"] == "SUCCESS"]


def assert_snapshot_matches_source(replica, table_name, replica_db, outcome_event, source_table):
    table = replica.get_table(replica_db, table_name)
    assert table.parameters[REPLICATION_EVENT] == outcome_event
    partitions = replica.list_partitions(table)
    assert partitions, "the replica has partitions"
    for partition in partitions:
        assert f"/{outcome_event}/" in partition.location + "/"
        assert read_bytes(f"{partition.location}/part-00000.parquet") == read_bytes(
            f"{source_table.location}/dt={partition.values[0]}/part-00000.parquet"
        )
    return table


def test_inline_copy_and_metadata_only_through_the_state_machine(
    run, local_runtime, sample, replica_catalog, tmp_path, consumer
):
    topic, messages = consumer
    target = fs.local_uri(tmp_path / "replica")
    outcome = run(
        config_document(
            local_runtime,
            [
                table_entry(sample, "orders", f"{target}/orders"),
                table_entry(
                    sample,
                    "big_orders",
                    **{
                        "replication-mode": "METADATA_MIRROR",
                        "table-mappings": {
                            f"{sample.database}.orders": f"{sample.database}_dr.orders"
                        },
                    },
                ),
            ],
            **{"sns-event-listener": {"topic": topic}},
        )
    )
    assert outcome.status == "SUCCEEDED", outcome
    received = successes(messages)
    assert {m["replicaTable"] for m in received} == {
        f"{sample.database}_dr.orders",
        f"{sample.database}_dr.big_orders",
    }
    orders_message = next(m for m in received if m["replicaTable"].endswith(".orders"))
    assert_snapshot_matches_source(
        replica_catalog,
        "orders",
        f"{sample.database}_dr",
        orders_message["eventId"],
        sample.orders,
    )
    assert orders_message["bytesReplicated"] == sum(
        files_below(f"{target}/orders/{orders_message['eventId']}").values()
    )
    assert orders_message["modifiedPartitions"] == [[d] for d in sample.days]
    view = replica_catalog.get_table(f"{sample.database}_dr", "big_orders")
    assert f"`{sample.database}_dr`.`orders`" in view.view_expanded_text
    copiers = {r["plan"]["copier"] for r in outcome.results}
    assert copiers == {"inline", "metadata"}


def test_spark_copy_through_emr_serverless(
    run, local_runtime, sample, replica_catalog, tmp_path, consumer
):
    topic, messages = consumer
    target = fs.local_uri(tmp_path / "replica")
    outcome = run(
        config_document(
            local_runtime,
            [
                table_entry(
                    sample,
                    "orders",
                    f"{target}/orders",
                    **{"copier-options": {"inline-threshold-mib": 0}},
                )
            ],
            **{"sns-event-listener": {"topic": topic}},
        )
    )
    assert outcome.status == "SUCCEEDED", outcome
    [result] = outcome.results
    assert result["plan"]["copier"] == "spark"
    assert result["copy"]["jobRunId"]
    [message] = successes(messages)
    assert_snapshot_matches_source(
        replica_catalog, "orders", f"{sample.database}_dr", message["eventId"], sample.orders
    )
    report = read_bytes(result["plan"]["reportUri"])
    assert b'"failed": []' in report


def test_s3_to_s3_cross_region_uses_server_side_copy(run, cross_region, consumer):
    topic, messages = consumer
    west, sample, replica_bucket = (
        cross_region.west,
        cross_region.sample,
        cross_region.replica_bucket,
    )
    outcome = run(
        cross_region.document(
            **{"sns-event-listener": {"topic": topic}, "copier-options": {"s3-batch-files": 2}}
        )
    )
    assert outcome.status == "SUCCEEDED", outcome
    [result] = outcome.results
    assert result["plan"]["copier"] == "s3" and result["plan"]["files"] == 3
    [message] = successes(messages)
    table = assert_snapshot_matches_source(
        west, "orders", f"{sample.database}_dr", message["eventId"], sample.orders
    )
    assert table.location == f"s3://{replica_bucket}/orders/{message['eventId']}"


def test_unchanged_table_skips_straight_to_the_end(
    run, local_runtime, sample, replica_catalog, tmp_path, consumer
):
    topic, messages = consumer
    target = fs.local_uri(tmp_path / "replica")
    entries = [
        table_entry(sample, "orders", f"{target}/orders"),
        table_entry(sample, "customers", f"{target}/customers"),
    ]
    document = config_document(local_runtime, entries, **{"sns-event-listener": {"topic": topic}})
    first = run(document)
    assert first.status == "SUCCEEDED"
    before = catalog_state(replica_catalog, f"{sample.database}_dr", ["orders", "customers"])
    copied = files_below(target)
    messages()
    # Nothing changed at the source: the diff finds nothing, nothing is copied or altered.
    second = run(document)
    assert second.status == "SUCCEEDED"
    for result in second.results:
        assert result["plan"]["copier"] == "none" and result["notified"]["status"] == "UNCHANGED"
        assert (result["plan"]["files"], result["plan"]["bytes"]) == (0, 0)
    assert "Nothing to do" in second.child_entered and "Commit" not in second.child_entered
    assert (
        catalog_state(replica_catalog, f"{sample.database}_dr", ["orders", "customers"]) == before
    )
    assert files_below(target) == copied
    successes = [m["body"] for m in messages() if m["body"]["type"] == "SUCCESS"]
    assert sorted(m["bytesReplicated"] for m in successes) == [0, 0]
    orders = next(m for m in successes if m["replicaTable"].endswith(".orders"))
    assert orders["modifiedPartitions"] == []


def test_unwritable_target_fails_the_execution_and_leaves_the_replica_as_it_was(
    run, local_runtime, sample, replica_catalog, tmp_path, unique, consumer
):
    topic, messages = consumer
    target = fs.local_uri(tmp_path / "replica")
    good = config_document(local_runtime, [table_entry(sample, "orders", f"{target}/orders")])
    assert run(good).status == "SUCCEEDED"
    replica_db = f"{sample.database}_dr"
    before = (catalog_state(replica_catalog, replica_db, ["orders"]), files_below(target))
    # Same replica table, now aimed at a bucket that does not exist: the copy cannot write.
    bad = config_document(
        local_runtime,
        [table_entry(sample, "orders", f"s3://no-such-bucket-{unique}/orders")],
        **{"sns-event-listener": {"topic": topic}},
    )
    outcome = run(bad)
    assert outcome.status == "FAILED"
    assert outcome.error == "TargetNotWritableError"
    assert outcome.cause.startswith(
        f"{sample.database}.orders: cannot write s3://no-such-bucket-{unique}/orders/"
    )
    assert ("Inline copy", "TargetNotWritableError") in {
        (s, e) for s, e, _ in outcome.failed_states
    }
    assert (catalog_state(replica_catalog, replica_db, ["orders"]), files_below(target)) == before
    failure = [m["body"] for m in messages() if m["body"]["type"] == "FAILURE"]
    assert len(failure) == 1 and failure[0]["errorMessage"].startswith(
        "cannot write s3://no-such-bucket-"
    )


def test_failed_spark_copy_names_the_files_and_changes_nothing(
    run, local_runtime, sample, replica_catalog, tmp_path, consumer
):
    topic, messages = consumer
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the replica folder should be")
    outcome = run(
        config_document(
            local_runtime,
            [
                table_entry(
                    sample,
                    "orders",
                    f"{fs.local_uri(blocker)}/orders",
                    **{"copier-options": {"inline-threshold-mib": 0}},
                )
            ],
            **{"sns-event-listener": {"topic": topic}},
        )
    )
    assert outcome.status == "FAILED"
    assert outcome.error == "CopyError"
    assert "3 files not copied" in outcome.cause and "cannot write" in outcome.cause
    assert ("Spark copy", "States.TaskFailed") in {(s, e) for s, e, _ in outcome.failed_states}
    assert replica_catalog.get_database(f"{sample.database}_dr") is None
    assert blocker.read_text().startswith("a file")
    [failure] = [m["body"] for m in messages() if m["body"]["type"] == "FAILURE"]
    assert "3 files not copied" in failure["errorMessage"]


def test_a_scheduled_run_keeps_its_schedule_as_the_trigger(
    pipeline, sfn, aws, local_runtime, sample, replica_catalog, write_config
):
    config = write_config(
        config_document(
            local_runtime,
            [table_entry(sample, "orders", **{"replication-mode": "METADATA_MIRROR"})],
            triggers={"schedule": {"expression": "cron(0 3 * * ? *)"}},
        )
    )
    config_uri = deploy.upload_config(aws["s3"], pipeline.work_uri, config)
    schedule = load_config(config).triggers.schedule
    # What EventBridge Scheduler sends: the input with its scheduled time filled in.
    sent = json.loads(
        json.dumps(trigger_events.scheduled_input(config_uri, schedule)).replace(
            trigger_events.SCHEDULED_TIME, "2026-11-21T03:00:00Z"
        )
    )
    arn = start(sfn, pipeline.state_machine_arn, deploy.execution_name("scheduled"), sent)
    outcome = follow(sfn, arn, poll_seconds=0.2, timeout_seconds=120)
    assert outcome.status == "SUCCEEDED", outcome
    assert outcome.output["trigger"] == {
        "schedule": "cron(0 3 * * ? *)",
        "scheduledTime": "2026-11-21T03:00:00Z",
    }
    mirrored = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    assert mirrored.location == sample.orders.location


def new_executions(sfn, pipeline, before: set[str], seconds: float = 30) -> list[str]:
    """The executions of the state machine started since ``before`` (waiting for one)."""
    deadline, started = time.monotonic() + seconds, []
    while not started and time.monotonic() < deadline:
        listed = sfn.list_executions(stateMachineArn=pipeline.state_machine_arn)["executions"]
        started = [e["executionArn"] for e in listed if e["executionArn"] not in before]
        time.sleep(0.2)
    return started


def executions(sfn, pipeline) -> set[str]:
    listed = sfn.list_executions(stateMachineArn=pipeline.state_machine_arn)["executions"]
    return {e["executionArn"] for e in listed}


def test_objects_landing_where_the_config_declares_s3_triggers_start_replications(
    pipeline, sfn, local_runtime, aws, unique, write_config, capsys
):
    source_bucket, replica_bucket = f"landing-{unique}", f"dr-{unique}"
    west_bucket = f"exports-{unique}"  # another region's bucket: the cross-region DR path
    for bucket in (source_bucket, replica_bucket):
        aws["s3"].create_bucket(Bucket=bucket)
    west_s3 = boto3.client("s3", region_name=WEST)
    west_s3.create_bucket(
        Bucket=west_bucket, CreateBucketConfiguration={"LocationConstraint": WEST}
    )
    glue = GlueCatalog("aws", aws["glue"])
    sample = create_sample_tables(
        glue, f"events_{unique}", f"s3://{source_bucket}/warehouse", last_days(NOW.date(), 2)
    )
    config = write_config(
        {
            "source-catalog": {"name": "landing", "glue": {"region": "us-east-1"}},
            "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
            "triggers": {
                "s3": [
                    {"bucket": source_bucket, "prefix": "warehouse/"},
                    {"bucket": west_bucket, "prefix": "done/", "suffix": ".marker", "region": WEST},
                ]
            },
            "table-replications": [table_entry(sample, "orders", f"s3://{replica_bucket}/orders")],
        }
    )
    assert run_local_trigger(config, local_runtime.state_dir) == 0
    installed = capsys.readouterr().out.splitlines()
    assert [line.split(" now starts ")[0] for line in installed] == [
        f"an object created at s3://{source_bucket}/warehouse/…_SUCCESS",
        f"an object created at s3://{west_bucket}/done/….marker ({WEST})",
    ]

    # A new day's partition lands, then its marker: that starts the replication.
    before = executions(sfn, pipeline)
    write_parquet(
        f"s3://{source_bucket}/warehouse/{sample.database}.db/orders/dt=2026-11-22",
        "part-00000.parquet",
        order_rows("2026-11-22"),
    )
    aws["s3"].put_object(
        Bucket=source_bucket, Key="warehouse/other/_TEMP", Body=b""
    )  # not a marker
    aws["s3"].put_object(
        Bucket=source_bucket, Key=f"warehouse/{sample.database}.db/orders/_SUCCESS", Body=b""
    )
    started = new_executions(sfn, pipeline, before)
    assert len(started) == 1, "exactly the marker started an execution"
    outcome = follow(sfn, started[0], poll_seconds=0.2, timeout_seconds=120)
    assert outcome.status == "SUCCEEDED", outcome
    trigger = outcome.output["trigger"]
    assert {k: trigger[k] for k in ("bucket", "key")} == {
        "bucket": source_bucket,
        "key": f"warehouse/{sample.database}.db/orders/_SUCCESS",
    }
    assert trigger_time(trigger) is not None, trigger  # the object's event time: the lag's start
    replica = glue.get_table(f"{sample.database}_dr", "orders")
    assert [p.values for p in glue.list_partitions(replica)] == [(d,) for d in sample.days]

    # A marker in the other region's bucket starts the pipeline of this one.
    before = executions(sfn, pipeline)
    west_s3.put_object(Bucket=west_bucket, Key="done/orders.marker", Body=b"")
    started = new_executions(sfn, pipeline, before)
    assert len(started) == 1, "the other region's marker started an execution"
    outcome = follow(sfn, started[0], poll_seconds=0.2, timeout_seconds=120)
    assert outcome.status == "SUCCEEDED", outcome
    trigger = outcome.output["trigger"]
    assert (trigger["bucket"], trigger["key"]) == (west_bucket, "done/orders.marker")


def test_a_trigger_whose_events_would_never_arrive_is_refused_and_nothing_installed(
    pipeline, local_runtime, unique, write_config, capsys
):
    west_bucket = f"west-{unique}"
    boto3.client("s3", region_name=WEST).create_bucket(
        Bucket=west_bucket, CreateBucketConfiguration={"LocationConstraint": WEST}
    )
    rules = {region: boto3.client("events", region_name=region) for region in ("us-east-1", WEST)}

    def installed() -> dict[str, list[str]]:
        return {r: [x["Name"] for x in c.list_rules()["Rules"]] for r, c in rules.items()}

    before = installed()

    def trigger(*declared: dict) -> tuple[int, str]:
        document = {
            "source-catalog": {"name": "east", "glue": {"region": "us-east-1"}},
            "replica-catalog": {"name": "west", "glue": {"region": WEST}},
            "triggers": {"s3": list(declared)},
            "table-replications": [
                {
                    "source-table": {"database-name": "sales", "table-name": "orders"},
                    "replication-mode": "METADATA_MIRROR",
                    "replica-table": {"database-name": "sales_dr"},
                }
            ],
        }
        config = write_config(document)
        code = run_command(lambda: run_local_trigger(config, local_runtime.state_dir))
        out, err = capsys.readouterr()
        assert out == ""
        return code, err

    # The bucket is in us-west-2: its events never reach the pipeline region's event bus.
    code, error = trigger({"bucket": west_bucket})
    assert code == 2
    assert (
        f"triggers.s3[0].region: the bucket {west_bucket} is in {WEST}, not the pipeline's "
        f"us-east-1" in error
    )
    assert f"declare region: {WEST}" in error
    code, error = trigger({"bucket": west_bucket, "region": WEST}, {"bucket": f"none-{unique}"})
    assert code == 1
    assert f"triggers.s3[1]: the bucket none-{unique} does not exist in the local runtime" in error
    assert installed() == before
