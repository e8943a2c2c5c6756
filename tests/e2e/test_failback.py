"""Failover and failback of Hive tables, end to end on the real metastores, with the CLI.

Replicate, fail over, write in DR (a new partition, new files in a partition), fail back,
replicate forward again: both sides hold the same rows, none lost or duplicated; a conflict
with and without ``--prefer``; every step killed part-way and run again converges.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
import yaml

from ferry.commands.cli import main
from ferry.commands.reader import read_rows
from ferry.core import faults
from ferry.core.model import Partition
from ferry.failover import PROMOTED
from ferry.local.samples import order_rows, write_parquet
from ferry.storage import fs
from tests.helpers import catalog_state, config_document

pytestmark = pytest.mark.e2e


@pytest.fixture
def dr(local_runtime, source_catalog, replica_catalog, sample, tmp_path, capsys, request):
    """One table (``orders`` unless the test's parameter names ``table``; with its
    ``strategy``; to Glue and S3 with ``glue``) replicated once with ``ferry replicate
    --home``; a runner of ferry."""
    options = getattr(request, "param", {})
    name = options.get("table", "orders")
    target = (tmp_path / "replica-data").as_uri()
    replica_section = None
    if options.get("glue"):
        replica_catalog = request.getfixturevalue("glue_catalog")
        target = f"s3://{request.getfixturevalue('bucket')}/warehouse"
        replica_section = {"name": "aws", "glue": {"region": "us-east-1"}}
    home = tmp_path / "home"
    replica_db = f"{sample.database}_dr"
    replication = {
        "source-table": {"database-name": sample.database, "table-name": name},
        "replica-table": {
            "database-name": replica_db,
            "table-name": name,
            "table-location": f"{target}/{name}",
        },
    }
    if "strategy" in options:
        replication["replication-strategy"] = options["strategy"]
    document = config_document(local_runtime, [replication], replica_section)
    config = tmp_path / "replication.yml"
    config.write_text(yaml.safe_dump(document, sort_keys=False))

    class Dr:
        source_db, replica_db_name = sample.database, replica_db
        days = sample.days
        home_dir = home
        config_path = config
        catalog = replica_catalog

        def ferry(self, *args: str) -> tuple[int, str, str]:
            capsys.readouterr()
            code = main([*args, str(config), "--home", str(home)])
            captured = capsys.readouterr()
            return code, captured.out, captured.err

        def replica(self):
            return replica_catalog.get_table(replica_db, name)

        def source(self):
            return source_catalog.get_table(sample.database, name)

        def rows(self, catalog, table) -> list[tuple]:
            data = read_rows(catalog, table)
            return sorted(
                zip(*(data.column(c).to_pylist() for c in data.column_names), strict=True)
            )

        def add_in_dr(self, day: str, count: int = 4) -> None:
            """A writer in DR adds a partition below the replica's location."""
            table = self.replica()
            location = fs.join(f"{target}/orders", "written-in-dr", f"dt={day}")
            write_parquet(location, "part-00000.parquet", order_rows(day, count))
            replica_catalog.add_partitions(
                table, [Partition((day,), table.storage.with_location(location))]
            )

        def append_in_dr(self, day: str) -> None:
            """A writer in DR adds a file to an existing partition."""
            table = self.replica()
            [partition] = [p for p in replica_catalog.list_partitions(table) if p.values == (day,)]
            write_parquet(partition.location, "part-dr.parquet", order_rows("2001-01-01", 2))

        def append_at_source(self, day: str) -> None:
            table = self.source()
            [partition] = [p for p in source_catalog.list_partitions(table) if p.values == (day,)]
            write_parquet(partition.location, "part-src.parquet", order_rows("2002-02-02", 3))

    runner = Dr()
    code, out, err = runner.ferry("replicate")
    assert code == 0, err
    return runner


