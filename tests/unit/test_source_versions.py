"""The source version Commit records, as written and read back, and the parameters it
writes; ``ferry status``'s durations for people."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ferry.commands.status import short
from ferry.core.model import Column, Partition, StorageDescriptor, Table, TableType
from ferry.planning.diff import definition
from ferry.planning.source_versions import (
    SourceVersion,
    held_by,
    names_digest,
    of_iceberg,
    of_table,
    recorded_parameters,
)
from ferry.replicas.replica import LAST_REPLICATED, SOURCE_READ_AT, SOURCE_VERSION

NOW = datetime(2026, 11, 26, 10, 12, 0, 123000, tzinfo=UTC)


def table(changed_at=None, version_id=None, parameters=None) -> Table:
    return Table(
        "sales", "orders", TableType.EXTERNAL, StorageDescriptor("file:///w/orders"),
        partition_keys=(Column("dt", "string"),), parameters=parameters or {},
        changed_at=changed_at, version_id=version_id,
    )  # fmt: skip


def test_a_hive_version_is_the_latest_change_of_table_and_partitions_and_their_count():
    partitions = [
        Partition((day,), StorageDescriptor(None), changed_at=NOW + timedelta(minutes=m))
        for m, day in ((1, "a"), (5, "b"), (2, "c"))
    ]
    version = of_table(table(NOW), partitions, glue=False)
    assert str(version) == (
        "hive:changed=2026-11-26T10:17:00.123Z;partitions=3;names="
        + names_digest([("a",), ("b",), ("c",)])
    )
    assert names_digest([("c",), ("a",), ("b",)]) == names_digest([("a",), ("b",), ("c",)])
    assert SourceVersion.parse(str(version)) == version


def test_a_glue_version_carries_the_version_id_and_an_iceberg_one_its_snapshot():
    glue = of_table(table(NOW, "7"), [], glue=True)
    assert str(glue) == (
        f"glue:version=7;changed=2026-11-26T10:12:00.123Z;partitions=0;names={names_digest([])}"
    )
    iceberg = of_iceberg(4242, int(NOW.timestamp() * 1000))
    assert str(iceberg) == "iceberg:snapshot=4242;changed=2026-11-26T10:12:00.123Z"
    assert SourceVersion.parse(str(iceberg)) == iceberg
    assert SourceVersion.parse("not a version") is None and SourceVersion.parse(None) is None


def test_what_commit_records_reads_back_and_is_not_a_difference_of_definition():
    recorded = recorded_parameters("hive:partitions=3", NOW)
    assert recorded == {
        SOURCE_VERSION: "hive:partitions=3",
        SOURCE_READ_AT: "2026-11-26T10:12:00.123Z",
    }
    assert held_by(recorded) == ("hive:partitions=3", NOW)
    # A replica from before: when its plan ran.
    assert held_by({LAST_REPLICATED: "2026-11-26T10:12:00.123Z"}) == (None, NOW)
    assert definition(table(parameters=recorded)) == definition(table())
    # The catalog's times are read, never part of what "the same table" means.
    assert table(NOW, "1") == table(NOW + timedelta(days=1), "2")


def test_durations_for_people():
    assert [
        short(timedelta(seconds=s)) for s in (0, 12, 47 * 60, 3900, 3600, 2 * 86400 + 3 * 3600)
    ] == [
        "0s",
        "12s",
        "47m",
        "1h05m",
        "1h",
        "2d3h",
    ]
