"""Iceberg tables end to end: the deployed state machine (and ``ferry replicate``) replicate a
pyiceberg-written table Glue → Glue on S3 and Hive → Hive on local disks; the replica is
read with pyiceberg through the replica's catalog, at its current and an earlier snapshot.

Sources are written with pyiceberg through the source catalog itself (``GlueCatalog`` on the
emulated Glue, ``HiveCatalog`` on the source metastore), as an engine writes them.
"""

from __future__ import annotations

import json

import pytest
from pyiceberg.catalog.glue import GlueCatalog as PyIcebergGlueCatalog
from pyiceberg.catalog.hive import HiveCatalog

from ferry.catalog.glue import GlueCatalog
from ferry.iceberg.pipeline import CurrentReferences
from ferry.iceberg.recognise import PREVIOUS_METADATA_LOCATION, metadata_location
from tests.e2e.test_faults import copy_batch_results
from tests.helpers import Replicator, config_document, read_bytes
from tests.iceberg_tables import create_history_table, read_rows, rows
from tests.integration.test_iceberg_pipeline import replication
from tests.integration.test_iceberg_replicate import assert_names_no_source

pytestmark = pytest.mark.e2e


@pytest.fixture
def glue_iceberg(aws, s3_properties, tmp_path, unique):
    """A history table on S3 registered in the source Glue database; the replica's pyiceberg
    Glue catalog, Ferry's Glue adapter and the config entry."""
    # Named as the local stack's grants expect (landing*: databases and buckets).
    source_bucket, replica_bucket = f"landing-{unique}", f"dr-{unique}"
    for bucket in (source_bucket, replica_bucket):
        aws["s3"].create_bucket(Bucket=bucket)
    glue = PyIcebergGlueCatalog(
        "glue",
        **{
            **s3_properties,
            "glue.endpoint": s3_properties["s3.endpoint"],
            "glue.region": "us-east-1",
            "warehouse": f"s3://{source_bucket}/warehouse",
        },
    )
    database = f"landing_iceberg_{unique}"
    glue.create_namespace(database)
    milestones = create_history_table(glue, f"{database}.history")
    document = {
        "source-catalog": {"name": "lake", "glue": {"region": "us-east-1"}},
        "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
        "table-replications": [replication(database, f"s3://{replica_bucket}/history")],
    }
    return {
        "source": f"{database}.history",
        "glue": glue,
        "ferry_glue": GlueCatalog("aws", aws["glue"]),
        "s3": aws["s3"],
        "database": database,
        "milestones": milestones,
        "document": document,
        "target": f"s3://{replica_bucket}/history",
    }


def objects(s3, bucket: str, prefix: str) -> set[str]:
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return {o["Key"] for o in listed}


