"""Bad input through ``ferry`` as a person runs it: one line, the right exit code, nothing changed.

A mistake in the config or on the command line is one ``ferry: error:`` line naming the key,
exit code 2, nothing run. A mistake found only once a table's replication started (it needs
the source or replica catalog to see) fails that table with one line, exit code 1. Either
way both catalogs and both sides' files are exactly as before.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from urllib.parse import urlparse

import boto3
import pytest
import yaml

from tests.e2e import test_cli
from tests.e2e.test_cli import failed_line, ferry

pytestmark = pytest.mark.e2e

# The CLI tests' fixture: a config for the sample tables, and both sides' state to compare.
setup = test_cli.setup


def usage_line(result, path) -> str:
    """The one stderr line of a refused config; nothing ran, so nothing was printed."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"ferry: error: {path}: "), line
    return line.removeprefix(f"ferry: error: {path}: ")


def orders_only(setup, **replica_table):
    """The orders replication alone, its replica-table keys overridden."""
    [orders, _] = setup["replications"]()
    orders["replica-table"].update(replica_table)
    return [orders]


# -- refused when the config loads: exit 2 ------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        (
            "file://tmp/ferry-bad-input/orders",
            "table-replications[0].replica-table.table-location: "
            "'file://tmp/ferry-bad-input/orders' names the host 'tmp'; a local path needs "
            "three slashes: file:///tmp/ferry-bad-input/orders",
        ),
        (
            "ftp://files.example.com/orders",
            "table-replications[0].replica-table.table-location: "
            "'ftp://files.example.com/orders': scheme 'ftp' is not supported; use one of file://",
        ),
        ("s3://", "table-replications[0].replica-table.table-location: 's3://' names no bucket"),
        ("s3:///orders", "table-location: 's3:///orders' names no bucket; write s3://bucket/path"),
        ("file:///", "table-location: 'file:///' is the root folder"),
        ("s3://dr/x/../orders", "table-location: 's3://dr/x/../orders' has an empty, '.' or '..'"),
    ],
    ids=["file-with-host", "ftp", "s3-no-bucket", "s3-empty-bucket", "root", "dot-dot"],
)
def test_a_location_ferry_cannot_write_as_written(setup, write_config, location, expected):
    path = write_config(setup["document"](orders_only(setup, **{"table-location": location})))
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert expected in usage_line(result, path)
    assert setup["state"]() == before
    assert not os.path.exists("/ferry-bad-input")  # where file://tmp/… used to write


@pytest.mark.parametrize(
    ("uris", "expected"),
    [
        (
            "thrift://127.0.0.1:abc",
            "replica-catalog.hive-metastore-uris: 'thrift://127.0.0.1:abc': the port 'abc' is "
            "not a number",
        ),
        (
            "thrift://127.0.0.1:70000",
            "replica-catalog.hive-metastore-uris: 'thrift://127.0.0.1:70000': the port 70000 is "
            "not in 1-65535",
        ),
        ("", "replica-catalog.hive-metastore-uris: no URI given; write thrift://host:port"),
        (" , ,", "replica-catalog.hive-metastore-uris: no URI given"),
    ],
    ids=["port-not-a-number", "port-over-65535", "empty", "only-commas"],
)
def test_a_metastore_uri_that_is_not_thrift_host_port(setup, write_config, uris, expected):
    document = setup["document"]()
    document["replica-catalog"]["hive-metastore-uris"] = uris
    path = write_config(document)
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert expected in usage_line(result, path)
    assert setup["state"]() == before


@pytest.mark.parametrize(
    ("partition_filter", "expected"),
    [
        (
            "dt >= {{ days_ago('x') }}",
            "table-replications[0].source-table.partition-filter: cannot be rendered: "
            "days_ago() takes a whole number first, not 'x'",
        ),
        (
            "dt >= '{{ weeks_ago(1) }}'",
            "table-replications[0].source-table.partition-filter: cannot be rendered: "
            "'weeks_ago' is undefined (the helpers are now_utc(), days_ago(n, fmt), "
            "hours_ago(n, fmt))",
        ),
    ],
    ids=["wrong-argument", "undefined-helper"],
)
def test_a_partition_filter_that_cannot_render(setup, write_config, partition_filter, expected):
    replications = setup["replications"]()
    replications[0]["source-table"]["partition-filter"] = partition_filter
    path = write_config(setup["document"](replications))
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert usage_line(result, path) == expected
    assert setup["state"]() == before


