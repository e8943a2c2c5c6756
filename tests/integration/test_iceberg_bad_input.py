"""Iceberg tables Ferry must refuse, through ``ferry replicate`` and ``ferry plan`` as a person
runs them (real processes, the real metastores): one line naming the table and the file,
exit code 1, no traceback, and nothing changed at the source or the replica.

- broken metadata at the source (a metadata.json, manifest list or manifest that is missing,
  truncated or not what it should be; a ``metadata_location`` naming a missing file, a
  folder, a bucket that does not exist, a relative path, a Parquet file; a data file
  missing) or at the replica (its ``metadata_location`` naming a file that is gone);
- a replica another writer committed to since Ferry's last commit: refused, nothing
  ledgered, and housekeeping past the grace period leaves that writer's files;
- a source that switched between Iceberg and a plain Hive table.
"""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from pyiceberg.catalog.hive import HiveCatalog

from ferry.catalog import Catalog
from ferry.iceberg.paths import canonical
from ferry.iceberg.pipeline import CurrentReferences
from ferry.iceberg.recognise import (
    COMMITTED_METADATA_LOCATION,
    METADATA_LOCATION,
    PREVIOUS_METADATA_LOCATION,
    TABLE_TYPE,
    metadata_location,
)
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import SqliteStateStore
from tests.conftest import NOW
from tests.helpers import Replicator, at, catalog_state, config_document, files_below
from tests.iceberg_tables import SCHEMA, SPEC, read_rows, rows

pytestmark = pytest.mark.integration


def event_ids(prefix: str):
    counter = itertools.count(1)
    return lambda: f"{prefix}-{next(counter):08x}"


@dataclass
class Scene:
    """A small Iceberg source committed by pyiceberg, replicated once, then appended to."""

    writer: HiveCatalog
    database: str
    source_location: str
    target: str
    config: Path
    document: dict
    source: Catalog
    replica: Catalog
    home: Path

    @property
    def replica_database(self) -> str:
        return f"{self.database}_dr"

    def source_metadata(self):
        return self.writer.load_table(f"{self.database}.history").metadata

    def point_source_at(self, location: str) -> None:
        """Point the source's catalog entry at another metadata file (as a commit would)."""
        table = self.source.get_table(self.database, "history")
        parameters = {
            **table.parameters,
            PREVIOUS_METADATA_LOCATION: table.parameters[METADATA_LOCATION],
            METADATA_LOCATION: location,
        }
        self.source.alter_table(replace(table, parameters=parameters))

    def state(self):
        """Both catalogs' entries and both sides' files, to compare before and after."""
        return (
            catalog_state(self.source, self.database, ["history"]),
            catalog_state(self.replica, self.replica_database, ["history"]),
            files_below(self.source_location),
            files_below(self.target),
        )


@pytest.fixture
def scene(local_runtime, source_catalog, replica_catalog, tmp_path, unique):
    database = f"icebad_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    writer.create_namespace(database)
    table = writer.create_table(f"{database}.history", schema=SCHEMA, partition_spec=SPEC)
    table.append(rows([1, 2, 3], ["eu", "us", "eu"]))
    target = (tmp_path / "replica" / "history").as_uri()
    document = config_document(
        local_runtime,
        [
            {
                "source-table": {"database-name": database, "table-name": "history"},
                "replica-table": {"database-name": f"{database}_dr", "table-location": target},
            }
        ],
    )
    config = tmp_path / "replication.yml"
    config.write_text(yaml.safe_dump(document, sort_keys=False))
    (first,) = Replicator(document, event_ids=event_ids("ferry-20261125t120000000z")).run()
    assert first.status == "SUCCEEDED", first
    table.append(rows([4, 5], ["ap", "us"]))  # a version the replica lacks
    return Scene(
        writer, database, table.location(), target, config, document,
        source_catalog, replica_catalog, tmp_path / "home",
    )  # fmt: skip


def ferry(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ},
    )


def refused_line(result: subprocess.CompletedProcess) -> str:
    """The one line of a table refused once its replication started: exit code 1, nothing
    on stderr, one ``✗`` line on stdout."""
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr == "", result.stderr
    assert "Traceback" not in result.stdout
    failures = [line for line in result.stdout.splitlines() if line.startswith("✗")]
    assert len(failures) == 1, result.stdout
    return failures[0]


def garbage(size: int = 512) -> bytes:
    return random.Random(7).randbytes(size)


def _path(uri: str) -> Path:
    return Path(uri.removeprefix("file://").removeprefix("file:"))


