"""Helpers the tests share: config documents, and the observable state of a replica."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from ferry.catalog import Catalog
from ferry.storage import file_systems, fs
from ferry.storage.fs import read_bytes  # noqa: F401 - the tests' reader of target bytes

# Parameters the metastore rewrites by itself; comparisons ignore them.
VOLATILE = {"transient_lastDdlTime", "numFiles", "totalSize", "COLUMN_STATS_ACCURATE"}


def at(moment):
    """A clock that always reads ``moment``."""
    return lambda: moment


def config_document(
    runtime, replications: list[dict[str, Any]], replica: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "source-catalog": {"name": "onprem", "hive-metastore-uris": runtime.source_uri},
        "replica-catalog": replica or {"name": "dr", "hive-metastore-uris": runtime.replica_uri},
        **extra,
        "table-replications": replications,
    }


def one_replication(database: str, table: str, replica_location: str) -> list[dict[str, Any]]:
    """A config's ``table-replications`` of one table, ``database.table`` to the replica
    database ``<database>_dr`` at ``replica_location``."""
    return [
        {
            "source-table": {"database-name": database, "table-name": table},
            "replica-table": {
                "database-name": f"{database}_dr",
                "table-location": replica_location,
            },
        }
    ]


def catalog_state(catalog: Catalog, database: str, tables: list[str]) -> dict[str, Any]:
    """Every table's and partition's location and parameters, for before/after comparisons."""
    state: dict[str, Any] = {"database": catalog.get_database(database) is not None}
    for name in tables:
        table = catalog.get_table(database, name)
        if table is None:
            state[name] = None
            continue
        state[name] = {
            "location": table.location,
            "type": table.table_type,
            "parameters": _stable(table.parameters),
            "columns": table.storage.columns,
            "partitions": {
                p.values: (p.location, _stable(p.parameters))
                for p in catalog.list_partitions(table)
            },
        }
    return state


def files_below(location: str) -> dict[str, int]:
    return {entry.uri: entry.size for entry in fs.list_files(location)}


def _stable(parameters) -> dict[str, str]:
    return {k: v for k, v in parameters.items() if k not in VOLATILE}


class Replicator:
    """``ferry replicate``'s driver as tests use it: a config document, a fixed clock.

    Runs the state machine's definition in this process (``ferry.commands.in_process``) with Spark in
    local mode, the plan and manifest under a fresh work folder.
    """

    def __init__(
        self, document: dict[str, Any], *, clock=None, event_ids=None, observer=None, state=None
    ):
        import tempfile
        from pathlib import Path

        import yaml

        from tests.conftest import fixed_clock

        self.folder = Path(tempfile.mkdtemp(prefix="ferry-test-"))
        self.config_path = self.folder / "replication.yml"
        self.config_path.write_text(yaml.safe_dump(document, sort_keys=False))
        self.clock = clock or fixed_clock
        self.event_ids = event_ids
        self.observer = observer
        #: Replica locks and the snapshot ledger (``ferry.lifecycle.replica_state.ReplicaState``), if any.
        self.state = state
        self.execution = None

    @property
    def work_uri(self) -> str:
        return fs.local_uri(self.folder / "work")

    def context(self, clock=None):
        """What the states share (``ferry.states.context``), on this replicator's work folder."""
        from ferry.states.context import StateContext

        ids = self.event_ids
        return StateContext(
            self.work_uri,
            clock=clock or self.clock,
            event_ids=(lambda started: ids()) if ids else None,
            state=self.state,
        )

    def run(self, tables: list[str] | None = None):
        from ferry.commands.in_process import InProcessDriver
        from ferry.copying.spark_job import LocalSpark

        outcomes = _Collect(self.observer)
        driver = InProcessDriver(
            self.context(), LocalSpark(self.folder / "spark"), observer=outcomes
        )
        self.execution = driver.run({"configUri": str(self.config_path), "tables": tables or []})
        return outcomes.outcomes

    def housekeeping(self, *, clock=None, **request):
        """Run the housekeeping definition here, as ``ferry housekeeping`` does; the execution.

        ``request``: ``dryRun``, ``vacuum``, ``deleteOrphans``, ``tables``.
        """
        from ferry import statemachine as definition
        from ferry.commands.in_process import InProcessDriver

        driver = InProcessDriver(
            self.context(clock), None, definition_path=definition.HOUSEKEEPING_PATH
        )
        return driver.run({"configUri": str(self.config_path), **request})


