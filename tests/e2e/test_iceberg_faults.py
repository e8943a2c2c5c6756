"""An Iceberg replica with history under failures no ``except`` sees: ``ferry replicate``
killed (SIGKILL) part-way, and Lambdas timing out in the deployed state machine (Glue → Glue
on S3, under the emulator's IAM). The replica stays readable at its previous snapshot, the
next run converges, and housekeeping deletes exactly what the failed runs left — their
intent, ledgered by Plan before they wrote anything — and nothing else.
"""

from __future__ import annotations

import itertools
import signal
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from pyiceberg.catalog.glue import GlueCatalog as PyIcebergGlueCatalog
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable

from ferry.catalog.glue import GlueCatalog
from ferry.iceberg.paths import canonical
from ferry.iceberg.pipeline import CurrentReferences
from ferry.iceberg.recognise import metadata_location
from ferry.lifecycle.replica_state import LOCAL_STATE_FILE, ReplicaState
from ferry.local import deploy
from ferry.replicas.ledger import DynamoDbStateStore, SqliteStateStore, replica_key
from ferry.statemachine.executions import follow, start
from tests.e2e.test_faults import copy_batch_results
from tests.helpers import (
    Replicator,
    at,
    config_document,
    ferry,
    files_below,
    housekept,
    housekept_paths,
)
from tests.iceberg_tables import create_history_table, read_rows
from tests.integration.test_iceberg_faults import (
    HistorySource,
    Replica,
    assert_complete,
    assert_reads_as,
    create_history_source,
)
from tests.integration.test_iceberg_pipeline import move_source

pytestmark = pytest.mark.e2e

_tables = itertools.count(1)


@pytest.fixture(scope="module")
def history_source(local_runtime, tmp_path_factory) -> HistorySource:
    return create_history_source(local_runtime, tmp_path_factory.mktemp("iceberg-killed"))


def succeeds(*args: str) -> str:
    """Run ``ferry <args>`` to success; what it printed."""
    process = ferry(*args)
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    return out