def test_a_malformed_sns_topic(setup, write_config):
    path = write_config(setup["document"](**{"sns-event-listener": {"topic": "ferry-events"}}))
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert usage_line(result, path) == (
        "sns-event-listener.topic: 'ferry-events' is not an SNS topic ARN "
        "(arn:aws:sns:<region>:<12-digit account>:<name>)"
    )
    assert setup["state"]() == before


@pytest.mark.parametrize(
    ("side", "key", "name", "expected"),
    [
        (
            "replica-table",
            "table-name",
            "orders-dr",
            "table-replications[0].replica-table.table-name: 'orders-dr' is not a valid Hive name",
        ),
        (
            "replica-table",
            "database-name",
            "sales dr",
            "table-replications[0].replica-table.database-name: 'sales dr' is not a valid Hive "
            "name",
        ),
        (
            "source-table",
            "table-name",
            "ordérs",
            "table-replications[0].source-table.table-name: 'ordérs' is not a valid Hive name",
        ),
    ],
    ids=["replica-table-hyphen", "replica-database-space", "source-table-accent"],
)
def test_a_name_the_metastore_would_reject(setup, write_config, side, key, name, expected):
    replications = setup["replications"]()
    replications[0][side][key] = name
    path = write_config(setup["document"](replications))
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert expected in usage_line(result, path)
    assert setup["state"]() == before


def test_a_table_that_is_its_own_replica(setup, write_config, local_runtime, sample):
    document = setup["document"](orders_only(setup, **{"database-name": sample.database.upper()}))
    document["replica-catalog"]["hive-metastore-uris"] = local_runtime.source_uri
    path = write_config(document)
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert usage_line(result, path).startswith(
        f"table-replications[0].replica-table: the replica table {sample.database}.orders is "
        "the source table itself (source-catalog and replica-catalog are the same catalog)"
    )
    assert setup["state"]() == before


def test_one_replica_named_twice_in_another_case(setup, write_config):
    replications = setup["replications"]()
    replications[1]["replica-table"].update(
        {"database-name": setup["replica_db"].upper(), "table-name": "Orders"}
    )
    path = write_config(setup["document"](replications))
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert usage_line(result, path) == (
        f"two table-replications write the same replica table {setup['replica_db'].upper()}"
        f".Orders (as {setup['replica_db']}.orders; Hive names are case-insensitive): "
        "table-replications[0] and table-replications[1]"
    )
    assert setup["state"]() == before


def test_a_config_that_is_not_utf8(setup, tmp_path):
    text = yaml.safe_dump(setup["document"](), sort_keys=False)
    path = tmp_path / "latin1.yml"
    path.write_bytes(b"# r\xe9plication des commandes\n" + text.encode())
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert usage_line(result, path) == (
        "not UTF-8 text: byte 0xe9 on line 1; save the config as UTF-8"
    )
    assert setup["state"]() == before


def test_local_up_with_a_port_over_65535(tmp_path):
    home = tmp_path / "home"
    result = ferry("local", "up", "--home", str(home), "--source-port", "70000")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "ferry local: error: argument --source-port: 70000 is not a port number (1-65535); "
        "see 'ferry local --help'"
    ]
    assert not home.exists()  # nothing started


# -- found once the table's replication started: that table fails, exit 1 ---------------------


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (
            lambda orders: orders,
            "ReplicaLocationError: replica-table.table-location {target} is the location of "
            "source table {table} ({source}); Ferry would write its snapshots into the source",
        ),
        (
            lambda orders: f"{orders}/replica",
            "ReplicaLocationError: replica-table.table-location {target} is inside the location "
            "of source table {table} ({source}); Ferry would write its snapshots into the source",
        ),
        (
            lambda orders: orders.rsplit("/", 2)[0],
            "ReplicaLocationError: the location of source table {table} ({source}) is inside "
            "replica-table.table-location {target}; each run would copy the replica's earlier "
            "snapshots",
        ),
    ],
    ids=["the-source-location", "inside-the-source", "around-the-source"],
)
def test_a_replica_location_overlapping_the_source(
    setup, write_config, source_catalog, sample, where, expected
):
    source = source_catalog.get_table(sample.database, "orders").location
    target = where(sample.orders.location)
    path = write_config(setup["document"](orders_only(setup, **{"table-location": target})))
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert result.returncode == 1
    line = failed_line(result)
    assert line.endswith(
        expected.format(target=target, table=f"{sample.database}.orders", source=source)
    )
    assert setup["state"]() == before  # the source's own files included


