"""Pieces of the pipeline that need no service: copier choice, errors, summaries."""

import json
from dataclasses import replace
from pathlib import Path

from ferry.config import CopierOptions, ReplicationMode, TableReplication
from ferry.copying.copier import CopyTask
from ferry.copying.manifest import REWRITE_BATCH_BYTES, ManifestSummary
from ferry.core.errors import describe_error
from ferry.core.model import Column, Partition, StorageDescriptor, Table, TableType
from ferry.local.emulator_emr_sync_task import api_parameters
from ferry.planning.replication_plan import ReplicationPlan
from ferry.planning.runs import CopierKind, choose_copier
from ferry.statemachine.outcomes import map_results, summary, write_map_results

EVENTS = Path(__file__).parents[2] / "events"


ONE_PARTITION = (Partition(("1",), StorageDescriptor("x")),)


def plan_with(tasks, mode=ReplicationMode.FULL, partitions=ONE_PARTITION, before=None):
    replication = TableReplication.model_validate(
        {
            "source-table": {"database-name": "a", "table-name": "t"},
            "replica-table": {"table-location": "s3://r/t"},
            "replication-mode": mode.value,
        }
        if mode is ReplicationMode.FULL
        else {
            "source-table": {"database-name": "a", "table-name": "t"},
            "replication-mode": mode.value,
        }
    )
    table = Table(
        "a", "t", TableType.EXTERNAL, StorageDescriptor("s3://s/t"), (Column("dt", "string"),)
    )
    return ReplicationPlan(
        "e",
        replication,
        table,
        before,
        table,
        tuple(partitions),
        (),
        ManifestSummary(
            len(tasks),
            sum(t.size for t in tasks),
            1 if tasks else 0,
            tuple(sorted({t.source.split(":")[0] for t in tasks})),
            tuple(sorted({t.target.split(":")[0] for t in tasks})),
        ),
        None,
        None,
    )


def task(source, target, size=10):
    return CopyTask(source, target, size)


def test_copier_choice():
    options = CopierOptions(inline_threshold_mib=1)
    assert (
        choose_copier(plan_with([task("s3://s/a", "s3a://r/a", 10**10)]), options) is CopierKind.S3
    )
    assert choose_copier(plan_with([task("file:///s/a", "s3://r/a")]), options) is CopierKind.INLINE
    assert (
        choose_copier(plan_with([task("file:///s/a", "s3://r/a", 2 * 1024 * 1024)]), options)
        is CopierKind.SPARK
    )
    assert (
        choose_copier(plan_with([task("hdfs://n/a", "s3://r/a", 1024 * 1024)]), options)
        is CopierKind.INLINE
    )
    assert (
        choose_copier(plan_with([], ReplicationMode.METADATA_MIRROR), options)
        is CopierKind.METADATA
    )
    assert choose_copier(plan_with([]), options) is CopierKind.METADATA
    unchanged = plan_with([], partitions=(), before=plan_with([]).replica_table)
    assert choose_copier(unchanged, options) is CopierKind.NONE


def test_manifest_rewrites_need_a_copier_and_many_go_to_spark():
    """An Iceberg run's manifest rewrites are a copier's work even with no file to copy;
    more of them than one batch holds (they cost CPU) leave the inline copier."""
    options = CopierOptions(inline_threshold_mib=1)

    def rewriting(source, target, rewrite_bytes, files=()):
        plan = plan_with(list(files))
        summary = replace(
            plan.manifest,
            rewrites=3,
            rewrite_bytes=rewrite_bytes,
            source_schemes=(source,),
            target_schemes=(target,),
        )
        return replace(plan, manifest=summary)

    assert choose_copier(rewriting("file", "file", 1000), options) is CopierKind.INLINE
    assert choose_copier(rewriting("s3", "s3", 1000), options) is CopierKind.S3
    many = REWRITE_BATCH_BYTES + 1
    assert choose_copier(rewriting("file", "file", many), options) is CopierKind.SPARK
    assert choose_copier(rewriting("s3", "s3", many), options) is CopierKind.S3