def _new_metadata(scene: Scene, content: bytes) -> str:
    location = f"{scene.source_location}/metadata/99999-broken.metadata.json"
    _path(location).write_bytes(content)
    scene.point_source_at(location)
    return location


def _source_metadata_location(scene: Scene) -> str:
    return scene.source.get_table(scene.database, "history").parameters[METADATA_LOCATION]


def _current_list(scene: Scene) -> str:
    metadata = scene.source_metadata()
    return metadata.snapshot_by_id(metadata.current_snapshot_id).manifest_list


def _new_manifest(scene: Scene) -> str:
    """The manifest the newest append wrote (the replica has no copy of it)."""
    table = scene.writer.load_table(f"{scene.database}.history")
    snapshot = table.current_snapshot()
    [manifest] = [
        m for m in snapshot.manifests(table.io) if m.added_snapshot_id == snapshot.snapshot_id
    ]
    return manifest.manifest_path


def _new_data_file(scene: Scene) -> str:
    """A data file the newest append wrote (the replica has no copy of it)."""
    table = scene.writer.load_table(f"{scene.database}.history")
    snapshot = table.current_snapshot()

    def files(snapshot_id: int) -> set[str]:
        return {t.file.file_path for t in table.scan(snapshot_id=snapshot_id).plan_files()}

    return sorted(files(snapshot.snapshot_id) - files(snapshot.parent_snapshot_id))[0]


def _truncate(location: str) -> str:
    path = _path(location)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return location


def _replace(location: str, content: bytes) -> str:
    _path(location).write_bytes(content)
    return location


def _unlink(location: str) -> str:
    _path(location).unlink()
    return location


# Each case breaks the scene and returns (the file the line names, the table it names, why).
BROKEN = {
    "metadata-random-bytes": lambda s: (_new_metadata(s, garbage()), "source", "not JSON"),
    "metadata-truncated": lambda s: (
        _new_metadata(s, _path(_source_metadata_location(s)).read_bytes()[:300]),
        "source",
        "not JSON",
    ),
    "metadata-json-not-iceberg": lambda s: (
        _new_metadata(s, b'{"hello": "world"}'),
        "source",
        "JSON, but not Iceberg table metadata",
    ),
    "manifest-list-missing": lambda s: (_unlink(_current_list(s)), "source", "no such file"),
    "manifest-list-truncated": lambda s: (_truncate(_current_list(s)), "source", "not an Avro"),
    "manifest-list-garbage": lambda s: (
        _replace(_current_list(s), garbage()),
        "source",
        "not an Avro manifest list",
    ),
    "manifest-missing": lambda s: (_unlink(_new_manifest(s)), "source", "no such file"),
    "manifest-truncated": lambda s: (_truncate(_new_manifest(s)), "source", "not an Avro"),
    "manifest-garbage": lambda s: (
        _replace(_new_manifest(s), garbage()),
        "source",
        "not an Avro manifest",
    ),
    "location-missing-file": lambda s: (
        _point(s, f"{s.source_location}/metadata/99999-missing.metadata.json"),
        "source",
        "no such file",
    ),
    "location-a-folder": lambda s: (
        _point(s, f"{s.source_location}/metadata"),
        "source",
        "it is a folder, not a file",
    ),
    "location-no-such-bucket": lambda s: (
        _point(s, f"s3://ferry-no-bucket-{s.database[-8:]}/history/metadata/1.metadata.json"),
        "source",
        f"cannot be read: no such bucket ferry-no-bucket-{s.database[-8:]}",
    ),
    "location-relative": lambda s: (
        _point(s, "metadata/00001-relative.metadata.json"),
        "source",
        "is a relative path",
    ),
    "location-a-parquet-file": lambda s: (
        _point(s, _new_data_file(s)),
        "source",
        "not JSON",
    ),
    "data-file-missing": lambda s: (_unlink(_new_data_file(s)), "source", "is missing"),
    "replica-metadata-missing": lambda s: (
        _unlink(metadata_location(s.replica.get_table(s.replica_database, "history"))),
        "replica",
        "no such file",
    ),
}


def _point(scene: Scene, location: str) -> str:
    scene.point_source_at(location)
    return location


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_iceberg_metadata_is_one_line_naming_the_table_and_the_file(scene, case):
    location, side, why = BROKEN[case](scene)
    name = (
        f"source Iceberg table {scene.database}.history"
        if side == "source"
        else f"replica Iceberg table {scene.replica_database}.history"
    )
    if case == "location-relative":
        name = f"Iceberg table {scene.database}.history"
    before = scene.state()

    for command in (["plan"], ["replicate", "--home", str(scene.home)]):
        line = refused_line(ferry(command[0], str(scene.config), *command[1:]))

        assert "IcebergMetadataError: " in line, line
        assert name in line and location in line and why in line, line
        assert "not under its location" not in line
        assert scene.state() == before