def test_a_replica_of_another_source_table(setup, write_config, sample):
    first = ferry(
        "replicate",
        str(write_config(setup["document"](), "first.yml")),
        "--table",
        f"{sample.database}.customers",
    )
    assert first.returncode == 0, first.stderr
    path = write_config(setup["document"](orders_only(setup, **{"table-name": "Customers"})))
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert result.returncode == 1
    assert failed_line(result).endswith(
        f"ReplicaGuardError: replica table {setup['replica_db']}.customers is the replica of "
        f"{sample.database}.customers, not of {sample.database}.orders; "
        "Ferry will not overwrite it"
    )
    assert setup["state"]() == before


@pytest.fixture
def silent_port():
    """A port that accepts connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


@pytest.mark.parametrize("service", ["aws-emulator-http", "silent-listener"])
def test_a_metastore_uri_that_is_not_a_metastore(
    setup, write_config, local_runtime, sample, silent_port, service
):
    port = urlparse(local_runtime.endpoint).port if service == "aws-emulator-http" else silent_port
    document = setup["document"]()
    document["replica-catalog"]["hive-metastore-uris"] = f"thrift://127.0.0.1:{port}"
    before = setup["state"]()
    started = time.monotonic()
    result = ferry("replicate", str(write_config(document)), "--table", f"{sample.database}.orders")
    assert time.monotonic() - started < 60  # not the 600 s call timeout
    assert result.returncode == 1
    assert failed_line(result).endswith(
        f"NotAMetastoreError: cannot reach Hive metastore 'dr' at thrift://127.0.0.1:{port} "
        "(connected, but it did not answer like a Hive metastore within 10 s)"
    )
    assert setup["state"]() == before


# -- refused before anything is planned or written: exit 2, nothing created -------------------


def test_plan_with_a_table_name_pattern_plans_each_table_it_selects(setup, write_config, sample):
    path = write_config(setup["document"]([test_cli.pattern_replication(sample, setup)]))
    before = setup["state"]()
    result = ferry("plan", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    heads = [line.split("  ")[0] for line in result.stdout.splitlines() if line.startswith("•")]
    assert heads == [
        f"• {sample.database}.customers → {setup['replica_db']}.customers",
        f"• {sample.database}.orders → {setup['replica_db']}.orders",
    ]
    assert setup["state"]() == before


def test_a_refused_run_creates_no_home_no_work_folder_and_no_database(
    setup, write_config, sample, tmp_path
):
    path = write_config(
        setup["document"](
            [
                test_cli.pattern_replication(sample, setup, "orders|customers", ()),
                test_cli.pattern_replication(sample, setup, ".*orders", ()),
            ]
        )
    )
    home, work = tmp_path / "home", tmp_path / "work"
    before = setup["state"]()
    result = ferry("replicate", str(path), "--home", str(home), "--work-uri", work.as_uri())
    assert usage_line(result, path).startswith(
        "table-replications[0] and table-replications[1] both write the replica table"
    )
    assert not home.exists() and not work.exists()
    assert setup["state"]() == before  # the replica database included


def test_a_state_store_of_another_schema_is_refused_before_anything_is_planned(
    setup, write_config, tmp_path
):
    """Found only after a commit, the ledger could not be written: the replica switched, and the
    run reported failure. Checked first, nothing is switched."""
    home = tmp_path / "home"
    home.mkdir()
    with sqlite3.connect(home / "state.sqlite3") as connection:
        connection.execute("CREATE TABLE ledger (replica TEXT, location TEXT)")
    store = (home / "state.sqlite3").read_bytes()
    path = write_config(setup["document"]())
    before = setup["state"]()
    result = ferry("replicate", str(path), "--home", str(home))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(
        f"ferry: error: state store {home}/state.sqlite3: not Ferry's state store: its table "
        "ledger has the columns (replica, location), Ferry's has (replica key, path key,"
    )
    assert setup["state"]() == before
    assert os.listdir(home) == ["state.sqlite3"]
    assert (home / "state.sqlite3").read_bytes() == store


def test_a_state_table_of_another_key_is_refused_before_anything_is_planned(
    setup, write_config, unique, tmp_path
):
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    table = f"other-{unique}"
    dynamodb.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    path = write_config(setup["document"]())
    before = setup["state"]()
    home = tmp_path / "home"
    for state_table, expected in (
        (table, "its key is id (S, hash key), not Ferry's: pk (S, hash key) and sk (S, range key)"),
        (f"missing-{unique}", "no such DynamoDB table in us-east-1"),
    ):
        result = ferry("replicate", str(path), "--state-table", state_table, "--home", str(home))
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stdout == ""
        [line] = result.stderr.splitlines()
        assert line.startswith(f"ferry: error: --state-table {state_table}: {expected}"), line
    assert setup["state"]() == before
    assert dynamodb.scan(TableName=table)["Items"] == []
    assert not home.exists()


def test_a_glue_catalog_id_that_is_not_an_account_touches_no_catalog(setup, write_config, aws):
    glue = {"region": "us-east-1", "catalog-id": "dr-account"}
    path = write_config(setup["document"](None, replica={"name": "aws", "glue": glue}))
    databases = aws["glue"].get_databases()["DatabaseList"]
    before = setup["state"]()
    result = ferry("replicate", str(path))
    assert usage_line(result, path) == (
        "replica-catalog.glue.catalog-id: 'dr-account' is not an AWS account id: a catalog id is "
        'the 12 digits of the account whose catalog it is, e.g. "123456789012" (quoted)'
    )
    assert aws["glue"].get_databases()["DatabaseList"] == databases
    assert setup["state"]() == before


# -- ferry execute: refused before the config is uploaded or an execution started -------------


@pytest.fixture
def executions(pipeline, local_runtime):
    """The local pipeline's executions and uploaded configs, to show that none was added."""
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    s3 = boto3.client("s3", region_name="us-east-1")
    bucket = pipeline.work_uri.removeprefix("s3://").partition("/")[0]

    def listed():
        runs = sfn.list_executions(stateMachineArn=pipeline.state_machine_arn)["executions"]
        objects = s3.list_objects_v2(Bucket=bucket, Prefix="configs/").get("Contents", [])
        return [run["executionArn"] for run in runs], [o["Key"] for o in objects]

    return listed