def test_glue_to_glue_on_s3_through_the_state_machine(run, arm, glue_iceberg):
    g = glue_iceberg
    replica_database = f"{g['database']}_dr"
    source_table = g["glue"].load_table(g["source"])

    outcome = run(g["document"])

    assert outcome.status == "SUCCEEDED", outcome.failed_states
    (result,) = outcome.results
    assert result["plan"]["copier"] == "s3" and result["plan"]["kind"] == "Iceberg table"
    registered = g["ferry_glue"].get_table(replica_database, "history")
    first = metadata_location(registered)
    assert first.startswith(g["target"] + "/metadata/00000-")
    replica = g["glue"].load_table(f"{replica_database}.history")
    assert read_rows(replica) == read_rows(source_table)
    earlier = g["milestones"]["position delete"]
    assert read_rows(replica, earlier) == read_rows(source_table, earlier)

    # Nothing changed: nothing copied, nothing committed.
    again = run(g["document"])

    (result,) = again.results
    assert result["plan"]["copier"] == "none" and result["notified"]["status"] == "UNCHANGED"
    assert "Commit" not in again.child_entered

    # A new source version, and a failure in Commit: the replica stays readable at its
    # previous version, and a re-run converges.
    source_table.append(rows([30, 31], ["us", "eu"]))
    replica_bucket = g["target"].removeprefix("s3://").split("/")[0]
    metadata_before = objects(g["s3"], replica_bucket, "history/metadata/")
    arm({"point": "commit.claimed", "error": "CatalogError", "times": 99})

    failed = run(g["document"])

    assert failed.status == "FAILED" and failed.error == "CatalogError", failed.failed_states
    assert metadata_location(g["ferry_glue"].get_table(replica_database, "history")) == first
    replica = g["glue"].load_table(f"{replica_database}.history")
    assert not {30, 31} & {r["id"] for r in read_rows(replica)}
    (result,) = failed.results
    assert result["failedState"] == "Commit", result
    # Abort removed the failed run's metadata files; its copied data files may stay.
    assert objects(g["s3"], replica_bucket, "history/metadata/") == metadata_before
    arm()

    converged = run(g["document"])

    assert converged.status == "SUCCEEDED", converged.failed_states
    moved = g["ferry_glue"].get_table(replica_database, "history")
    assert moved.parameters[PREVIOUS_METADATA_LOCATION] == first
    replica = g["glue"].load_table(f"{replica_database}.history")
    assert read_rows(replica) == read_rows(source_table)
    assert read_rows(replica, earlier) == read_rows(source_table, earlier)


def test_glue_to_glue_on_s3_with_ferry_replicate(glue_iceberg):
    g = glue_iceberg
    replica_database = f"{g['database']}_dr"
    source_table = g["glue"].load_table(g["source"])
    replicator = Replicator(g["document"])

    (outcome,) = replicator.run()

    assert outcome.status == "SUCCEEDED", outcome.failed_states
    replica = g["glue"].load_table(f"{replica_database}.history")
    assert read_rows(replica) == read_rows(source_table)
    earlier = g["milestones"]["schema change"]
    assert read_rows(replica, earlier) == read_rows(source_table, earlier)
    (again,) = replicator.run()
    assert again.status == "UNCHANGED", again


def test_hive_to_hive_through_the_state_machine(
    run, local_runtime, replica_catalog, tmp_path, unique, consumer
):
    topic, messages = consumer
    database = f"iceberg_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    writer.create_namespace(database)
    milestones = create_history_table(writer, f"{database}.history")
    target = (tmp_path / "replica" / "history").as_uri()
    document = config_document(
        local_runtime, [replication(database, target)], **{"sns-event-listener": {"topic": topic}}
    )
    source_table = writer.load_table(f"{database}.history")

    outcome = run(document)

    assert outcome.status == "SUCCEEDED", outcome.failed_states
    replica = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{database}_dr.history"
    )
    assert read_rows(replica) == read_rows(source_table)
    earlier = milestones["overwrite"]
    assert read_rows(replica, earlier) == read_rows(source_table, earlier)
    # The consumer hears where the replica's metadata is and which snapshots it got.
    first = metadata_location(replica_catalog.get_table(f"{database}_dr", "history"))
    (success,) = [m["body"] for m in messages() if m["body"]["type"] == "SUCCESS"]
    assert success["iceberg"] == {
        "metadataLocation": first,
        "previousMetadataLocation": None,
        "addedSnapshotIds": [s.snapshot_id for s in source_table.snapshots()],
    }

    again = run(document)

    (result,) = again.results
    assert result["notified"]["status"] == "UNCHANGED"
    (unchanged,) = [m["body"] for m in messages() if m["body"]["type"] == "SUCCESS"]
    assert unchanged["iceberg"] == {
        "metadataLocation": first, "previousMetadataLocation": None, "addedSnapshotIds": [],
    }  # fmt: skip

    # An append committed at the source through its catalog arrives by itself.
    source_table.append(rows([40], ["ap"]))
    added = source_table.current_snapshot().snapshot_id

    moved = run(document)

    assert moved.status == "SUCCEEDED", moved.failed_states
    (success,) = [m["body"] for m in messages() if m["body"]["type"] == "SUCCESS"]
    assert success["iceberg"]["previousMetadataLocation"] == first
    assert success["iceberg"]["addedSnapshotIds"] == [added]
    assert success["iceberg"]["metadataLocation"] == metadata_location(
        replica_catalog.get_table(f"{database}_dr", "history")
    )
    replica = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{database}_dr.history"
    )
    assert read_rows(replica) == read_rows(source_table)