def test_broken_metadata_is_not_retried_and_changes_nothing(scene):
    """Through the state machine's own definition: Plan fails once (its Retry does not take
    ``IcebergMetadataError``), Abort runs, the replica keeps its version."""
    location = _unlink(_current_list(scene))
    before = scene.state()

    (outcome,) = Replicator(scene.document).run()

    assert outcome.status == "FAILED"
    assert outcome.error_type == "IcebergMetadataError"
    assert location in outcome.error and "\n" not in outcome.error
    assert outcome.states.count("Plan") == 1, outcome.states
    assert scene.state() == before


def test_a_commit_another_writer_made_to_the_replica_is_kept(scene, local_runtime, tmp_path):
    """An engine appends to the replica (or the replica was promoted after a failover): the
    next run refuses in one line and ledgers nothing, and housekeeping past the grace period
    leaves that writer's data file, manifest and manifest list."""
    state = ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))
    replicator = Replicator(
        scene.document, event_ids=event_ids("ferry-20261125t130000000z"), state=state
    )
    (caught_up,) = replicator.run()
    assert caught_up.status == "SUCCEEDED", caught_up
    # The source expires its first snapshot: Ferry's commit ledgers the replica's manifest
    # list of it (only the superseded replica metadata referenced it).
    source = scene.writer.load_table(f"{scene.database}.history")
    first_snapshot = source.metadata.snapshots[0].snapshot_id
    superseded = metadata_location(scene.replica.get_table(scene.replica_database, "history"))
    source.maintenance.expire_snapshots().by_id(first_snapshot).commit()
    (expired,) = replicator.run()
    assert expired.status == "SUCCEEDED", expired
    ours = scene.replica.get_table(scene.replica_database, "history")
    retired = CurrentReferences(superseded).paths - CurrentReferences(metadata_location(ours)).paths
    assert retired
    assert ours.parameters[COMMITTED_METADATA_LOCATION] == metadata_location(ours)
    before_theirs = set(files_below(scene.target))
    theirs = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{scene.replica_database}.history"
    )
    theirs.append(rows([100], ["eu"]))
    their_rows = read_rows(theirs)
    their_files = set(files_below(scene.target)) - before_theirs
    assert len(their_files) >= 4  # data file, manifest, manifest list, metadata.json
    moved = metadata_location(scene.replica.get_table(scene.replica_database, "history"))
    scene.writer.load_table(f"{scene.database}.history").append(rows([6], ["us"]))
    before = scene.state()

    (refused,) = replicator.run()
    replicated = refused_line(ferry("replicate", str(scene.config), "--home", str(scene.home)))
    planned = refused_line(ferry("plan", str(scene.config)))

    assert refused.status == "FAILED"
    assert refused.error_type == "ReplicaGuardError"
    for said in (refused.error, replicated, planned):
        assert (
            f"replica {scene.replica_database}.history was committed to by another writer" in said
        )
        assert moved in said and metadata_location(ours) in said
    assert scene.state() == before

    done = replicator.housekeeping(clock=at(NOW + timedelta(days=30)))

    assert done.status == "SUCCEEDED", (done.error, done.cause)
    # Nothing of a replica another writer committed to: neither their files nor the ones
    # Ferry ledgered before (their metadata is no longer Ferry's to reason about).
    assert done.output["housekeeping"]["deleted"] == 0
    assert their_files <= set(files_below(scene.target))
    assert retired <= {canonical(p) for p in files_below(scene.target)}
    assert scene.state() == before
    replica = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{scene.replica_database}.history"
    )
    assert read_rows(replica) == their_rows


def test_a_source_switched_from_iceberg_to_a_plain_hive_table_is_refused(scene):
    table = scene.source.get_table(scene.database, "history")
    plain = {
        k: v
        for k, v in table.parameters.items()
        if k not in (TABLE_TYPE, METADATA_LOCATION, PREVIOUS_METADATA_LOCATION)
    }
    scene.source.alter_table(replace(table, parameters=plain))
    before = scene.state()

    line = refused_line(ferry("replicate", str(scene.config), "--home", str(scene.home)))

    assert line.endswith(
        f"ReplicaGuardError: replica {scene.replica_database}.history is an Iceberg table, and "
        f"its source {scene.database}.history is not (any more): not replacing it (drop it, "
        "or replicate to another table)"
    )
    assert scene.state() == before