@pytest.mark.parametrize(
    "fault",
    [
        # Mid-copy: the copier wrote its first files.
        {"point": "copy.file", "action": "kill", "skip": 1},
        # In Commit: the manifests and manifest lists written, not the metadata.json.
        {"point": "commit.metadata", "action": "kill"},
        # In Commit, the replica claimed, its metadata_location not moved.
        {"point": "commit.claimed", "action": "kill"},
    ],
    ids=lambda fault: fault["point"],
)
def test_a_killed_ferry_replicate_leaves_files_housekeeping_deletes_exactly(
    fault, history_source, local_runtime, source_catalog, replica_catalog, write_config, tmp_path
):
    source = history_source
    move_source(source_catalog, source.database, source.before)
    replica_database = f"{source.database}_killed{next(_tables)}"
    target = (tmp_path / "replica" / "history").as_uri()
    document = config_document(
        local_runtime,
        [
            {
                "source-table": {"database-name": source.database, "table-name": "history"},
                "replica-table": {"database-name": replica_database, "table-location": target},
            }
        ],
    )
    config, home = str(write_config(document)), str(tmp_path / "home")
    replica = Replica(
        Replicator(
            document, state=ReplicaState(SqliteStateStore(tmp_path / "home" / LOCAL_STATE_FILE))
        ),
        target,
        replica_database,
        HiveCatalog("replica", uri=local_runtime.replica_uri),
    )
    printed = succeeds("replicate", config, "--home", home)
    assert f"{source.database}.history → {replica_database}.history" in printed
    assert "Iceberg table, " in printed and "unpartitioned" not in printed
    before = metadata_location(replica_catalog.get_table(replica_database, "history"))
    n, n_plus_1 = source.table(source.before), source.table(source.after)
    # Somebody else's files below the location: never Ferry's to delete.
    foreign = [tmp_path / "replica" / "history" / "data" / "theirs.parquet"]
    foreign.append(tmp_path / "replica" / "history" / "metadata" / "theirs.avro")
    for path in foreign:
        path.write_bytes(b"not Ferry's")
    move_source(source_catalog, source.database, source.after)
    files_before = {canonical(path) for path in files_below(target)}

    killed = ferry("replicate", config, "--home", home, faults=[fault])

    assert killed.wait(180) == -signal.SIGKILL
    assert metadata_location(replica_catalog.get_table(replica_database, "history")) == before
    assert_reads_as(replica, n)
    assert_complete(replica)
    files = files_below(target)
    left = {canonical(path) for path in files} - files_before
    assert left
    # A data file (whole, or under its partial name when the kill came mid-file).
    assert any(".parquet" in path and "-ferry-" not in path for path in left)
    if fault["point"] == "commit.claimed":
        assert any(path.endswith(".metadata.json") for path in left)
    now = datetime.now(UTC)

    within = replica.replicator.housekeeping(clock=at(now + timedelta(days=1)))
    dry = replica.replicator.housekeeping(clock=at(now + timedelta(days=30)), dryRun=True)

    assert within.status == dry.status == "SUCCEEDED", (dry.error, dry.cause)
    assert within.output["housekeeping"]["deleted"] == 0
    (table,) = housekept(dry.output["housekeeping"])
    assert {canonical(p) for p in housekept_paths(table, "would delete")} == left
    assert files_below(target) == files

    done = replica.replicator.housekeeping(clock=at(now + timedelta(days=30)))

    assert done.status == "SUCCEEDED", (done.error, done.cause)
    (table,) = housekept(done.output["housekeeping"])
    assert {canonical(p) for p in housekept_paths(table, "deleted")} == left
    assert {canonical(path) for path in files_below(target)} == files_before
    assert all(path.read_bytes() == b"not Ferry's" for path in foreign)
    assert_reads_as(replica, n)
    assert_complete(replica)

    # The next run converges (the dead run's lock is taken over); one more writes nothing.
    succeeds("replicate", config, "--home", home)
    assert_reads_as(replica, n_plus_1)
    assert_complete(replica)
    files = files_below(target)
    succeeds("replicate", config, "--home", home)
    assert files_below(target) == files


# -- the state machine, Glue → Glue on S3 -----------------------------------------------------


@pytest.fixture
def glue_history(aws, s3_properties, tmp_path, unique):
    """A history table on S3 registered in the source Glue database at version N (before a
    position delete); its version N+1 is the writer's current metadata."""
    source_bucket, replica_bucket = f"landing-{unique}", f"dr-{unique}"
    for bucket in (source_bucket, replica_bucket):
        aws["s3"].create_bucket(Bucket=bucket)
    writer = SqlCatalog(
        "writer",
        uri=f"sqlite:///{tmp_path}/catalog.db",
        warehouse=f"s3://{source_bucket}/warehouse",
        **s3_properties,
    )
    writer.create_namespace("db")
    milestones = create_history_table(writer, "db.history")
    after = writer.load_table("db.history")

    def static(location: str) -> StaticTable:
        return StaticTable.from_metadata(location, properties=s3_properties)

    before = next(
        entry.metadata_file
        for entry in reversed(after.metadata.metadata_log)
        if static(entry.metadata_file).metadata.current_snapshot_id
        == milestones["copy-on-write delete"]
    )
    glue = PyIcebergGlueCatalog(
        "glue",
        **{
            **s3_properties,
            "glue.endpoint": s3_properties["s3.endpoint"],
            "glue.region": "us-east-1",
        },
    )
    database = f"landing_iceberg_{unique}"
    glue.create_namespace(database)
    glue.register_table(f"{database}.history", before)
    target = f"s3://{replica_bucket}/history"
    entry = {
        "source-table": {"database-name": database, "table-name": "history"},
        "replica-table": {"database-name": f"{database}_dr", "table-location": target},
    }
    return {
        "glue": glue,
        "ferry_glue": GlueCatalog("aws", aws["glue"]),
        "database": database,
        "replica_database": f"{database}_dr",
        "document": {
            "source-catalog": {"name": "lake", "glue": {"region": "us-east-1"}},
            "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
            # One file a batch: a fault after the first batch is one mid-copy.
            "copier-options": {"s3-batch-files": 1},
            "table-replications": [entry],
        },
        "target": target,
        "n": static(before),
        "n_plus_1": static(after.metadata_location),
        "after": after.metadata_location,
        "key": replica_key("glue:us-east-1", f"{database}_dr.history"),
    }


