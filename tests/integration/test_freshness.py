"""Freshness against real metastores: what ``measure`` answers after real replications.

Replications run with ``ferry replicate``'s driver (the state machine's definition) on the
real clock; ``measure`` is given the moment it measures at, so "behind by" is exact.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.config import parse_config
from ferry.core import faults
from ferry.core.clock import utc_now
from ferry.core.model import Partition, StorageDescriptor
from ferry.freshness import FreshnessState, measure
from ferry.lifecycle.replica_state import ReplicaState
from ferry.local.samples import ORDER_COLUMNS, PARQUET, order_rows, write_parquet
from ferry.planning.source_versions import SourceVersion
from ferry.replicas.ledger import SqliteStateStore
from ferry.replicas.replica import SOURCE_READ_AT, SOURCE_VERSION
from ferry.storage import fs
from tests.helpers import Replicator, config_document

pytestmark = pytest.mark.integration

MINUTES = timedelta(minutes=1)


@pytest.fixture
def state(tmp_path) -> ReplicaState:
    return ReplicaState(SqliteStateStore(tmp_path / "state.sqlite3"))


@pytest.fixture
def orders_config(local_runtime, sample, tmp_path):
    entry = {
        "source-table": {"database-name": sample.database, "table-name": "orders"},
        "replica-table": {
            "database-name": f"{sample.database}_dr",
            "table-location": fs.local_uri(tmp_path / "replica" / "orders"),
        },
        "rpo": "PT15M",
    }
    return config_document(local_runtime, [entry])


def add_partition(catalog, sample, day: str) -> datetime:
    """A new day at the source; when the metastore recorded it."""
    location = fs.join(sample.orders.location, f"dt={day}")
    write_parquet(location, "part-00000.parquet", order_rows(day))
    catalog.add_partitions(
        sample.orders,
        [Partition((day,), StorageDescriptor(location=location, columns=ORDER_COLUMNS, **PARQUET))],
    )
    [added] = [p for p in catalog.list_partitions(sample.orders) if p.values == (day,)]
    return added.changed_at


def status(document, source_catalog, replica_catalog, state, now):
    config = parse_config(document)
    return {
        t.source_table.split(".")[1]: t
        for t in measure(config, source_catalog, replica_catalog, state.store, now)
    }


def test_a_replica_is_in_sync_then_behind_by_the_age_of_the_partition_it_lacks(
    orders_config, sample, source_catalog, replica_catalog, state
):
    [outcome] = Replicator(orders_config, clock=utc_now, state=state).run()
    assert outcome.ok, outcome
    replica = replica_catalog.get_table(f"{sample.database}_dr", "orders")
    recorded = SourceVersion.parse(replica.parameters[SOURCE_VERSION])
    assert (recorded.kind, recorded.partitions) == ("hive", 3)
    assert SOURCE_READ_AT in replica.parameters

    now = datetime.now(UTC)
    [orders] = status(orders_config, source_catalog, replica_catalog, state, now).values()
    assert (orders.state, orders.behind, orders.over_rpo) == (
        FreshnessState.IN_SYNC,
        timedelta(0),
        False,
    )
    assert orders.replica_version == replica.parameters[SOURCE_VERSION]
    assert orders.last_success is not None and orders.failing_since is None

    time.sleep(1.1)  # the metastore keeps whole seconds
    added = add_partition(source_catalog, sample, "2030-01-01")
    [orders] = status(
        orders_config, source_catalog, replica_catalog, state, added + 10 * MINUTES
    ).values()
    assert (orders.state, orders.behind, orders.over_rpo) == (
        FreshnessState.BEHIND,
        10 * MINUTES,
        False,
    )
    assert orders.changes_lacking == 1
    assert orders.source_version != orders.replica_version
    [orders] = status(
        orders_config, source_catalog, replica_catalog, state, added + 47 * MINUTES
    ).values()
    assert (orders.behind, orders.over_rpo) == (47 * MINUTES, True)

    [outcome] = Replicator(orders_config, clock=utc_now, state=state).run()
    assert outcome.ok, outcome
    [orders] = status(
        orders_config, source_catalog, replica_catalog, state, datetime.now(UTC)
    ).values()
    assert (orders.state, orders.behind) == (FreshnessState.IN_SYNC, timedelta(0))


def test_a_run_with_nothing_to_do_keeps_the_replica_in_sync_through_the_state_store(
    orders_config, sample, source_catalog, replica_catalog, state
):
    """The table itself changes at the source (an ALTER): the run finds nothing to copy and
    writes no catalog, its outcome says the replica holds the source as read."""
    Replicator(orders_config, clock=utc_now, state=state).run()
    time.sleep(1.1)  # the metastore keeps whole seconds
    table = source_catalog.get_table(sample.database, "orders")
    parameters = {**table.parameters, "numRows": "15"}
    parameters.pop("transient_lastDdlTime")  # the metastore sets it again: now
    source_catalog.alter_table(replace(table, parameters=parameters))
    later = datetime.now(UTC) + 5 * MINUTES
    [orders] = status(orders_config, source_catalog, replica_catalog, state, later).values()
    assert orders.state is FreshnessState.BEHIND
    [outcome] = Replicator(orders_config, clock=utc_now, state=state).run()
    assert outcome.status == "UNCHANGED", outcome
    [orders] = status(orders_config, source_catalog, replica_catalog, state, later).values()
    assert (orders.state, orders.behind) == (FreshnessState.IN_SYNC, timedelta(0))


def test_a_failed_run_is_failing_since_its_first_failure_with_its_error(
    orders_config, sample, source_catalog, replica_catalog, state
):
    Replicator(orders_config, clock=utc_now, state=state).run()
    add_partition(source_catalog, sample, "2030-01-02")
    first = datetime.now(UTC)
    with faults.armed(faults.Fault("plan.planned", times=2)):
        for _ in range(2):
            [outcome] = Replicator(orders_config, clock=utc_now, state=state).run()
            assert not outcome.ok
    [orders] = status(
        orders_config, source_catalog, replica_catalog, state, datetime.now(UTC)
    ).values()
    assert orders.state is FreshnessState.FAILING
    assert first <= orders.failing_since < orders.last_failure
    assert orders.last_error and "\n" not in orders.last_error
    assert "plan.planned" in orders.last_error
    assert orders.behind > timedelta(0) and orders.changes_lacking == 1


def test_tables_never_replicated_and_sources_missing_are_told_apart(
    local_runtime, sample, source_catalog, replica_catalog, state, tmp_path
):
    entries = [
        {
            "source-table": {"database-name": sample.database, "table-name": name},
            "replica-table": {
                "database-name": f"{sample.database}_dr",
                "table-location": fs.local_uri(tmp_path / name),
            },
        }
        for name in ("customers", "gone")
    ]
    document = config_document(local_runtime, entries, rpo="PT1H")
    tables = status(document, source_catalog, replica_catalog, state, datetime.now(UTC))
    assert tables["customers"].state is FreshnessState.NEVER_REPLICATED
    assert tables["customers"].over_rpo
    assert tables["gone"].state is FreshnessState.SOURCE_MISSING
    assert "not found" in tables["gone"].detail


def test_glue_to_glue_is_measured_from_glues_version_and_partition_creation_times(
    local_runtime, glue_catalog, state, tmp_path, unique
):
    """Both catalogs in the emulated Glue: the version is Glue's VersionId and UpdateTime,
    a partition the replica lacks is behind since its CreationTime."""
    from ferry.core.model import Column, Database, Table, TableType

    database = f"glue_sales_{unique}"
    glue_catalog.create_database(Database(database))
    location = fs.local_uri(tmp_path / "source" / "events")
    table = Table(
        database=database,
        name="events",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(location=location, columns=ORDER_COLUMNS, **PARQUET),
        partition_keys=(Column("dt", "string"),),
        parameters={"EXTERNAL": "TRUE"},
    )
    glue_catalog.create_table(table)

    def add(day: str) -> None:
        where = fs.join(location, f"dt={day}")
        write_parquet(where, "part-00000.parquet", order_rows(day))
        glue_catalog.add_partitions(
            table,
            [
                Partition(
                    (day,), StorageDescriptor(location=where, columns=ORDER_COLUMNS, **PARQUET)
                )
            ],
        )

    add("2026-11-20")
    document = {
        "source-catalog": {"name": "aws-source", "glue": {"region": "us-east-1"}},
        "replica-catalog": {"name": "aws", "glue": {"region": "us-east-1"}},
        "rpo": "PT30M",
        "table-replications": [
            {
                "source-table": {"database-name": database, "table-name": "events"},
                "replica-table": {
                    "database-name": f"{database}_dr",
                    "table-location": fs.local_uri(tmp_path / "replica" / "events"),
                },
            }
        ],
    }
    [outcome] = Replicator(document, clock=utc_now, state=state).run()
    assert outcome.ok, outcome
    [events] = measure(
        parse_config(document),
        glue_catalog,
        glue_catalog,
        state.store,
        datetime.now(UTC),
        region="us-east-1",
    )
    assert (events.state, events.behind) == (FreshnessState.IN_SYNC, timedelta(0))
    held = SourceVersion.parse(events.replica_version)
    assert (held.kind, held.version_id, held.partitions) == ("glue", "1", 1)

    time.sleep(1.1)
    add("2026-11-21")
    [created] = [
        p.changed_at for p in glue_catalog.list_partitions(table) if p.values == ("2026-11-21",)
    ]
    [events] = measure(
        parse_config(document),
        glue_catalog,
        glue_catalog,
        state.store,
        created + 31 * MINUTES,
        region="us-east-1",
    )
    assert (events.state, events.behind, events.over_rpo) == (
        FreshnessState.BEHIND,
        31 * MINUTES,
        True,
    )

    time.sleep(1.1)
    current = glue_catalog.get_table(database, "events")
    glue_catalog.alter_table(
        replace(current, parameters={**current.parameters, "owner-team": "sales"})
    )
    changed = glue_catalog.get_table(database, "events")
    assert changed.version_id == "2"
    [events] = measure(
        parse_config(document),
        glue_catalog,
        glue_catalog,
        state.store,
        changed.changed_at + MINUTES,
        region="us-east-1",
    )
    assert events.changes_lacking == 2
    assert SourceVersion.parse(events.source_version).version_id == "2"


def test_an_iceberg_replica_is_behind_since_the_first_snapshot_it_lacks(
    local_runtime, replica_catalog, state, tmp_path, unique
):
    from pyiceberg.catalog.hive import HiveCatalog

    from tests.iceberg_tables import SCHEMA, rows

    database = f"iceberg_{unique}"
    writer = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    writer.create_namespace(database)
    table = writer.create_table(f"{database}.history", schema=SCHEMA)
    table.append(rows([1, 2], ["eu", "us"]))
    entry = {
        "source-table": {"database-name": database, "table-name": "history"},
        "replica-table": {
            "database-name": f"{database}_dr",
            "table-location": (tmp_path / "replica" / "history").as_uri(),
        },
        "rpo": "PT5M",
    }
    document = config_document(local_runtime, [entry])
    [outcome] = Replicator(document, clock=utc_now, state=state).run()
    assert outcome.ok, outcome
    first = table.current_snapshot()
    with HiveMetastoreCatalog("onprem", [local_runtime.source_uri]) as source_catalog:
        [history] = measure(
            parse_config(document), source_catalog, replica_catalog, state.store, datetime.now(UTC)
        )
        assert (history.state, history.behind) == (FreshnessState.IN_SYNC, timedelta(0))
        assert SourceVersion.parse(history.replica_version).snapshot_id == first.snapshot_id

        table.append(rows([3], ["ap"]))
        writer.load_table(f"{database}.history").append(rows([4], ["ap"]))
        second, third = [
            s
            for s in writer.load_table(f"{database}.history").snapshots()
            if s.snapshot_id != first.snapshot_id
        ]
        second_at = datetime.fromtimestamp(second.timestamp_ms / 1000, UTC)
        [history] = measure(
            parse_config(document),
            source_catalog,
            replica_catalog,
            state.store,
            second_at + 6 * MINUTES,
        )
    assert (history.state, history.behind, history.over_rpo) == (
        FreshnessState.BEHIND,
        6 * MINUTES,
        True,
    )
    assert history.changes_lacking == 2
    assert SourceVersion.parse(history.source_version).snapshot_id == third.snapshot_id


def test_a_partition_the_limit_leaves_out_is_never_lacking(
    orders_config, sample, source_catalog, replica_catalog, state
):
    """``partition-limit: 3`` replicates the first three partitions in value order: a later
    one is not the replica's to have."""
    orders_config["table-replications"][0]["source-table"]["partition-limit"] = 3
    [outcome] = Replicator(orders_config, clock=utc_now, state=state).run()
    assert outcome.ok, outcome
    time.sleep(1.1)
    added = add_partition(source_catalog, sample, "2030-01-05")
    [orders] = status(
        orders_config, source_catalog, replica_catalog, state, added + 20 * MINUTES
    ).values()
    assert (orders.state, orders.behind) == (FreshnessState.IN_SYNC, timedelta(0))
    added = add_partition(source_catalog, sample, "2020-01-05")  # first in value order
    [orders] = status(
        orders_config, source_catalog, replica_catalog, state, added + 20 * MINUTES
    ).values()
    assert (orders.state, orders.behind, orders.over_rpo) == (
        FreshnessState.BEHIND,
        20 * MINUTES,
        True,
    )