class _Collect:
    """Collects each table's outcome; passes the rest on to the test's own observer."""

    def __init__(self, inner=None):
        self.inner = inner
        self.outcomes = []

    def state_entered(self, table, state):
        if self.inner is not None and hasattr(self.inner, "state_entered"):
            self.inner.state_entered(table, state)

    def copy_progress(self, table, payload):
        return None

    def copy_finished(self, table):
        pass

    def table_finished(self, table, result, states, seconds):
        from ferry.commands.table_outcomes import outcome_of

        self.outcomes.append(outcome_of(result, states, seconds, None))


def snapshot_of(location: str) -> dict[str, bytes]:
    """Every file below ``location`` by its path relative to it, with its bytes."""
    return {
        fs.relative_path(entry.uri, location): read_bytes(entry.uri)
        for entry in fs.list_files(location)
    }


def assert_replica_holds_source(
    replica: Catalog, database: str, name: str, source: Catalog, source_table, complete=True
) -> None:
    """The invariant: every location the replica references exists and holds the source's bytes.

    Each replica partition (or the unpartitioned table) is compared file by file, by path
    relative to its location, with the source partition of the same values.
    """
    table = replica.get_table(database, name)
    assert table is not None, f"{database}.{name} is missing"
    if not table.is_partitioned:
        expected = snapshot_of(source_table.location)
        assert expected, "the source has data"
        assert snapshot_of(table.location) == expected, table.location
        return
    sources = {p.values: p for p in source.list_partitions(source_table)}
    partitions = replica.list_partitions(table)
    if complete:
        assert partitions, f"{database}.{name} has partitions"
    else:  # part-way through a first commit: the table's own location must exist
        assert fs.list_files(table.location), table.location
    for partition in partitions:
        expected = snapshot_of(sources[partition.values].location)
        assert expected, "the source partition has data"
        assert snapshot_of(partition.location) == expected, partition.location


def rewrite_orders(sample, generation: int = 1) -> None:
    """Rewrite every partition file of the sample ``orders`` in place: same paths, new data.

    A run after this copies every partition again (their data fingerprints changed).
    """
    from ferry.local.samples import order_rows, write_parquet

    for day in sample.days:
        rows = order_rows(day, count=5 + generation)
        write_parquet(f"{sample.orders.location}/dt={day}", "part-00000.parquet", rows)


def partition_snapshots(
    catalog: Catalog, database: str, name: str
) -> dict[tuple, dict[str, bytes]]:
    """Each partition's files (relative path → bytes), by partition values."""
    table = catalog.get_table(database, name)
    return {p.values: snapshot_of(p.location) for p in catalog.list_partitions(table)}


def assert_each_partition_is_complete(
    replica: Catalog, database: str, name: str, *versions: dict[tuple, dict[str, bytes]]
) -> None:
    """Every replica partition holds exactly one complete version of its source partition.

    Part-way through a commit some partitions hold the new version and some the old; none
    may hold a mix, a part, or nothing.
    """
    table = replica.get_table(database, name)
    partitions = replica.list_partitions(table)
    assert partitions
    for partition in partitions:
        found = snapshot_of(partition.location)
        assert found, f"{partition.location} is empty or missing"
        assert any(found == version[partition.values] for version in versions), partition.location


def record_listings(monkeypatch) -> list[str]:
    """The locations Ferry lists from now on, in order (each streamed walk or whole listing)."""
    listed: list[str] = []
    for method in ("iter_files", "list_files"):
        original = getattr(file_systems.FileSystems, method)

        def listing(self, location, original=original):
            listed.append(location)
            return original(self, location)

        monkeypatch.setattr(file_systems.FileSystems, method, listing)
    return listed


def in_process_aws(monkeypatch) -> None:
    """Credentials for moto in-process (``mock_aws``), and no endpoint of a moto server.

    Other tests of the session point every client at a moto server; these stay in-process.
    """
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def ferry(*args: str, faults: list[dict] | None = None, **popen) -> subprocess.Popen:
    """``ferry <args>`` in a process of its own (``python -m ferry.commands.cli``), with ``faults``
    armed in it (``FERRY_FAULTS``): a process the tests may kill."""
    environment = {**os.environ}
    if faults:
        environment["FERRY_FAULTS"] = json.dumps(faults)
    return subprocess.Popen(
        [sys.executable, "-m", "ferry.commands.cli", *args],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def housekept(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The tables of a housekeeping step's report (its result names only the report)."""
    return json.loads(fs.read_bytes(result["reportUri"]))["tables"]


def housekept_paths(table: dict[str, Any], action: str) -> set[str]:
    """The paths of one table of a housekeeping report that were given ``action``."""
    return {o["path"] for o in table["ledger"] + table["orphanFolders"] if o["action"] == action}
