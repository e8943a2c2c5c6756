"""The source metastore's notification log, written as Hive's DbNotificationListener writes
it and read back through Thrift."""

from __future__ import annotations

import time

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.catalog.hive_events import HiveNotificationLog
from ferry.core.errors import NotificationLogGapError
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType
from ferry.local import metastore, processes

pytestmark = pytest.mark.integration


def clicks_table(database: str, location: str) -> Table:
    return Table(
        database=database,
        name="clicks",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(
            location=location,
            columns=(Column("id", "bigint"),),
            input_format="org.apache.hadoop.mapred.TextInputFormat",
            output_format="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            serde_library="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
        ),
        partition_keys=(Column("day", "string"), Column("hour", "int")),
        parameters={"EXTERNAL": "TRUE"},
    )


def partition(table: Table, day: str, hour: int, parameters: dict | None = None) -> Partition:
    location = f"{table.location}/day={day}/hour={hour}"
    return Partition((day, str(hour)), table.storage.with_location(location), parameters or {})


def summary(events) -> list[tuple]:
    return [(e.type, e.database, e.table, e.partitions) for e in events]


def test_the_log_holds_each_change_in_order(source_catalog, unique, tmp_path):
    log = HiveNotificationLog(source_catalog)
    database = f"feed_{unique}"
    before = log.current_event_id()

    source_catalog.create_database(Database(database))
    table = clicks_table(database, (tmp_path / "clicks").as_uri())
    source_catalog.create_table(table)
    # Enough partitions that the one event's message outgrows Derby's LONG VARCHAR.
    added = [partition(table, "2026-11-20", hour) for hour in range(24)]
    source_catalog.add_partitions(table, added)
    source_catalog.alter_partitions(table, [partition(table, "2026-11-20", 7, {"late": "yes"})])
    # What Hive's own client sends after writing files into a partition (an INSERT event).
    written = ttypes.FireEventRequest(
        successful=True,
        data=ttypes.FireEventRequestData(
            insertData=ttypes.InsertEventRequestData(filesAdded=[f"{added[5].location}/0.txt"])
        ),
        dbName=database,
        tableName="clicks",
        partitionVals=["2026-11-20", "5"],
    )
    source_catalog.call(lambda client: client.fire_listener_event(written))
    source_catalog.drop_partitions(table, [("2026-11-20", "3")])
    source_catalog.drop_table(database, "clicks")
    source_catalog.drop_database(database)

    events = log.events_after(before)
    assert summary(events) == [
        ("CREATE_DATABASE", database, None, ()),
        ("CREATE_TABLE", database, "clicks", ()),
        ("ADD_PARTITION", database, "clicks", tuple(p.values for p in added)),
        ("ALTER_PARTITION", database, "clicks", (("2026-11-20", "7"),)),
        ("INSERT", database, "clicks", (("2026-11-20", "5"),)),
        ("DROP_PARTITION", database, "clicks", (("2026-11-20", "3"),)),
        ("DROP_TABLE", database, "clicks", ()),
        ("DROP_DATABASE", database, None, ()),
    ]
    ids = [e.event_id for e in events]
    assert ids == list(range(before + 1, before + 9))
    assert log.current_event_id() == ids[-1]
    assert all(abs(time.time() - e.time.timestamp()) < 600 for e in events)

    assert log.events_after(ids[-1]) == []
    assert [e.event_id for e in log.events_after(before, max_events=2)] == ids[:2]
    assert [e.event_id for e in log.events_after(ids[2])] == ids[3:]


def test_the_replica_writes_no_log(replica_catalog, unique):
    log = HiveNotificationLog(replica_catalog)
    before = log.current_event_id()
    replica_catalog.create_database(Database(f"quiet_{unique}"))
    replica_catalog.drop_database(f"quiet_{unique}")
    assert log.current_event_id() == before
    assert log.events_after(before) == []


@pytest.fixture(scope="module")
def cleaned_catalog(tmp_path_factory):
    """A metastore of its own whose log keeps events for three seconds, cleaned each second."""
    state_dir = tmp_path_factory.mktemp("cleaned")
    port = processes.free_port()
    metastore.start_metastore(
        state_dir,
        "cleaned",
        port,
        notification_log=True,
        settings={
            "hive.metastore.event.db.listener.timetolive": "3s",
            "hive.metastore.event.db.listener.clean.interval": "1s",
        },
    )
    try:
        with HiveMetastoreCatalog("cleaned", [f"thrift://127.0.0.1:{port}"]) as catalog:
            yield catalog
    finally:
        processes.stop_process(state_dir, "cleaned")


def test_events_cleaned_before_they_are_read_are_a_gap(cleaned_catalog, unique):
    log = HiveNotificationLog(cleaned_catalog)
    last_read = log.current_event_id()
    cleaned_catalog.create_database(Database(f"gone_{unique}"))
    cleaned_catalog.drop_database(f"gone_{unique}")

    deadline = time.monotonic() + 60
    while True:  # until the metastore's cleaner has deleted the first event
        try:
            log.events_after(last_read)
        except NotificationLogGapError as gap:
            # The second event is cleaned in the same round or in the next one.
            assert gap.first_id in (last_read + 2, None)
            assert (gap.last_id, gap.current_id) == (last_read, last_read + 2)
            break
        assert time.monotonic() < deadline, "the cleaner never deleted the events"
        time.sleep(0.5)

    cleaned_catalog.create_database(Database(f"kept_{unique}"))
    with pytest.raises(
        NotificationLogGapError, match=f"no longer holds the events after {last_read}"
    ):
        log.events_after(last_read)
    # A reader that had read up to the newest cleaned event misses nothing.
    kept = log.events_after(last_read + 2)
    assert summary(kept) == [("CREATE_DATABASE", f"kept_{unique}", None, ())]
    assert kept[0].event_id == last_read + 3


def test_a_log_started_anew_is_a_gap(source_catalog):
    log = HiveNotificationLog(source_catalog)
    with pytest.raises(NotificationLogGapError):
        log.events_after(log.current_event_id() + 100)
