"""Failback of an Iceberg table on the real local Hive metastores: a table replicated by
``ferry replicate``'s driver, writers appending to the promoted replica with pyiceberg's
``HiveCatalog`` (as an engine in DR would), and ``fail_back_iceberg`` bringing those
snapshots home with their ids; afterwards the forward replication has nothing to do.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.types import StringType

from ferry.config import load_config
from ferry.core import faults
from ferry.core.errors import FailoverError
from ferry.failover import Prefer
from ferry.iceberg.failback_snapshots import fail_back_iceberg
from ferry.iceberg.lineage import lineage
from ferry.iceberg.pipeline import CurrentReferences
from ferry.iceberg.recognise import COMMITTED_METADATA_LOCATION, metadata_location
from ferry.planning import source_versions
from ferry.planning.source_versions import SourceVersion
from ferry.replicas.replica import SOURCE_VERSION
from tests.conftest import NOW
from tests.helpers import Replicator, config_document
from tests.iceberg_catalogs import files_naming, glue_to_hive, hive_to_glue
from tests.iceberg_tables import (
    add_position_delete,
    create_history_table,
    metadata_files_below,
    read_rows,
    rows,
)

pytestmark = pytest.mark.integration


def record_source(snapshot_id: int | None, snapshot_ms: int | None) -> dict[str, str]:
    """What a forward Commit records of a source at this snapshot (the failback command's)."""
    version = str(source_versions.of_iceberg(snapshot_id, snapshot_ms))
    return source_versions.recorded_parameters(version, NOW)


class Sides:
    """A source Iceberg table replicated once, and pyiceberg's writers on both sides."""

    def __init__(self, runtime, source_catalog, replica_catalog, tmp_path, unique, history):
        self.database = f"iceberg_{unique}"
        self.source_catalog, self.replica_catalog = source_catalog, replica_catalog
        self.source_writer = HiveCatalog(
            "source", uri=runtime.source_uri, warehouse=(tmp_path / "source").as_uri()
        )
        self.source_writer.create_namespace(
            self.database, {"location": (tmp_path / "source" / self.database).as_uri()}
        )
        if history:
            create_history_table(self.source_writer, self.source_id)
        else:
            table = self.source_writer.create_table(self.source_id, schema=rows([1], ["eu"]).schema)
            table.append(rows([1, 2], ["eu", "us"]))
            table.append(rows([3], ["ap"]))
        self.target = (tmp_path / "replica" / "history").as_uri()
        document = config_document(
            runtime,
            [
                {
                    "source-table": {"database-name": self.database, "table-name": "history"},
                    "replica-table": {
                        "database-name": f"{self.database}_dr",
                        "table-location": self.target,
                    },
                }
            ],
        )
        self.replicator = Replicator(document)
        (self.replication,) = load_config(self.replicator.config_path).table_replications
        self.replica_writer = HiveCatalog("replica", uri=runtime.replica_uri)
        (outcome,) = self.replicator.run()
        assert outcome.status == "SUCCEEDED", outcome
        #: What ``ferry failover`` records: the replica's current snapshot.
        self.held = self.replica().current_snapshot().snapshot_id

    @property
    def source_id(self) -> str:
        return f"{self.database}.history"

    def source(self):
        return self.source_writer.load_table(self.source_id)

    def replica(self):
        return self.replica_writer.load_table(f"{self.database}_dr.history")

    def entries(self) -> tuple[dict, dict]:
        """Both catalog entries' parameters (without what the metastore maintains)."""
        return tuple(
            {k: v for k, v in t.parameters.items() if k != "transient_lastDdlTime"}
            for t in (
                self.source_catalog.get_table(self.database, "history"),
                self.replica_catalog.get_table(f"{self.database}_dr", "history"),
            )
        )

    def fail_back(self, prefer=None, dry_run=False):
        return fail_back_iceberg(
            self.replication,
            self.held,
            prefer=prefer,
            dry_run=dry_run,
            source_catalog=self.source_catalog,
            replica_catalog=self.replica_catalog,
            event_id="ferry-20261126t200000000z-failback",
            record_source=record_source,
        )


@pytest.fixture
def sides(local_runtime, source_catalog, replica_catalog, tmp_path, unique):
    return Sides(local_runtime, source_catalog, replica_catalog, tmp_path, unique, history=False)


def append_in_dr(
    sides: Sides, ids: list[int], regions: list[str], amounts: list[float] | None = None
) -> int:
    """A writer's append to the promoted replica; its snapshot id."""
    table = sides.replica()
    data = rows(ids, regions)
    if amounts is not None:  # the history table's schema has an amount
        data = data.append_column("amount", pa.array(amounts, pa.float64()))
    table.append(data)
    return table.current_snapshot().snapshot_id


def test_dr_appends_come_home_with_their_snapshot_ids_and_the_forward_run_has_nothing_to_do(
    local_runtime, source_catalog, replica_catalog, tmp_path, unique
):
    sides = Sides(local_runtime, source_catalog, replica_catalog, tmp_path, unique, history=True)
    first_id = append_in_dr(sides, [20, 21, 23], ["eu", "us", "eu"], amounts=[1.0, 2.0, 4.0])
    second_id = append_in_dr(sides, [22], ["ap"], amounts=[3.0])
    dr = sides.replica()
    dr.delete("id = 23")  # copy-on-write: the eu file is rewritten with 20 alone
    third_id = sides.replica().current_snapshot().snapshot_id
    fourth_id = append_in_dr(sides, [24], ["sa"], amounts=[5.0])
    # Merge-on-read: a position delete file naming the replica's data file.
    fifth_id = add_position_delete(sides.replica(), "sa", [0]).current_snapshot().snapshot_id
    new = (first_id, second_id, third_id, fourth_id, fifth_id)

    result = sides.fail_back()

    assert result.written_home == result.replica_snapshots == new
    assert (result.source_snapshots, result.conflict) == ((), False)
    # The appends' data files (eu, us; ap; sa) and the delete's rewritten eu file, nothing
    # else (the position delete file is rewritten, its rows naming the source's file).
    assert result.files_copied == 5
    source, replica = sides.source(), sides.replica()
    assert lineage(source.metadata) == lineage(replica.metadata)
    assert source.current_snapshot().snapshot_id == fifth_id
    assert read_rows(source) == read_rows(replica)
    ids = {row["id"] for row in read_rows(source)}
    assert {20, 21, 22} <= ids and not {23, 24} & ids
    for snapshot in (sides.held, *new):  # time travel by id, on both sides
        assert read_rows(source, snapshot) == read_rows(replica, snapshot)
    for snapshot in replica.metadata.snapshots:
        home = source.metadata.snapshot_by_id(snapshot.snapshot_id)
        assert (home.sequence_number, home.timestamp_ms) == (
            snapshot.sequence_number,
            snapshot.timestamp_ms,
        )
    # Every file the source names is its own: nothing under the replica's location.
    replica_path = sides.target.removeprefix("file://")
    assert all(
        replica_path.encode() not in p.read_bytes()
        for p in metadata_files_below(tmp_path / "source")
    )
    home_entry, replica_entry = sides.entries()
    assert not [k for k in home_entry if k.startswith("ferry.")]  # it stays a source
    assert replica_entry[COMMITTED_METADATA_LOCATION] == metadata_location(
        replica_catalog.get_table(f"{sides.database}_dr", "history")
    )
    # What the replica says it holds of the source (freshness, ``ferry status``).
    assert SourceVersion.parse(replica_entry[SOURCE_VERSION]).snapshot_id == fifth_id

    # The forward replication finds the sides equal.
    (forward,) = sides.replicator.run()

    assert forward.status == "UNCHANGED", forward

    # Run again, the failback writes nothing.
    before = metadata_files_below(tmp_path / "source")
    assert before
    again = sides.fail_back()

    assert (again.written_home, again.files_copied) == ((), 0)
    assert again.metadata_location == result.metadata_location
    assert metadata_files_below(tmp_path / "source") == before
    assert "home already" in again.summary


def test_nothing_changed_or_only_the_source_changed_writes_nothing_home(sides):
    entries = sides.entries()

    nothing = sides.fail_back()

    assert (nothing.written_home, nothing.conflict, nothing.files_copied) == ((), False, 0)
    assert "neither side changed" in nothing.summary
    assert sides.entries() == entries

    sides.source().append(rows([30], ["eu"]))
    source_new = sides.source().current_snapshot().snapshot_id
    entries = sides.entries()

    only_source = sides.fail_back()

    assert only_source.source_snapshots == (source_new,)
    assert (only_source.written_home, only_source.conflict) == ((), False)
    assert "only the source changed" in only_source.summary
    assert sides.entries() == entries
    (forward,) = sides.replicator.run()  # the forward direction brings it
    assert forward.status == "SUCCEEDED", forward
    assert read_rows(sides.replica()) == read_rows(sides.source())


def test_a_dry_run_says_what_would_go_home_and_changes_nothing(sides, tmp_path):
    dr = append_in_dr(sides, [40, 41], ["eu", "us"])
    entries, files = sides.entries(), metadata_files_below(tmp_path / "source")
    assert files

    planned = sides.fail_back(dry_run=True)

    assert (planned.dry_run, planned.written_home, planned.files_copied) == (True, (dr,), 1)
    assert planned.bytes_copied > 0
    assert "would write 1 snapshot(s) home" in planned.summary
    assert sides.entries() == entries
    assert metadata_files_below(tmp_path / "source") == files


def test_changes_on_both_sides_are_refused_in_one_line_and_nothing_changes(sides, tmp_path):
    dr = append_in_dr(sides, [50], ["eu"])
    sides.source().append(rows([51], ["us"]))
    source_new = sides.source().current_snapshot().snapshot_id
    entries, files = sides.entries(), metadata_files_below(tmp_path / "source")
    assert files

    with pytest.raises(FailoverError) as refused:
        sides.fail_back()

    message = str(refused.value)
    assert "\n" not in message
    assert f"{sides.database}.history" in message
    assert str(dr) in message and str(source_new) in message
    assert "--prefer" in message
    assert sides.entries() == entries
    assert metadata_files_below(tmp_path / "source") == files


def test_prefer_replica_writes_dr_home_over_the_source_own_changes(sides):
    dr = append_in_dr(sides, [60, 61], ["eu", "us"])
    sides.source().append(rows([62], ["ap"]))
    source_new = sides.source().current_snapshot().snapshot_id
    held_rows = read_rows(sides.source(), sides.held)

    result = sides.fail_back(prefer=Prefer.REPLICA)

    assert (result.conflict, result.written_home) == (True, (dr,))
    assert "replica wins" in result.summary
    source, replica = sides.source(), sides.replica()
    assert source.current_snapshot().snapshot_id == dr
    assert (
        read_rows(source)
        == read_rows(replica)
        == sorted(
            held_rows + [{"id": 60, "region": "eu"}, {"id": 61, "region": "us"}],
            key=lambda row: row["id"],
        )
    )
    # The source's own snapshot is no longer current; its metadata log keeps the file.
    assert source.metadata.snapshot_by_id(source_new) is None
    assert len(source.metadata.metadata_log) >= 1
    (forward,) = sides.replicator.run()
    assert forward.status == "UNCHANGED", forward


def test_prefer_source_drops_dr_changes_and_the_forward_run_brings_the_source(sides):
    dr = append_in_dr(sides, [70], ["eu"])
    sides.source().append(rows([71], ["us"]))
    source_entry, _ = sides.entries()

    result = sides.fail_back(prefer=Prefer.SOURCE)

    assert (result.conflict, result.dropped, result.written_home) == (True, (dr,), ())
    assert "dropped" in result.summary
    assert sides.entries()[0] == source_entry  # nothing written home
    assert sides.replica().current_snapshot().snapshot_id == sides.held
    (forward,) = sides.replicator.run()
    assert forward.status == "SUCCEEDED", forward
    assert read_rows(sides.replica()) == read_rows(sides.source())
    assert 70 not in {row["id"] for row in read_rows(sides.replica())}


def test_a_failback_killed_between_its_copies_and_its_commit_converges_when_run_again(
    sides, tmp_path
):
    dr = append_in_dr(sides, [80, 81], ["eu", "us"])
    entries = sides.entries()

    with faults.armed(faults.Fault("failback.iceberg.commit")), pytest.raises(faults.InjectedFault):
        sides.fail_back()

    assert sides.entries() == entries  # the catalog did not move
    written = metadata_files_below(tmp_path / "source")
    assert written

    result = sides.fail_back()

    assert result.written_home == (dr,)
    assert result.files_copied == 0  # the killed run's copies are complete: reused
    # The re-run reused every name: only the files it wrote are new, none twice.
    assert metadata_files_below(tmp_path / "source") == written
    assert sides.source().current_snapshot().snapshot_id == dr
    assert read_rows(sides.source()) == read_rows(sides.replica())
    (forward,) = sides.replicator.run()
    assert forward.status == "UNCHANGED", forward


@pytest.mark.parametrize(
    "build", [hive_to_glue, glue_to_hive], ids=["hive-home-glue-dr", "glue-home-hive-dr"]
)
def test_dr_appends_come_home_across_catalog_kinds_and_s3(
    local_runtime, aws, s3_properties, tmp_path, unique, build
):
    case = build(local_runtime, aws, s3_properties, tmp_path, unique)
    replicator = Replicator(case.document)
    (outcome,) = replicator.run()
    assert outcome.status == "SUCCEEDED", outcome
    (replication,) = load_config(replicator.config_path).table_replications
    dr = case.reader.load_table(case.replica_identifier)
    held = dr.current_snapshot().snapshot_id
    dr.append(rows([90, 91], ["eu", "us"]).append_column("amount", pa.array([1.0, 2.0])))
    appended = case.reader.load_table(case.replica_identifier).current_snapshot().snapshot_id

    result = fail_back_iceberg(
        replication,
        held,
        prefer=None,
        dry_run=False,
        source_catalog=case.source,
        replica_catalog=case.replica,
        event_id="ferry-20261126t200000000z-failback",
        record_source=record_source,
    )

    assert (result.written_home, result.files_copied) == ((appended,), 2)
    home = case.writer.load_table(case.source_identifier)
    dr = case.reader.load_table(case.replica_identifier)
    assert home.current_snapshot().snapshot_id == appended
    for snapshot in (None, held, appended):
        assert read_rows(home, snapshot) == read_rows(dr, snapshot)
    assert files_naming(case.source_location, case.target) == []
    entry = case.source.get_table(case.source_database, "history")
    assert not [k for k in entry.parameters if k.startswith("ferry.")]
    registered = case.replica.get_table(case.replica_database, "history")
    assert SourceVersion.parse(registered.parameters[SOURCE_VERSION]).snapshot_id == appended

    (forward,) = replicator.run()

    # Nothing to copy. (pyiceberg's GlueCatalog drops a table's Owner and Description when
    # it commits: a forward run after a writer's commit to a Glue replica puts them back.)
    assert forward.status != "FAILED" and (forward.files, forward.bytes) == (0, 0), forward
    after = case.replica.get_table(case.replica_database, "history")
    assert metadata_location(after) == metadata_location(registered)


def test_a_source_writing_outside_its_location_keeps_its_folders_after_a_failback(
    local_runtime, source_catalog, replica_catalog, tmp_path, unique
):
    location, data, meta = (tmp_path / name for name in ("table", "lake-data", "lake-meta"))
    database = f"layout_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri)
    writer.create_namespace(database)
    properties = {"write.data.path": data.as_uri(), "write.metadata.path": meta.as_uri()}
    table = writer.create_table(
        f"{database}.history",
        schema=rows([1], ["eu"]).schema,
        location=location.as_uri(),
        properties=properties,
    )
    table.append(rows([1, 2], ["eu", "us"]))
    target = (tmp_path / "replica" / "history").as_uri()
    replicator = Replicator(
        config_document(
            local_runtime,
            [
                {
                    "source-table": {"database-name": database, "table-name": "history"},
                    "replica-table": {"database-name": f"{database}_dr", "table-location": target},
                }
            ],
        )
    )
    (outcome,) = replicator.run()
    assert outcome.status == "SUCCEEDED", outcome
    (replication,) = load_config(replicator.config_path).table_replications
    dr = HiveCatalog("replica", uri=local_runtime.replica_uri).load_table(f"{database}_dr.history")
    held = dr.current_snapshot().snapshot_id
    dr.append(rows([3], ["ap"]))

    result = fail_back_iceberg(
        replication,
        held,
        prefer=None,
        dry_run=False,
        source_catalog=source_catalog,
        replica_catalog=replica_catalog,
        event_id="ferry-20261126t200000000z-failback",
    )

    assert len(result.written_home) == 1
    home = writer.load_table(f"{database}.history")
    assert {k: home.properties.get(k) for k in properties} == properties
    assert read_rows(home) == [
        {"id": 1, "region": "eu"},
        {"id": 2, "region": "us"},
        {"id": 3, "region": "ap"},
    ]
    (forward,) = replicator.run()
    assert forward.status == "UNCHANGED", forward
    # The source's writers still write to its own folders.
    home.append(rows([4], ["us"]))
    added = writer.load_table(f"{database}.history").current_snapshot()
    assert str(meta) in added.manifest_list


def test_a_source_commit_while_the_failback_runs_is_not_overwritten(sides):
    append_in_dr(sides, [100], ["eu"])
    replica_entry = sides.entries()[1]
    pause = faults.Fault("failback.iceberg.commit", action="hang", seconds=8)
    failed: list[BaseException] = []

    def fail_back() -> None:
        try:
            sides.fail_back()
        except BaseException as error:  # noqa: BLE001 - the test reads it
            failed.append(error)

    with faults.armed(pause):
        running = threading.Thread(target=fail_back)
        running.start()
        deadline = time.monotonic() + 120
        while pause.hits == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pause.hits == 1
        sides.source().append(rows([101], ["us"]))  # a writer at the source, meanwhile
        mine = sides.source().current_snapshot().snapshot_id
        running.join()

    (error,) = failed
    assert isinstance(error, FailoverError) and "\n" not in str(error)
    assert "committed to while the failback ran" in str(error)
    assert sides.source().current_snapshot().snapshot_id == mine
    assert {row["id"] for row in read_rows(sides.source())} >= {101}
    assert 100 not in {row["id"] for row in read_rows(sides.source())}
    assert sides.entries()[1] == replica_entry


def test_a_failover_snapshot_neither_history_reaches_is_refused_and_changes_nothing(sides):
    append_in_dr(sides, [110], ["eu"])
    entries = sides.entries()
    sides.held = 1234567890123

    with pytest.raises(FailoverError) as refused:
        sides.fail_back()

    assert str(refused.value) == (
        f"Iceberg table {sides.database}.history: cannot fail back: the replica's history no "
        "longer contains snapshot 1234567890123, held at the failover"
    )
    assert sides.entries() == entries


KILLED_FAILBACK = """
from ferry.core import faults
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.config import load_config
from ferry.iceberg.failback_snapshots import fail_back_iceberg

faults.arm(faults.Fault({point!r}, action="kill"))
(replication,) = load_config({config!r}).table_replications
fail_back_iceberg(
    replication,
    {held},
    prefer=None,
    dry_run=False,
    source_catalog=HiveMetastoreCatalog("onprem", [{source!r}]),
    replica_catalog=HiveMetastoreCatalog("dr", [{replica!r}]),
    event_id="ferry-20261126t200000000z-failback",
)
"""


@pytest.mark.parametrize(
    "point",
    [
        "commit.metadata",  # manifests and lists written, the metadata.json not
        "failback.iceberg.commit",  # every file written, the source catalog not moved
        "failback.iceberg.recorded",  # the source moved, the replica's record not
    ],
)
def test_a_failback_process_killed_part_way_converges_when_run_again(
    sides, local_runtime, tmp_path, point
):
    dr = append_in_dr(sides, [120, 121], ["eu", "us"])
    script = KILLED_FAILBACK.format(
        point=point,
        config=str(sides.replicator.config_path),
        held=sides.held,
        source=local_runtime.source_uri,
        replica=local_runtime.replica_uri,
    )

    killed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )

    assert killed.returncode == -signal.SIGKILL, killed.stderr

    result = sides.fail_back()

    assert sides.source().current_snapshot().snapshot_id == dr
    if point == "failback.iceberg.recorded":
        assert result.written_home == ()  # home already: only the record was missing
    else:
        assert result.written_home == (dr,)
    assert read_rows(sides.source()) == read_rows(sides.replica())
    # No orphan: every file below the source's location is one its metadata references.
    current = metadata_location(sides.source_catalog.get_table(sides.database, "history"))
    references = CurrentReferences(current)
    below = [p.as_uri() for p in (tmp_path / "source").rglob("*") if p.is_file()]
    assert below and [p for p in below if p not in references] == []
    (forward,) = sides.replicator.run()
    assert forward.status == "UNCHANGED", forward


def test_a_column_added_in_dr_comes_home_in_the_source_entry(sides):
    table = sides.replica()
    with table.update_schema() as update:
        update.add_column("note", StringType())
    table = sides.replica()
    table.append(rows([130], ["eu"]).append_column("note", pa.array(["from dr"])))

    sides.fail_back()

    source = sides.source()
    assert "note" in source.schema().column_names
    assert read_rows(source) == read_rows(sides.replica())
    entry = sides.source_catalog.get_table(sides.database, "history")
    assert "note" in [column.name for column in entry.storage.columns]
    (forward,) = sides.replicator.run()
    assert forward.status == "UNCHANGED", forward
