"""An Iceberg run's manifest rewrites as work items of the run's manifest, and Commit's part,
between two local folders (no services).

Plan only reads: it streams one rewrite per source manifest into the run's manifest, batched
like the copies, and stages what Commit writes. A copier executes a batch's rewrites (the
inline copier here; the S3 copy batch and the Spark job call the same ``rewrite_batch`` /
``ManifestRewriter``) before it records the batch. Commit writes the manifest lists and the
metadata.json and checks only the files the run brought. The replica is read with pyiceberg.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from ferry.config import CopierOptions
from ferry.copying.manifest import BATCH_TEXT_LIMIT, ManifestWriter, batch_rewrites, read_batches
from ferry.core import faults
from ferry.core.errors import CopyIncompleteError
from ferry.iceberg.pipeline import (
    FerryFileIO,
    commit_metadata,
    new_files,
    plan_iceberg,
    read_staged,
    rewrite_batch,
)
from ferry.iceberg.reading import read_manifest, read_manifest_list
from ferry.lifecycle import copy_work
from ferry.storage import fs
from tests.iceberg_tables import create_history_table, read_rows, rows, static_table
from tests.integration.test_iceberg_replicate import assert_names_no_source

EVENT = "ferry-20261125t090000000z-0a1b2c3d"


@pytest.fixture
def history(tmp_path):
    """The history table (tests/iceberg_tables.py) in a SQLite catalog: catalog, table,
    milestones."""
    folder = tmp_path / "source"
    folder.mkdir()
    catalog = SqlCatalog("source", uri=f"sqlite:///{folder}/catalog.db", warehouse=folder.as_uri())
    catalog.create_namespace("db")
    milestones = create_history_table(catalog, "db.history")
    return catalog, catalog.load_table("db.history"), milestones


def plan_run(source_metadata, replica, previous, work: Path, event_id=EVENT, batch_files=3):
    """Plan (streaming into a manifest of small batches); the run, its summary, the manifest."""
    manifest_uri = fs.local_uri(work / event_id / "manifest.json")
    writer = ManifestWriter(manifest_uri, event_id, batch_files)
    run = plan_iceberg(source_metadata, replica, previous, event_id, writer, write=True).run
    return run, writer.close(), manifest_uri


def source_manifests(table) -> set[str]:
    io = table.io
    return {
        m.manifest_path
        for s in table.metadata.snapshots
        for m in read_manifest_list(io, s.manifest_list).records
    }


def contents_below(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_plan_streams_one_rewrite_per_manifest_in_bounded_batches_and_writes_no_replica_file(
    history, tmp_path
):
    _, table, _ = history
    replica_root = tmp_path / "replica" / "history"

    run, summary, manifest_uri = plan_run(
        table.metadata_location, replica_root.as_uri(), None, tmp_path / "work"
    )

    assert not replica_root.exists()  # Plan wrote nothing below the replica
    batches = read_batches(manifest_uri)
    items = [item for batch in batches for item in batch_rewrites(batch)[1]]
    assert summary.rewrites == len(items) == len(source_manifests(table))
    assert {item[0] for item in items} == source_manifests(table)
    assert all(item[1].startswith(replica_root.as_uri() + "/metadata/") for item in items)
    for batch in batches:
        units = sum(len(root["files"]) for root in batch["roots"]) + len(batch_rewrites(batch)[1])
        assert units <= 3 and len(json.dumps(batch)) <= BATCH_TEXT_LIMIT
    # What Commit writes is staged in the run's folder, and lists every manifest written.
    staged = read_staged(run.staged)
    assert run.staged.startswith(fs.local_uri(tmp_path / "work"))
    assert set(staged.rewritten.values()) == {item[1] for item in items}
    assert set(run.written) == {
        *staged.rewritten.values(),
        *(write.target for write in staged.lists),
        staged.metadata_location,
    }


def test_batches_rewritten_in_any_order_and_again_give_the_same_bytes_and_commit_converges(
    history, tmp_path
):
    _, table, milestones = history
    replica_root = tmp_path / "replica" / "history"
    run, _, manifest_uri = plan_run(
        table.metadata_location, replica_root.as_uri(), None, tmp_path / "work"
    )

    copy_work.copy_inline(manifest_uri, CopierOptions())
    written = contents_below(replica_root)
    for batch in reversed(read_batches(manifest_uri)):  # a retried batch, out of order
        rewrite_batch(batch)

    assert contents_below(replica_root) == written
    assert not (replica_root / run.metadata_location.rsplit("/", 1)[1]).exists()
    commit_metadata(run)
    committed = contents_below(replica_root)
    commit_metadata(run)  # Commit retried after it wrote the metadata.json: nothing changes
    assert contents_below(replica_root) == committed

    replica = static_table(run.metadata_location, FerryFileIO())
    assert read_rows(replica) == read_rows(table)
    for name in ("position delete", "overwrite"):
        snapshot = milestones[name]
        assert read_rows(replica, snapshot) == read_rows(table, snapshot)
    assert_names_no_source(replica_root, table.location())


def test_a_position_delete_file_two_manifests_name_comes_out_the_same_from_both(history, tmp_path):
    _, table, _ = history
    replica_root = tmp_path / "replica" / "history"
    _, _, manifest_uri = plan_run(
        table.metadata_location, replica_root.as_uri(), None, tmp_path / "work"
    )
    batches = read_batches(manifest_uri)
    [(context, delete_manifest)] = [
        (context, item)
        for batch in batches
        for context, items in [batch_rewrites(batch)]
        for item in items
        if item[4] == 1  # ManifestContent.DELETES
    ]
    # The same delete manifest rewritten as two manifests of two batches, run apart.
    first, second = (
        {"eventId": EVENT, "batch": n, "roots": [],
         "rewrites": {"context": context, "items": [[delete_manifest[0], target, *delete_manifest[2:]]]}}
        for n, target in enumerate(
            (f"{replica_root.as_uri()}/metadata/a.avro", f"{replica_root.as_uri()}/metadata/b.avro")
        )
    )  # fmt: skip
    rewrite_batch(first)
    [delete_file] = replica_root.rglob("delete-*.parquet")
    once = delete_file.read_bytes()
    delete_file.unlink()  # the second batch writes it again, unaware of the first
    rewrite_batch(second)

    assert delete_file.read_bytes() == once
    io = FerryFileIO()
    for name in ("a.avro", "b.avro"):
        [entry] = read_manifest(io, f"{replica_root.as_uri()}/metadata/{name}").records
        assert entry.data_file.file_size_in_bytes == len(once)
        assert entry.data_file.file_path == f"file://{delete_file}"
    for value in pq.read_table(delete_file).column("file_path").to_pylist():
        assert value.startswith(replica_root.as_uri())


def test_commit_refuses_while_a_rewritten_manifest_or_a_new_file_is_missing(history, tmp_path):
    _, table, _ = history
    replica_root = tmp_path / "replica" / "history"
    run, _, manifest_uri = plan_run(
        table.metadata_location, replica_root.as_uri(), None, tmp_path / "work"
    )
    batches = read_batches(manifest_uri)
    copy_work.copy_inline(manifest_uri, CopierOptions())
    staged = read_staged(run.staged)
    manifest = Path(next(iter(staged.rewritten.values())).removeprefix("file://"))
    manifest.unlink()

    with pytest.raises(CopyIncompleteError, match=manifest.name):
        commit_metadata(run)
    assert not Path(run.metadata_location.removeprefix("file://")).exists()

    for batch in batches:
        rewrite_batch(batch)
    data_file = next(replica_root.glob("data/*/*.parquet"))
    kept = data_file.read_bytes()
    data_file.unlink()

    with pytest.raises(CopyIncompleteError, match=data_file.name):
        commit_metadata(run)

    data_file.write_bytes(kept)
    commit_metadata(run)
    assert read_rows(static_table(run.metadata_location, FerryFileIO())) == read_rows(table)


def test_commit_failing_between_the_lists_and_the_metadata_json_converges_when_retried(
    history, tmp_path
):
    _, table, _ = history
    replica_root = tmp_path / "replica" / "history"
    run, _, manifest_uri = plan_run(
        table.metadata_location, replica_root.as_uri(), None, tmp_path / "work"
    )
    copy_work.copy_inline(manifest_uri, CopierOptions())

    with faults.armed(faults.Fault("commit.metadata")), pytest.raises(faults.InjectedFault):
        commit_metadata(run)

    metadata_json = Path(run.metadata_location.removeprefix("file://"))
    assert not metadata_json.exists()
    lists = [Path(w.target.removeprefix("file://")) for w in read_staged(run.staged).lists]
    assert all(path.exists() for path in lists)  # written, referenced by nothing yet
    commit_metadata(run)
    assert read_rows(static_table(run.metadata_location, FerryFileIO())) == read_rows(table)


def test_an_incremental_commit_checks_only_the_files_the_run_brought(history, tmp_path):
    catalog, table, _ = history
    replica_root = tmp_path / "replica" / "history"
    work = tmp_path / "work"
    full, _, manifest_uri = plan_run(table.metadata_location, replica_root.as_uri(), None, work)
    copy_work.copy_inline(manifest_uri, CopierOptions())
    commit_metadata(full)
    table.append(rows([40, 41], ["eu", "us"]))
    table = catalog.load_table("db.history")

    run, summary, manifest_uri = plan_run(
        table.metadata_location, replica_root.as_uri(), full.metadata_location, work,
        event_id="ferry-20261125t100000000z-4e5f6a7b",
    )  # fmt: skip
    copy_work.copy_inline(manifest_uri, CopierOptions())
    commit_metadata(run)

    staged = read_staged(run.staged)
    copied = {
        task_target for batch in read_batches(manifest_uri) for task_target in _targets(batch)
    }
    assert summary.files == 2 and summary.rewrites == 1
    assert new_files(staged, FerryFileIO()) == {
        *copied,
        *staged.rewritten.values(),
        *(write.target for write in staged.lists),
        run.metadata_location,
        *(f.statistics_path for f in static_table(run.metadata_location, FerryFileIO()).metadata.statistics),
    }  # fmt: skip
    replica = static_table(run.metadata_location, FerryFileIO())
    assert read_rows(replica) == read_rows(table)


def _targets(batch: dict) -> list[str]:
    return [fs.join(root["target"], f[0]) for root in batch["roots"] for f in root["files"]]