def test_execute_refuses_two_patterns_writing_one_replica_before_starting(
    setup, write_config, sample, local_runtime, executions
):
    path = write_config(
        setup["document"](
            [
                test_cli.pattern_replication(sample, setup, "orders|customers", ()),
                test_cli.pattern_replication(sample, setup, ".*orders", ()),
            ]
        )
    )
    before, started = setup["state"](), executions()
    for tables in ([], ["--table", f"{sample.database}.orders"]):
        result = ferry(
            "execute", str(path), "--home", str(local_runtime.state_dir), "--wait", *tables
        )
        assert usage_line(result, path) == (
            f"table-replications[0] and table-replications[1] both write the replica table "
            f"{setup['replica_db']}.orders (from {sample.database}.orders); exclude the table "
            "from one of them"
        )
    assert executions() == started
    assert setup["state"]() == before


def test_execute_says_in_one_line_why_the_state_machine_refused_a_config(
    setup, write_config, local_runtime, pipeline
):
    """A placeholder this shell sets and the pipeline's functions do not: Resolve tables refuses
    the config, and its error is one line (not the function's payload), exit code 2."""
    replications = setup["replications"]()
    replications[0]["replica-table"]["table-location"] = "${FERRY_BAD_INPUT_ROOT}/orders"
    path = write_config(setup["document"](replications))
    before = setup["state"]()
    result = ferry(
        "execute",
        str(path),
        "--home",
        str(local_runtime.state_dir),
        "--wait",
        env={"FERRY_BAD_INPUT_ROOT": setup["target"]},
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("ferry: error: s3://")
    assert line.endswith(
        "table-replications[0].replica-table.table-location: ${FERRY_BAD_INPUT_ROOT} is not set "
        "in the environment (write ${NAME:default} for a default)"
    )
    assert setup["state"]() == before


# -- printed as written: a path or an error is text, never rich markup -------------------------


def test_brackets_in_paths_and_errors_are_printed_after_a_commit_and_every_table_runs(
    setup, write_config, sample, tmp_path
):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    replications = setup["replications"]()
    replications[0]["replica-table"]["table-location"] = f"{setup['target']}/[/x]/orders"
    replications[1]["replica-table"]["table-location"] = f"{blocker.as_uri()}/[/y]/customers"
    result = ferry("replicate", str(write_config(setup["document"](replications))))
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"✓ {sample.database}.orders → {setup['replica_db']}.orders")
    assert f"replica location {setup['target']}/[/x]/orders/ferry-" in lines[1]
    assert f"cannot write {blocker.as_uri()}/[/y]/customers/ferry-" in failed_line(result)
    assert lines[-1].startswith("2 tables: 1 replicated, 1 failed")
    assert blocker.read_text() == "x"
