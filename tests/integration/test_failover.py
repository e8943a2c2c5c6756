"""Promotion on real metastores: what ``ferry failover`` refuses, what it keeps, and how
Plan, Commit, Resolve tables and housekeeping treat a promoted replica."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from ferry.commands.cli import main
from ferry.core.errors import PromotedReplicaError
from ferry.failover import PROMOTED
from ferry.failover.baseline import Baseline, PartitionBaseline
from ferry.failover.promotion import promote
from ferry.lifecycle import replica_state
from ferry.lifecycle.committing import commit
from ferry.local import processes
from ferry.planning.table_plan import plan_replication
from ferry.replicas.ledger import SqliteStateStore
from ferry.storage import fs
from tests.conftest import fixed_clock
from tests.helpers import catalog_state, config_document

pytestmark = pytest.mark.integration


@pytest.fixture
def setup(local_runtime, source_catalog, replica_catalog, sample, tmp_path, capsys):
    """A config replicating orders, written, replicated once; a runner of ferry."""
    target = (tmp_path / "replica-data").as_uri()
    home = tmp_path / "home"
    replica_db = f"{sample.database}_dr"

    def replication(table: str) -> dict:
        return {
            "source-table": {"database-name": sample.database, "table-name": table},
            "replica-table": {
                "database-name": replica_db,
                "table-name": table,
                "table-location": f"{target}/{table}",
            },
        }

    def write(name: str, **catalogs) -> str:
        document = config_document(
            local_runtime, [replication("orders"), replication("customers")], **catalogs
        )
        if "source" in catalogs:
            document = {**document, "source-catalog": catalogs["source"]}
            document.pop("source", None)
        path = tmp_path / name
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return str(path)

    config = write("replication.yml")

    class Setup:
        database, replica_database, home_dir = sample.database, replica_db, home
        config_path = config

        def ferry(self, *args: str, config: str | None = None) -> tuple[int, str, str]:
            capsys.readouterr()
            code = main([*args, config or self.config_path, "--home", str(home)])
            captured = capsys.readouterr()
            return code, captured.out, captured.err

        def write(self, name: str, **catalogs) -> str:
            return write(name, **catalogs)

        def state(self):
            return catalog_state(replica_catalog, replica_db, ["orders", "customers"])

    return Setup()


def test_failover_of_a_table_never_replicated_is_refused_and_changes_nothing(setup):
    before = setup.state()
    code, _, err = setup.ferry("failover")
    assert code == 2
    assert err.count("\n") == 1
    assert "does not exist; nothing to fail over to" in err
    assert setup.state() == before
    assert not (setup.home_dir / "work" / "failover").exists()


def test_failover_of_a_table_ferry_did_not_replicate_is_refused(
    setup, replica_catalog, source_catalog
):
    assert setup.ferry("replicate")[0] == 0
    customers = replica_catalog.get_table(setup.replica_database, "customers")
    bare = {k: v for k, v in customers.parameters.items() if not k.startswith("ferry.")}
    replica_catalog.alter_table(replace(customers, parameters=bare))
    before = setup.state()
    code, _, err = setup.ferry("failover")
    assert code == 2 and err.count("\n") == 1
    assert "was never replicated by Ferry" in err
    assert setup.state() == before


def test_unknown_table_and_unreachable_replica_are_one_line(setup, local_runtime):
    code, _, err = setup.ferry("failover", "--table", "nope.nothing")
    assert code == 2 and err.count("\n") == 1 and "nope.nothing" in err
    dead = f"thrift://127.0.0.1:{processes.free_port()}"
    config = setup.write("dead.yml", replica={"name": "dr", "hive-metastore-uris": dead})
    code, _, err = setup.ferry("failover", config=config)
    assert code == 2 and err.count("\n") == 1
    assert "the replica catalog dr cannot be reached" in err


def test_failover_promotes_with_a_baseline_and_prints_what_the_replica_holds(
    setup, replica_catalog
):
    assert setup.ferry("replicate")[0] == 0
    code, out, err = setup.ferry("failover", "--json")
    assert code == 0, err
    report = json.loads(out)
    tables = {t["replicaTable"] if "replicaTable" in t else t["replica_table"]: t
              for t in report["tables"]}  # fmt: skip
    orders = tables[f"{setup.replica_database}.orders"]
    replica = replica_catalog.get_table(setup.replica_database, "orders")
    assert replica.parameters[PROMOTED].startswith(report["failoverId"] + "@")
    assert orders["source_version"] == replica.parameters["ferry.source.version"]
    assert orders["rpo_seconds"] is not None
    baseline = Baseline.from_json(fs.read_bytes(orders["baseline_uri"]))
    partitions = replica_catalog.list_partitions(replica)
    assert {p.values for p in baseline.partitions} == {p.values for p in partitions}
    for entry in baseline.partitions:
        [partition] = [p for p in partitions if p.values == entry.values]
        assert entry.location == partition.location
        assert entry.source_fingerprint == partition.parameters["ferry.partition.fingerprint"]
        assert entry.replica_fingerprint.startswith("v1:1:")


def test_a_live_run_holding_a_lock_is_refused_unless_cancelled(setup, replica_catalog):
    assert setup.ferry("replicate")[0] == 0
    from ferry.config import load_config

    config = load_config(setup.config_path)
    store = SqliteStateStore(setup.home_dir / replica_state.LOCAL_STATE_FILE)
    key = replica_state.replica_of(
        config.replica_catalog, config.replication_of(f"{setup.database}.orders"), None
    )
    store.acquire(
        key, "ferry-20261121t083000000z-0000beef", datetime.now(UTC), timedelta(hours=1),
        owner=replica_state.this_process(),
    )  # fmt: skip
    before = setup.state()
    code, _, err = setup.ferry("failover")
    assert code == 2 and "being replicated by event ferry-20261121t083000000z-0000beef" in err
    assert setup.state() == before
    code, out, err = setup.ferry("failover", "--cancel-runs")
    assert code == 0, err
    assert store.lease(key) is None


def test_plan_commit_resolve_and_housekeeping_leave_a_promoted_replica_alone(
    setup, local_runtime, source_catalog, replica_catalog, caplog
):
    from ferry.config import load_config

    assert setup.ferry("replicate")[0] == 0
    replication = load_config(setup.config_path).replication_of(f"{setup.database}.orders")
    # Commit re-checks: a plan made before the promotion is not committed after it.
    plan = plan_replication(replication, source_catalog, replica_catalog, "ferry-x", fixed_clock)
    replica = replica_catalog.get_table(setup.replica_database, "orders")
    promote(
        replica_catalog, replica, "ferry-20261121t083000000z-00000001@2026-11-21T08:30:00+00:00"
    )
    with pytest.raises(PromotedReplicaError, match="promoted by ferry failover"):
        commit(plan, replica_catalog, 100)
    with pytest.raises(PromotedReplicaError):
        plan_replication(replication, source_catalog, replica_catalog, "ferry-y", fixed_clock)
    before = setup.state()
    # Resolve tables leaves it out: the run succeeds and replicates the other table only.
    code, out, err = setup.ferry("replicate", "--json")
    assert code == 0, err
    assert "orders: left out of the run: promoted by ferry failover" in caplog.text
    assert [t["replica_table"] for t in json.loads(out)["tables"]] == [
        f"{setup.replica_database}.customers"
    ]
    assert setup.state()["orders"] == before["orders"]
    code, out, err = setup.ferry("housekeeping", "--json")
    assert code == 0, err
    assert "promoted by ferry failover" in out


def test_failback_refuses_with_the_primary_unreachable(setup, replica_catalog):
    assert setup.ferry("replicate")[0] == 0
    assert setup.ferry("failover")[0] == 0
    before = setup.state()
    dead = f"thrift://127.0.0.1:{processes.free_port()}"
    config = setup.write("dead-source.yml", source={"name": "onprem", "hive-metastore-uris": dead})
    code, _, err = setup.ferry("failback", config=config)
    assert code == 2 and err.count("\n") == 1
    assert "the primary (source) catalog onprem cannot be reached" in err
    assert setup.state() == before


def test_a_baseline_of_ten_thousand_partitions_fits_in_one_document():
    partitions = tuple(
        PartitionBaseline(
            f"dt=2026-01-01/hour={i:05d}",
            ("2026-01-01", f"{i:05d}"),
            f"s3://dr-bucket/warehouse/sales.db/orders/ferry-20261121t083000000z-0000beef/"
            f"dt=2026-01-01/hour={i:05d}",
            f"v1:3:123456:{'a' * 64}",
            f"v1:3:123456:{'b' * 64}",
        )  # fmt: skip
        for i in range(10_000)
    )
    baseline = Baseline("ferry-x", "sales.orders", "sales_dr.orders", True, partitions=partitions)
    data = baseline.to_json()
    assert len(data) < 5 * 1024**2
    assert Baseline.from_json(data) == baseline


def test_failover_waits_for_a_live_run_when_told_to(setup):
    import socket
    import subprocess

    from ferry.config import load_config

    assert setup.ferry("replicate")[0] == 0
    config = load_config(setup.config_path)
    store = SqliteStateStore(setup.home_dir / replica_state.LOCAL_STATE_FILE)
    key = replica_state.replica_of(
        config.replica_catalog, config.replication_of(f"{setup.database}.orders"), None
    )
    run = subprocess.Popen(["sleep", "2"])  # a run of another process, which ends soon
    owner = f"{socket.gethostname()}/{run.pid}/{replica_state._start_ticks(run.pid)}"
    holder = "ferry-20261121t083000000z-0000cafe"
    store.acquire(key, holder, datetime.now(UTC), timedelta(hours=1), owner=owner)
    code, out, err = setup.ferry("failover", "--wait", "PT30S", "--json")
    run.wait()
    assert code == 0, err
    assert json.loads(out)["switch"]["awaited_runs"] == [holder]
    assert store.lease(key) is None


def test_an_iceberg_replica_fails_over_and_its_dr_appends_come_home_with_their_snapshot_ids(
    local_runtime, replica_catalog, tmp_path, unique, capsys
):
    import pyarrow as pa
    from pyiceberg.catalog.hive import HiveCatalog

    from ferry.iceberg.recognise import metadata_location
    from tests.iceberg_tables import create_history_table

    database = f"iceberg_{unique}"
    source_hive = HiveCatalog("source", uri=local_runtime.source_uri, warehouse=tmp_path.as_uri())
    source_hive.create_namespace(database)
    create_history_table(source_hive, f"{database}.history")
    replication = {
        "source-table": {"database-name": database, "table-name": "history"},
        "replica-table": {
            "database-name": f"{database}_dr",
            "table-name": "history",
            "table-location": (tmp_path / "replica" / "history").as_uri(),
        },
    }
    config = tmp_path / "iceberg.yml"
    config.write_text(yaml.safe_dump(config_document(local_runtime, [replication])))
    home = str(tmp_path / "home")

    def ferry(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([*args, str(config), "--home", home])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    assert ferry("replicate")[0] == 0
    code, out, err = ferry("failover", "--json")
    assert code == 0, err
    [table] = json.loads(out)["tables"]
    replica = replica_catalog.get_table(f"{database}_dr", "history")
    current = json.loads(fs.read_bytes(metadata_location(replica)))["current-snapshot-id"]
    assert Baseline.from_json(fs.read_bytes(table["baseline_uri"])).iceberg_snapshot_id == current

    # A writer appends to the promoted replica in DR.
    replica_hive = HiveCatalog("dr", uri=local_runtime.replica_uri)
    dr_table = replica_hive.load_table(f"{database}_dr.history")
    dr_table.append(
        pa.table({"id": pa.array([10], pa.int64()), "region": ["eu"], "amount": [10.0]})
    )
    written_in_dr = dr_table.current_snapshot().snapshot_id

    code, out, err = ferry("failback", "--json")
    assert code == 0, err
    [back] = json.loads(out)["tables"]
    assert back["status"] == "FAILED_BACK"
    assert back["changes"]["snapshotsHome"] == [written_in_dr]
    source = source_hive.load_table(f"{database}.history")
    assert source.current_snapshot().snapshot_id == written_in_dr
    rows = sorted(source.scan(snapshot_id=written_in_dr).to_arrow()["id"].to_pylist())
    assert rows == sorted(dr_table.scan(snapshot_id=written_in_dr).to_arrow()["id"].to_pylist())
    assert 10 in rows
    assert PROMOTED not in replica_catalog.get_table(f"{database}_dr", "history").parameters
    # The original direction resumes with nothing to copy.
    code, out, err = ferry("replicate", "--json")
    assert code == 0, err
    [forward] = json.loads(out)["tables"]
    assert (forward["status"], forward["files"], forward["bytes"]) == ("UNCHANGED", 0, 0)


@pytest.mark.parametrize("point", ["failover.suspended", "failover.baseline"])
def test_failover_killed_part_way_converges_when_run_again(setup, replica_catalog, point):
    from ferry.core import faults

    assert setup.ferry("replicate")[0] == 0
    with faults.armed(faults.Fault(point)), pytest.raises(faults.InjectedFault):
        setup.ferry("failover")
    code, out, err = setup.ferry("failover", "--json")
    assert code == 0, err
    report = json.loads(out)
    for table in report["tables"]:
        replica = replica_catalog.get_table(*table["replica_table"].split("."))
        assert replica.parameters[PROMOTED] == table["promoted"]
        kept = Baseline.from_json(fs.read_bytes(table["baseline_uri"]))
        assert kept.failover_id == table["failover_id"]
    # And once more: nothing changes, the same failover ids.
    again = json.loads(setup.ferry("failover", "--json")[1])
    assert [t["promoted"] for t in again["tables"]] == [t["promoted"] for t in report["tables"]]
    assert all(t["already_promoted"] for t in again["tables"])


def test_failover_never_reads_the_lost_primary(setup, replica_catalog):
    assert setup.ferry("replicate")[0] == 0
    dead = f"thrift://127.0.0.1:{processes.free_port()}"
    config = setup.write("lost.yml", source={"name": "onprem", "hive-metastore-uris": dead})
    code, out, err = setup.ferry("failover", config=config)
    assert code == 0, err
    assert PROMOTED in replica_catalog.get_table(setup.replica_database, "orders").parameters
