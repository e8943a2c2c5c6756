"""``ferry`` as a person runs it: exit codes, one-line errors, and nothing changed on failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ferry.core.model import Database
from ferry.local.processes import free_port
from tests.helpers import catalog_state, config_document, files_below

pytestmark = pytest.mark.e2e

# As a Circus Train user writes it: quoted, since " #" would start a YAML comment.
SPEL_FILTER = r"""    partition-filter: "dt = '#{ #nowUtc().minusDays(1).toString(\"yyyy-MM-dd\") }'"
"""


def ferry(*args: str, env: dict[str, str] | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


@pytest.fixture
def setup(local_runtime, sample, tmp_path, write_config, source_catalog, replica_catalog):
    """A config for the sample tables, and a snapshot of both sides to compare against."""
    target = (tmp_path / "replica-data").as_uri()
    replica_db = f"{sample.database}_dr"

    def replications(**overrides):
        orders = {
            "source-table": {"database-name": sample.database, "table-name": "orders"},
            "replica-table": {"database-name": replica_db, "table-location": f"{target}/orders"},
        }
        customers = {
            "source-table": {"database-name": sample.database, "table-name": "customers"},
            "replica-table": {"database-name": replica_db, "table-location": f"{target}/customers"},
        }
        return [orders, customers]

    def state():
        return (
            catalog_state(source_catalog, sample.database, ["orders", "customers", "big_orders"]),
            catalog_state(replica_catalog, replica_db, ["orders", "customers"]),
            files_below(target),
            files_below(sample.orders.location),
        )

    return {
        "target": target,
        "replica_db": replica_db,
        "replications": replications,
        "state": state,
        "document": lambda reps=None, **extra: config_document(
            local_runtime, reps or replications(), **extra
        ),
    }


def test_replicate_prints_what_it_did_and_exits_0(setup, write_config, sample):
    result = ferry("replicate", str(write_config(setup["document"]())))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        f"✓ {sample.database}.orders → {setup['replica_db']}.orders  [FULL]  3 partitions (3 new, 0 updated), 3 files"
    )
    assert lines[-1].startswith("2 tables: 2 replicated, 0 failed; 3 partitions, 4 files,")
    assert result.stderr == ""


def test_json_output_for_machines(setup, write_config, sample):
    result = ferry(
        "replicate",
        str(write_config(setup["document"]())),
        "--json",
        "--table",
        f"{sample.database}.customers",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["succeeded"], report["failed"]) == (1, 0)
    [table] = report["tables"]
    assert (
        table["source_table"] == f"{sample.database}.customers" and table["status"] == "SUCCEEDED"
    )
    assert table["files"] == 1 and table["replica_location"].startswith(
        setup["target"] + "/customers/ferry-"
    )
    assert set(files_below(setup["target"])) == {f"{table['replica_location']}/part-00000.parquet"}


def test_dry_run_reports_and_writes_nothing(setup, write_config):
    before = setup["state"]()
    result = ferry("replicate", str(write_config(setup["document"]())), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "would replicate 3 partitions (3 new, 0 updated), 3 files" in result.stdout
    assert "2 tables: 2 planned, 0 failed" in result.stdout
    assert setup["state"]() == before


def test_circus_train_keys_ferry_does_not_use_are_one_warning_each(setup, write_config, sample):
    replications = setup["replications"]()
    replications[0]["copier-options"] = {"file-attribute": "replication, blocksize"}
    replications[0]["replica-table"]["table-location"] = "${DR_ROOT}/orders"
    path = write_config(
        setup["document"](
            replications,
            security={"credential-provider": "jceks://hdfs/etl/aws.jceks"},
            graphite={"host": "graphite:2003", "namespace": "com.company.ct"},
        )
    )
    result = ferry("replicate", str(path), "--dry-run", env={"DR_ROOT": setup["target"]})
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert [line.split(": ")[3] for line in lines] == [
        "security",
        "graphite",
        "table-replications[0].copier-options.file-attribute",
    ]
    assert all(line.startswith(f"ferry: warning: {path}: ") for line in lines)
    assert lines[1].endswith("to CloudWatch, namespace Ferry")
    assert f"would point at {setup['target']}/orders/<event-id>" in result.stdout
    assert "2 tables: 2 planned, 0 failed" in result.stdout


def pattern_replication(sample, setup, pattern=".*", exclude=("big_orders",)):
    return {
        "source-table": {
            "database-name": sample.database,
            "table-name-pattern": pattern,
            "exclude": list(exclude),
        },
        "replica-table": {
            "database-name": setup["replica_db"],
            "table-location": f"{setup['target']}/{sample.database}",
        },
    }


def test_a_table_name_pattern_in_dry_runs_and_table_selection(setup, write_config, sample):
    path = write_config(setup["document"]([pattern_replication(sample, setup)]))
    before = setup["state"]()
    dry = ferry("replicate", str(path), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    heads = [line.split("  ")[0] for line in dry.stdout.splitlines() if line.startswith("•")]
    assert heads == [
        f"• {sample.database}.customers → {setup['replica_db']}.customers",
        f"• {sample.database}.orders → {setup['replica_db']}.orders",
    ]
    assert "2 tables: 2 planned, 0 failed" in dry.stdout
    assert setup["state"]() == before

    one = ferry("replicate", str(path), "--table", f"{sample.database}.ORDERS")
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith(
        f"✓ {sample.database}.orders → {setup['replica_db']}.orders  [FULL]  3 partitions"
    )
    assert "1 table: 1 replicated, 0 failed" in one.stdout
    assert all(
        uri.startswith(f"{setup['target']}/{sample.database}/orders/ferry-")
        for uri in files_below(setup["target"])
    )

    excluded = ferry("replicate", str(path), "--table", f"{sample.database}.big_orders")
    assert excluded.returncode == 2
    assert f"--table {sample.database}.big_orders: not in the config" in excluded.stderr


def test_two_patterns_writing_one_replica_are_refused_before_anything_runs(
    setup, write_config, sample
):
    path = write_config(
        setup["document"](
            [
                pattern_replication(sample, setup, "orders|customers", ()),
                pattern_replication(sample, setup, ".*orders", ()),
            ]
        )
    )
    before = setup["state"]()
    expected = (
        f"ferry: error: {path}: table-replications[0] and table-replications[1] both write the "
        f"replica table {setup['replica_db']}.orders (from {sample.database}.orders); exclude "
        "the table from one of them"
    )
    for arguments in (["--dry-run"], []):
        result = ferry("replicate", str(path), *arguments)
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.splitlines() == [expected]
    assert setup["state"]() == before


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda text: text + "\n  - [unclosed", "invalid YAML"),
        (
            lambda text: text.replace("table-name: orders", "table-name: orders\n    colour: red"),
            "unknown key 'colour' in table-replications[0].source-table",
        ),
        (
            lambda text: text.replace("table-name: orders", ""),
            "missing key 'table-name' in table-replications[0].source-table",
        ),
        (
            lambda text: text.replace("table-name: orders", "table-name: orders\n" + SPEL_FILTER),
            "Circus Train SpEL expressions are not supported; write \"dt = '{{ days_ago(1, '%Y-%m-%d') }}'\" instead",
        ),
    ],
    ids=["invalid-yaml", "unknown-key", "missing-table-name", "spel-filter"],
)
def test_bad_config_is_one_line_exit_2_and_nothing_runs(
    setup, write_config, tmp_path, mutate, expected
):
    import yaml

    text = mutate(yaml.safe_dump(setup["document"](), sort_keys=False))
    path = tmp_path / "bad.yml"
    path.write_text(text)
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"ferry: error: {path}: ") and expected in line
    assert setup["state"]() == before


def test_unknown_table_selection_is_a_usage_error(setup, write_config):
    result = ferry("replicate", str(write_config(setup["document"]())), "--table", "nope.nope")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("ferry: error: --table nope.nope: not in the config")


def failed_line(result) -> str:
    """The one line that names a failed table (stdout), with no traceback anywhere."""
    assert "Traceback" not in result.stdout + result.stderr
    failures = [line for line in result.stdout.splitlines() if line.startswith("✗")]
    assert len(failures) == 1, result.stdout
    return failures[0]


def test_unreachable_metastore(setup, write_config, local_runtime):
    port = free_port()
    document = setup["document"]()
    document["replica-catalog"]["hive-metastore-uris"] = f"thrift://127.0.0.1:{port}"
    before = setup["state"]()
    result = ferry(
        "replicate",
        str(write_config(document)),
        "--table",
        document["table-replications"][0]["source-table"]["database-name"] + ".orders",
    )
    assert result.returncode == 1
    assert (
        f"CatalogUnreachableError: cannot reach Hive metastore 'dr' at thrift://127.0.0.1:{port}"
        in failed_line(result)
    )
    assert setup["state"]() == before


def test_missing_source_table(setup, write_config, sample):
    replications = setup["replications"]()
    replications[0]["source-table"]["table-name"] = "ghost"
    before = setup["state"]()
    result = ferry(
        "replicate",
        str(write_config(setup["document"](replications))),
        "--table",
        f"{sample.database}.ghost",
    )
    assert result.returncode == 1
    assert (
        f"SourceTableNotFoundError: source table {sample.database}.ghost not found in catalog 'onprem'"
        in failed_line(result)
    )
    assert setup["state"]() == before


def test_replica_owned_by_someone_else_fails_alone(
    setup, write_config, replica_catalog, sample, tmp_path
):
    from ferry.core.model import StorageDescriptor, Table, TableType

    replica_catalog.create_database(Database(setup["replica_db"]))
    replica_catalog.create_table(
        Table(
            setup["replica_db"],
            "orders",
            TableType.EXTERNAL,
            StorageDescriptor((tmp_path / "theirs").as_uri(), serde_library="x"),
            parameters={"team": "theirs"},
        )
    )
    before = setup["state"]()
    result = ferry("replicate", str(write_config(setup["document"]())))
    assert result.returncode == 1
    assert (
        f"ReplicaGuardError: replica table {setup['replica_db']}.orders exists but is not a replica"
        in failed_line(result)
    )
    assert "1 replicated, 1 failed" in result.stdout  # customers went on
    _, replica_after, files_after, _ = setup["state"]()
    assert replica_after["orders"] == before[1]["orders"]
    assert not any("/orders/" in uri for uri in files_after)


def test_unwritable_target_location(setup, write_config, tmp_path, sample):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    replications = setup["replications"]()
    replications[0]["replica-table"]["table-location"] = f"{blocker.as_uri()}/orders"
    before = setup["state"]()
    result = ferry(
        "replicate",
        str(write_config(setup["document"](replications))),
        "--table",
        f"{sample.database}.orders",
    )
    assert result.returncode == 1
    assert f"TargetNotWritableError: cannot write {blocker.as_uri()}/orders/ferry-" in failed_line(
        result
    )
    assert setup["state"]() == before
    assert blocker.read_text() == "x"


def test_local_runtime_up_status_down(tmp_path):
    home = tmp_path / "home"
    ports = [str(free_port()) for _ in range(3)]
    port_args = [
        "--home",
        str(home),
        "--source-port",
        ports[0],
        "--replica-port",
        ports[1],
        "--aws-port",
        ports[2],
    ]
    try:
        up = ferry("local", "up", *port_args)
        assert up.returncode == 0, up.stderr
        assert f"export AWS_ENDPOINT_URL=http://127.0.0.1:{ports[2]}" in up.stdout
        assert f"thrift://localhost:{ports[0]}" in up.stdout
        status = ferry("local", "status", "--home", str(home), "--json")
        services = {s["name"]: s for s in json.loads(status.stdout)["services"]}
        assert all(s["running"] for s in services.values())
        assert services["replica"]["url"] == f"thrift://localhost:{ports[1]}"
        again = ferry("local", "up", *port_args)  # already up: starts nothing new
        assert again.returncode == 0
        assert json.loads(ferry("local", "status", "--home", str(home), "--json").stdout)[
            "services"
        ] == list(services.values())
    finally:
        down = ferry("local", "down", "--home", str(home))
    assert down.stdout.strip() == "stopped: aws, replica, source"
    after = json.loads(ferry("local", "status", "--home", str(home), "--json").stdout)
    assert not any(s["running"] for s in after["services"])
    assert ferry("local", "down", "--home", str(home)).stdout.strip() == "nothing was running"


def test_plan_says_what_would_be_copied_and_why_and_changes_nothing(setup, write_config, sample):
    config = str(write_config(setup["document"]()))
    assert ferry("replicate", config).returncode == 0
    day = sample.days[-1]
    rewrite = sample.orders.location + f"/dt={day}/part-00000.parquet"
    from ferry.local.samples import order_rows, write_parquet

    write_parquet(rewrite.rsplit("/", 1)[0], "part-00000.parquet", order_rows(day, count=9))
    before = setup["state"]()
    result = ferry("plan", config)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        f"• {sample.database}.orders → {setup['replica_db']}.orders  [FULL]  would copy 1 file,"
    )
    assert "partitions: 1 data changed; 2 unchanged" in result.stdout
    assert f"data changed      dt={day}  1 file," in result.stdout
    assert (
        f"= {sample.database}.customers → {setup['replica_db']}.customers  [FULL]  unchanged"
        in result.stdout
    )
    report = json.loads(ferry("plan", config, "--json").stdout)
    orders = next(t for t in report["tables"] if t["sourceTable"].endswith(".orders"))
    assert orders["copier"] == "inline" and orders["changes"] == [
        {
            "values": [day],
            "name": f"dt={day}",
            "change": "data changed",
            "files": 1,
            "bytes": orders["bytes"],
        }
    ]
    assert setup["state"]() == before