def test_a_source_switched_from_a_plain_hive_table_to_iceberg_is_refused(
    local_runtime, sample, source_catalog, replica_catalog, write_config, tmp_path
):
    target = (tmp_path / "replica" / "orders").as_uri()
    document = config_document(
        local_runtime,
        [
            {
                "source-table": {"database-name": sample.database, "table-name": "orders"},
                "replica-table": {
                    "database-name": f"{sample.database}_dr",
                    "table-location": target,
                },
            }
        ],
    )
    config = write_config(document)
    (first,) = Replicator(document).run()
    assert first.status == "SUCCEEDED", first
    table = source_catalog.get_table(sample.database, "orders")
    iceberg = {
        **table.parameters,
        TABLE_TYPE: "ICEBERG",
        METADATA_LOCATION: f"{table.location}/metadata/00000-a.metadata.json",
    }
    source_catalog.alter_table(replace(table, parameters=iceberg))

    def state():
        return (
            catalog_state(source_catalog, sample.database, ["orders"]),
            catalog_state(replica_catalog, f"{sample.database}_dr", ["orders"]),
            files_below(sample.orders.location),
            files_below(target),
        )

    before = state()

    line = refused_line(ferry("replicate", str(config), "--home", str(tmp_path / "home")))

    assert line.endswith(
        f"ReplicaGuardError: replica {sample.database}_dr.orders is not an Iceberg table, and "
        f"its source {sample.database}.orders is: not replacing it (drop it, or replicate to "
        "another table)"
    )
    assert state() == before


def test_another_writers_snapshot_is_refused_on_a_replica_from_before_the_recorded_location(
    scene, local_runtime
):
    """A replica Ferry committed before it recorded ``ferry.iceberg.metadata.location``: the
    replica's own metadata tells another writer's snapshot (a manifest list Ferry did not
    name)."""
    entry = scene.replica.get_table(scene.replica_database, "history")
    older = {k: v for k, v in entry.parameters.items() if k != COMMITTED_METADATA_LOCATION}
    scene.replica.alter_table(replace(entry, parameters=older))
    theirs = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(
        f"{scene.replica_database}.history"
    )
    theirs.append(rows([100], ["eu"]))
    snapshot = theirs.current_snapshot()
    before = scene.state()

    line = refused_line(ferry("replicate", str(scene.config), "--home", str(scene.home)))

    assert line.endswith(
        f"ReplicaGuardError: replica {scene.replica_database}.history has snapshot "
        f"{snapshot.snapshot_id} that Ferry did not write (its manifest list "
        f"{snapshot.manifest_list}): another writer committed to it; Ferry will not replicate "
        "over that commit (drop the replica, or replicate to another table)"
    ), line
    assert scene.state() == before


def test_another_writers_commit_between_plan_and_commit_is_not_committed_over(scene, local_runtime):
    """The other writer commits while the run copies: Commit refuses (the replica's event is
    still Ferry's, its metadata is not), and Abort removes only the run's own metadata files."""
    hive = HiveCatalog("replica", uri=local_runtime.replica_uri)
    seen: dict[str, object] = {}

    class AppendAtCommit:
        def state_entered(self, table, state):
            if state == "Commit" and not seen:
                theirs = hive.load_table(f"{scene.replica_database}.history")
                ferrys = set(files_below(scene.target))
                theirs.append(rows([100], ["eu"]))
                seen["rows"] = read_rows(theirs)
                seen["metadata"] = theirs.metadata_location
                seen["files"] = set(files_below(scene.target)) - ferrys

    replicator = Replicator(
        scene.document, event_ids=event_ids("ferry-20261125t140000000z"), observer=AppendAtCommit()
    )

    (outcome,) = replicator.run()

    assert outcome.status == "FAILED", outcome
    assert outcome.error_type == "ReplicaChangedError", outcome
    assert f"another writer committed Iceberg metadata {seen['metadata']}" in outcome.error
    entry = scene.replica.get_table(scene.replica_database, "history")
    assert metadata_location(entry) == seen["metadata"]
    assert read_rows(hive.load_table(f"{scene.replica_database}.history")) == seen["rows"]
    # Their files, and every file their metadata references, are still there.
    assert seen["files"] and seen["files"] <= set(files_below(scene.target))
    there = {canonical(p) for p in files_below(scene.target)}
    assert CurrentReferences(seen["metadata"]).paths <= there