def test_hive_to_hive_with_the_spark_copier_through_the_state_machine(
    run, local_runtime, tmp_path, unique
):
    """The Spark job (from its archive, on the emulator's EMR Serverless) copies the files and
    rewrites the manifests — several, one of them naming a position delete file — over
    several batches; the replica reads as the source, before and after an append."""
    database = f"iceberg_spark_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    writer.create_namespace(database)
    milestones = create_history_table(writer, f"{database}.history")
    replica_root = tmp_path / "replica" / "history"
    entry = {
        **replication(database, replica_root.as_uri()),
        "copier-options": {"inline-threshold-mib": 0, "s3-batch-files": 4},
    }
    document = config_document(local_runtime, [entry])
    source_table = writer.load_table(f"{database}.history")

    outcome = run(document)

    assert outcome.status == "SUCCEEDED", outcome.failed_states
    (result,) = outcome.results
    assert result["plan"]["copier"] == "spark" and result["plan"]["batches"] > 1
    report = json.loads(read_bytes(result["plan"]["reportUri"]))
    assert report["failed"] == [] and report["rewrites"] == report["rewritten"] > 1
    replica_hive = HiveCatalog("replica", uri=local_runtime.replica_uri)
    replica = replica_hive.load_table(f"{database}_dr.history")
    assert read_rows(replica) == read_rows(source_table)
    for name in ("position delete", "overwrite"):
        snapshot = milestones[name]
        assert read_rows(replica, snapshot) == read_rows(source_table, snapshot)
    assert_names_no_source(replica_root, source_table.location())

    source_table.append(rows([30, 31], ["us", "eu"]))

    again = run(document)

    assert again.status == "SUCCEEDED", again.failed_states
    (result,) = again.results
    assert result["plan"]["copier"] == "spark" and result["plan"]["files"] == 2
    replica = replica_hive.load_table(f"{database}_dr.history")
    assert read_rows(replica) == read_rows(source_table)
    earlier = milestones["position delete"]
    assert read_rows(replica, earlier) == read_rows(source_table, earlier)
    assert_names_no_source(replica_root, source_table.location())


def test_an_s3_copy_batch_timed_out_after_its_rewrites_is_retried_and_converges(
    run, arm, glue_iceberg
):
    """The batch's Lambda (one batch: every copy and every manifest rewrite) times out after
    copying and rewriting, before recording: Step Functions retries it, the retry copies no
    file again and rewrites the same manifests, and the replica reads as the source with
    nothing in its metadata/ that its metadata does not name."""
    g = glue_iceberg
    source_table = g["glue"].load_table(g["source"])
    arm({"point": "copy.batch", "action": "timeout"})

    outcome = run(g["document"])

    assert outcome.status == "SUCCEEDED", outcome.failed_states
    (result,) = outcome.results
    assert result["plan"]["copier"] == "s3" and result["plan"]["batches"] == 1
    (batch,) = copy_batch_results(result["plan"])
    assert batch["resumed"] == batch["files"] == result["plan"]["files"]  # the retry's
    replica_database = f"{g['database']}_dr"
    replica = g["glue"].load_table(f"{replica_database}.history")
    assert read_rows(replica) == read_rows(source_table)
    earlier = g["milestones"]["position delete"]
    assert read_rows(replica, earlier) == read_rows(source_table, earlier)
    current = metadata_location(g["ferry_glue"].get_table(replica_database, "history"))
    references = CurrentReferences(current)
    bucket = g["target"].removeprefix("s3://").split("/")[0]
    for key in objects(g["s3"], bucket, "history/metadata/"):
        assert f"s3://{bucket}/{key}" in references, key