def test_glue_replica_under_a_failed_copy_and_timeouts_through_the_state_machine(
    run, arm, glue_history, pipeline, sfn, aws, write_config
):
    g = glue_history
    replica = Replica(None, g["target"], g["replica_database"], g["glue"])
    assert run(g["document"]).status == "SUCCEEDED"
    before = metadata_location(g["ferry_glue"].get_table(g["replica_database"], "history"))
    assert_reads_as(replica, g["n"])
    move_source(g["ferry_glue"], g["database"], g["after"])

    # Every copy batch after the first fails, its file copied: the table fails, nothing is
    # committed.
    arm({"point": "copy.batch", "error": "CopyError", "skip": 1, "times": 99})

    failed = run(g["document"])

    assert failed.status == "FAILED", failed.failed_states
    (result,) = failed.results
    assert result["failedState"] == "S3 server-side copy", result
    assert metadata_location(g["ferry_glue"].get_table(g["replica_database"], "history")) == before
    assert_reads_as(replica, g["n"])
    assert_complete(replica)

    # Plan's Lambda times out after staging its commit, a copy batch's after copying its
    # file: both are retried, and the run converges.
    arm(
        {"point": "plan.planned", "action": "timeout"},
        {"point": "copy.batch", "action": "timeout", "skip": 1},
    )

    retried = run(g["document"])

    assert retried.status == "SUCCEEDED", retried.failed_states
    timed_out = {(state, error) for state, error, _ in retried.failed_states}
    assert ("Plan", "Sandbox.Timedout") in timed_out, timed_out
    (result,) = retried.results
    # The batch whose Lambda timed out, retried, found its file copied whole.
    assert sorted(batch["resumed"] for batch in copy_batch_results(result["plan"]))[-1] == 1
    assert_reads_as(replica, g["n_plus_1"])
    assert_complete(replica)
    arm()
    objects = files_below(g["target"])
    again = run(g["document"])
    (result,) = again.results
    assert result["notified"]["status"] == "UNCHANGED"
    assert files_below(g["target"]) == objects

    # Past the grace period (the ledger's entries made older), housekeeping leaves exactly
    # what the replica's current metadata references: the metadata.json of the timed-out
    # Plan's first attempt goes, as do the files only the superseded version referenced; the
    # failed run's copies stay, the next run having committed the same files.
    store = DynamoDbStateStore(
        boto3.client("dynamodb", region_name="us-east-1"), pipeline.state_table
    )
    entries = store.entries(g["key"])
    assert any(e.intent for e in entries)  # the failed run's
    store.record([replace(e, recorded_at=e.recorded_at - timedelta(days=4)) for e in entries])
    config_uri = deploy.upload_config(aws["s3"], pipeline.work_uri, write_config(g["document"]))
    arn = start(
        sfn,
        pipeline.housekeeping_state_machine_arn,
        deploy.execution_name("housekeeping"),
        {"configUri": config_uri},
    )
    outcome = follow(sfn, arn, poll_seconds=0.2, timeout_seconds=120)

    assert outcome.status == "SUCCEEDED", outcome
    current = CurrentReferences(replica.load().metadata_location).paths
    assert {canonical(path) for path in files_below(g["target"])} == current
    assert_reads_as(replica, g["n_plus_1"])
    assert store.entries(g["key"]) == []
    assert read_rows(replica.load()) == read_rows(g["n_plus_1"])