def test_lambda_error_payloads_become_a_name_and_a_line():
    abort = json.loads((EVENTS / "abort.json").read_text())
    name, line = describe_error(abort["error"])
    assert name == "TargetNotWritableError" and line.startswith("cannot write s3://no-such-bucket/")
    assert describe_error({"Error": "States.Timeout", "Cause": "took too long"}) == (
        "States.Timeout",
        "took too long",
    )


OUTCOMES = [
    # Notify success ends a table that succeeded: its whole state, with what was notified.
    {
        "sourceTable": "sales.customers",
        "eventId": "ferry-20261121t083000000z-5e6f7a8b",
        "notified": {"status": "SUCCEEDED", "sourceTable": "sales.customers"},
    },
    # Abort table ends one that failed.
    {
        "status": "FAILED",
        "sourceTable": "sales.orders",
        "replicaTable": "sales_dr.orders",
        "eventId": "ferry-20261121t083000000z-1a2b3c4d",
        "failedState": "Inline copy",
        "error": "TargetNotWritableError",
        "cause": "cannot write s3://no-such-bucket/orders/...",
    },
]


def test_summary_names_the_first_failed_table():
    assert summary(OUTCOMES) == {
        "succeeded": 1,
        "unchanged": 0,
        "failed": 1,
        "error": "TargetNotWritableError",
        "cause": "sales.orders: cannot write s3://no-such-bucket/orders/...",
    }
    assert summary([{"status": "SUCCEEDED"}])["error"] is None
    # A Fail state takes no error name of Step Functions' own: the name moves to the cause.
    uncaught = {"status": "FAILED", "sourceTable": "s.t", "error": "States.DataLimitExceeded",
                "cause": "too big"}  # fmt: skip
    assert summary([uncaught]) | {} == {
        "succeeded": 0,
        "unchanged": 0,
        "failed": 1,
        "error": "StepFunctionsError",
        "cause": "s.t: States.DataLimitExceeded: too big",
    }


def test_the_summary_reads_the_map_results_step_functions_wrote(tmp_path):
    # The files of a ResultWriter, as the in-process driver and the emulator write them (and
    # as Step Functions does): a manifest naming the children's results by status.
    children = [
        {"index": 0, "input": {"sourceTable": "sales.customers"}, "status": "SUCCEEDED",
         "start": "t0", "stop": "t1", "output": OUTCOMES[0]},
        {"index": 1, "input": {"sourceTable": "sales.orders"}, "status": "SUCCEEDED",
         "start": "t0", "stop": "t1", "output": OUTCOMES[1]},
    ]  # fmt: skip
    written = write_map_results("Replicate tables", "", str(tmp_path / "results"), children)
    found = map_results(written["ResultWriterDetails"])
    assert [child.output for child in found] == OUTCOMES
    assert summary([child.output for child in found])["failed"] == 1


def test_step_functions_parameters_become_emr_serverless_api_names():
    request = {
        "ApplicationId": "a",
        "JobDriver": {"SparkSubmit": {"EntryPoint": "e", "EntryPointArguments": ["--x"]}},
        "Tags": {"Team": "dr"},
    }
    assert api_parameters(request) == {
        "applicationId": "a",
        "jobDriver": {"sparkSubmit": {"entryPoint": "e", "entryPointArguments": ["--x"]}},
        "tags": {"Team": "dr"},
    }


def test_the_trigger_time_comes_from_the_s3_event_or_the_schedule():
    from datetime import UTC, datetime

    from ferry.statemachine.payloads import trigger_time

    due = datetime(2026, 11, 21, 3, 0, tzinfo=UTC)
    assert (
        trigger_time({"schedule": "cron(0 3 * * ? *)", "scheduledTime": "2026-11-21T03:00:00Z"})
        == due
    )
    assert trigger_time({"bucket": "b", "key": "k/_SUCCESS", "time": "2026-11-21T03:00:00Z"}) == due
    # The emulator's S3 events carry epoch seconds.
    assert trigger_time({"bucket": "b", "key": "k", "time": str(due.timestamp())}) == due
    # By hand, or a template that the emulator left unfilled: the run's own start counts.
    assert trigger_time(None) is None
    assert (
        trigger_time(
            {"schedule": "rate(1 hour)", "scheduledTime": "<aws.scheduler.scheduled-time>"}
        )
        is None
    )
