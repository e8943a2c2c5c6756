"""What Plan hands Commit of the replica's partitions (``ferry/lifecycle/replica_as_planned.py``):
read back while the replica table is as Plan read it, and not once anything of the table
changed, or the table is gone."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from ferry.core.model import Column, Partition, StorageDescriptor, Table, TableType
from ferry.lifecycle.replica_as_planned import read_replica_as_planned, write_replica_as_planned
from ferry.replicas.replica import COMMIT_CLAIM, REPLICATION_EVENT
from ferry.storage import fs

STORAGE = StorageDescriptor("file:///r/e1", (Column("v", "string"),))
TABLE = Table(
    "db_dr", "t", TableType.EXTERNAL, STORAGE, partition_keys=(Column("dt", "string"),),
    parameters={REPLICATION_EVENT: "e1", COMMIT_CLAIM: "e1@2026-11-27T10:00:00+00:00"},
    changed_at=datetime(2026, 11, 27, 10, tzinfo=UTC),
)  # fmt: skip
PARTITIONS = {
    ("1",): Partition(("1",), STORAGE.with_location("file:///r/e1/dt=1")),
    ("2",): Partition(("2",), STORAGE.with_location("file:///r/e1/dt=2")),
    ("3",): Partition(("3",), STORAGE.with_location(None)),
}


def test_the_replica_as_plan_read_it_stands_for_a_listing(tmp_path):
    root = fs.local_uri(tmp_path)
    write_replica_as_planned(root, TABLE, PARTITIONS)

    before = read_replica_as_planned(root, TABLE)

    assert before is not None
    assert before.partitions == {("1",): "file:///r/e1/dt=1", ("2",): "file:///r/e1/dt=2"}
    assert before.table_location == "file:///r/e1"
    assert before.locations == ["file:///r/e1", "file:///r/e1/dt=1", "file:///r/e1/dt=2"]


def test_a_replica_changed_in_any_way_since_plan_is_read_again(tmp_path):
    root = fs.local_uri(tmp_path)
    write_replica_as_planned(root, TABLE, PARTITIONS)
    changed = [
        replace(TABLE, parameters={**TABLE.parameters, REPLICATION_EVENT: "e2"}),
        replace(TABLE, parameters={**TABLE.parameters, COMMIT_CLAIM: "e2@2026-11-27T11:00:00"}),
        replace(TABLE, parameters={**TABLE.parameters, "comment": "by hand"}),
        replace(TABLE, storage=STORAGE.with_location("file:///r/e2")),
        replace(TABLE, changed_at=datetime(2026, 11, 27, 11, tzinfo=UTC)),
        replace(TABLE, version_id="2"),
        replace(TABLE, name="other"),
        None,
    ]

    assert [read_replica_as_planned(root, table) for table in changed] == [None] * len(changed)


def test_no_document_or_an_unreadable_one_is_read_again(tmp_path):
    root = fs.local_uri(tmp_path)
    assert read_replica_as_planned(root, TABLE) is None
    for broken in (b"", b"[]", b'{"replica": ', b'{"partitions": []}'):
        (tmp_path / "replica-as-planned.json").write_bytes(broken)
        assert read_replica_as_planned(root, TABLE) is None