def test_failover_failback_and_forward_again_lose_and_duplicate_nothing(
    dr, source_catalog, replica_catalog
):
    code, out, err = dr.ferry("failover")
    assert code == 0, err
    promoted = dr.replica().parameters[PROMOTED]
    assert "RPO" in out and "promoted" in out
    # Idempotent: the same failover id, and nothing else changes.
    before = catalog_state(replica_catalog, dr.replica_db_name, ["orders"])
    code, out, _ = dr.ferry("failover")
    assert code == 0 and "already promoted" in out
    assert dr.replica().parameters[PROMOTED] == promoted
    assert catalog_state(replica_catalog, dr.replica_db_name, ["orders"]) == before

    # A forward run leaves the promoted replica out, and does not fail.
    code, _, err = dr.ferry("replicate")
    assert code == 0, err
    assert catalog_state(replica_catalog, dr.replica_db_name, ["orders"]) == before

    dr.add_in_dr("2026-12-01")
    dr.append_in_dr(dr.days[0])
    in_dr = dr.rows(replica_catalog, dr.replica())
    source_partitions = {p.values: p.location for p in source_catalog.list_partitions(dr.source())}

    sides = (
        catalog_state(source_catalog, dr.source_db, ["orders"]),
        catalog_state(replica_catalog, dr.replica_db_name, ["orders"]),
    )
    code, out, err = dr.ferry("failback", "--dry-run")
    assert code == 0, err
    assert "would bring 2 partitions home" in out and "partition-filter" in out
    assert sides == (
        catalog_state(source_catalog, dr.source_db, ["orders"]),
        catalog_state(replica_catalog, dr.replica_db_name, ["orders"]),
    )

    code, out, err = dr.ferry("failback")
    assert code == 0, err
    assert "brought 2 partitions home" in out
    assert PROMOTED not in dr.replica().parameters
    source = dr.source()
    assert dr.rows(source_catalog, source) == in_dr
    # DR's partitions came home below the source table's location, in a snapshot folder;
    # the source's other partitions were not touched, and its table is no replica.
    moved = {p.values: p.location for p in source_catalog.list_partitions(source)}
    for values in [(dr.days[0],), ("2026-12-01",)]:
        assert fs.relative_path(moved[values], source.location).startswith("ferry-")
    for day in dr.days[1:]:
        assert moved[(day,)] == source_partitions[(day,)]
    assert not [k for k in source.parameters if k.startswith("ferry.")]
    assert source.location == dr.source().location

    # The original direction resumes: nothing is copied back, rows equal on both sides.
    code, out, err = dr.ferry("replicate", "--json")
    assert code == 0, err
    [table] = json.loads(out)["tables"]
    assert table["files"] == 0 and table["status"] in ("UNCHANGED", "SUCCEEDED")
    assert dr.rows(replica_catalog, dr.replica()) == dr.rows(source_catalog, dr.source())

    # Failback again: already done, nothing changes.
    code, out, _ = dr.ferry("failback")
    assert code == 0 and "already failed back" in out


def test_conflict_is_refused_without_prefer_and_settled_with_it(
    dr, source_catalog, replica_catalog
):
    assert dr.ferry("failover")[0] == 0
    day = dr.days[1]
    dr.append_in_dr(day)
    dr.append_at_source(day)
    dr.add_in_dr("2026-12-02")
    state = (
        catalog_state(source_catalog, dr.source_db, ["orders"]),
        catalog_state(replica_catalog, dr.replica_db_name, ["orders"]),
    )
    code, out, err = dr.ferry("failback")
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert f"on both dt={day}" in err and "--prefer" in err
    assert state == (
        catalog_state(source_catalog, dr.source_db, ["orders"]),
        catalog_state(replica_catalog, dr.replica_db_name, ["orders"]),
    )

    in_dr = dr.rows(replica_catalog, dr.replica())
    code, out, err = dr.ferry("failback", "--prefer", "replica")
    assert code == 0, err
    assert dr.rows(source_catalog, dr.source()) == in_dr
    code, out, err = dr.ferry("replicate", "--json")
    assert code == 0, err
    assert json.loads(out)["tables"][0]["files"] == 0


def test_prefer_source_keeps_the_source_and_the_forward_run_brings_it(
    dr, source_catalog, replica_catalog
):
    assert dr.ferry("failover")[0] == 0
    day = dr.days[1]
    dr.append_in_dr(day)
    dr.append_at_source(day)
    code, out, err = dr.ferry("failback", "--prefer", "source")
    assert code == 0, err
    assert "brought 0 partitions home" in out
    code, out, err = dr.ferry("replicate")
    assert code == 0, err
    assert dr.rows(replica_catalog, dr.replica()) == dr.rows(source_catalog, dr.source())


@pytest.mark.parametrize(
    "point",
    ["failback.reverse-config", "commit.claimed", "failback.reverse-run", "failback.restored"],
)
def test_failback_killed_part_way_converges_when_run_again(
    dr, source_catalog, replica_catalog, point
):
    assert dr.ferry("failover")[0] == 0
    dr.add_in_dr("2026-12-03")
    dr.append_in_dr(dr.days[2])
    in_dr = dr.rows(replica_catalog, dr.replica())
    with faults.armed(faults.Fault(point)):
        try:
            code, _, _ = dr.ferry("failback")
        except faults.InjectedFault:
            code = None
    assert code != 0
    code, out, err = dr.ferry("failback")
    assert code == 0, err
    assert PROMOTED not in dr.replica().parameters
    assert dr.rows(source_catalog, dr.source()) == in_dr
    # No partition was copied twice into the source: one snapshot folder holds them.
    source = dr.source()
    folders = {
        fs.relative_path(p.location, source.location).split("/")[0]
        for p in source_catalog.list_partitions(source)
        if p.values in {("2026-12-03",), (dr.days[2],)}
    }
    assert len(folders) == 1 and next(iter(folders)).startswith("ferry-")
    assert len(fs.list_files(source.location)) == len(
        {e.uri for e in fs.list_files(source.location)}
    )
    code, out, err = dr.ferry("replicate", "--json")
    assert code == 0, err
    assert json.loads(out)["tables"][0]["files"] == 0
    assert dr.rows(replica_catalog, dr.replica()) == in_dr


def test_failback_refuses_without_a_failover_and_with_the_primary_unreachable(
    dr, source_catalog, replica_catalog, tmp_path
):
    state = catalog_state(replica_catalog, dr.replica_db_name, ["orders"])
    code, _, err = dr.ferry("failback")
    assert code == 2 and "not promoted: no failover to fail back from" in err
    assert len(err.strip().splitlines()) == 1
    assert catalog_state(replica_catalog, dr.replica_db_name, ["orders"]) == state


@pytest.mark.parametrize("dr", [{"table": "customers"}], indirect=True)
def test_an_unpartitioned_table_changed_in_dr_comes_home_whole(dr, source_catalog, replica_catalog):
    before = dr.source().location
    assert dr.ferry("failover")[0] == 0
    written = pa.table({"customer_id": pa.array([7, 8], pa.int64()), "name": ["Dr", "Rev"]})
    write_parquet(dr.replica().location, "part-dr.parquet", written)
    in_dr = dr.rows(replica_catalog, dr.replica())
    code, out, err = dr.ferry("failback")
    assert code == 0, err
    source = dr.source()
    assert fs.relative_path(source.location, before).startswith("ferry-")
    assert dr.rows(source_catalog, source) == in_dr
    assert not [k for k in source.parameters if k.startswith("ferry.")]
    code, out, err = dr.ferry("replicate", "--json")
    assert code == 0, err
    assert json.loads(out)["tables"][0]["files"] == 0


@pytest.mark.parametrize(
    ("dr", "dropped_at_source"),
    [({"strategy": "PROPAGATE_DELETES"}, True), ({}, False)],
    indirect=["dr"],
)
def test_a_partition_dropped_in_dr_is_dropped_at_the_source_only_under_propagate_deletes(
    dr, source_catalog, replica_catalog, dropped_at_source
):
    assert dr.ferry("failover")[0] == 0
    day = dr.days[0]
    replica_catalog.drop_partitions(dr.replica(), [(day,)])
    code, out, err = dr.ferry("failback")
    assert code == 0, err
    assert f"dropped in DR: dt={day}" in out
    at_source = {p.values for p in source_catalog.list_partitions(dr.source())}
    assert ((day,) not in at_source) is dropped_at_source
    # The source's files stay either way: a drop is the catalog's only.
    assert fs.list_files(fs.join(dr.source().location, f"dt={day}"))


def test_the_source_data_stays_the_source_s_and_housekeeping_deletes_none_of_it(
    dr, source_catalog, replica_catalog
):
    from ferry.config import load_config
    from ferry.lifecycle import replica_state
    from ferry.replicas.ledger import SqliteStateStore, replica_key

    source_files = {e.uri for e in fs.list_files(dr.source().location)}
    assert dr.ferry("failover")[0] == 0
    dr.append_in_dr(dr.days[0])
    assert dr.ferry("failback")[0] == 0
    config = load_config(dr.config_path)
    reverse = replica_key(
        replica_state.catalog_identity(config.source_catalog, None), f"{dr.source_db}.orders"
    )
    store = SqliteStateStore(dr.home_dir / replica_state.LOCAL_STATE_FILE)
    assert store.entries(reverse) == []
    code, out, err = dr.ferry("housekeeping", "--vacuum", "--delete-orphans")
    assert code == 0, err
    assert source_files <= {e.uri for e in fs.list_files(dr.source().location)}


def test_failover_and_failback_with_the_dynamodb_state_table(
    dr, source_catalog, replica_catalog, unique
):
    import boto3

    from ferry.replicas.ledger.dynamodb_table import create_state_table

    table = f"ferry-state-{unique}"
    create_state_table(boto3.client("dynamodb", region_name="us-east-1"), table)
    assert dr.ferry("replicate", "--state-table", table)[0] == 0
    code, out, err = dr.ferry("failover", "--state-table", table)
    assert code == 0, err
    dr.add_in_dr("2026-12-05")
    in_dr = dr.rows(replica_catalog, dr.replica())
    code, out, err = dr.ferry("failback", "--state-table", table)
    assert code == 0, err
    assert dr.rows(source_catalog, dr.source()) == in_dr
    code, out, err = dr.ferry("replicate", "--state-table", table, "--json")
    assert code == 0, err
    assert json.loads(out)["tables"][0]["files"] == 0


@pytest.mark.parametrize("dr", [{"glue": True}], indirect=True)
def test_a_glue_replica_on_s3_fails_over_and_back(dr, source_catalog):
    assert dr.ferry("failover")[0] == 0
    assert PROMOTED in dr.replica().parameters
    dr.add_in_dr("2026-12-07")
    dr.append_in_dr(dr.days[1])
    in_dr = dr.rows(dr.catalog, dr.replica())
    code, out, err = dr.ferry("failback")
    assert code == 0, err
    assert "brought 2 partitions home" in out
    assert PROMOTED not in dr.replica().parameters
    assert dr.rows(source_catalog, dr.source()) == in_dr
    code, out, err = dr.ferry("replicate", "--json")
    assert code == 0, err
    assert json.loads(out)["tables"][0]["files"] == 0
    assert dr.rows(dr.catalog, dr.replica()) == in_dr
