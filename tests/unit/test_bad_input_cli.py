"""Bad input through ``ferry`` as a person types it, where no metastore is needed.

Every mistake — a command-line option, a state store Ferry cannot use, a config that is too
large or not what it looks like — is one ``ferry: error:`` (or argparse's ``ferry …:
error:``) line on stderr naming the option, key or file, exit code 2, and nothing created or
changed: no home folder, no work folder, no state file, the files that were there as they
were. The CLI runs in process (``ferry.commands.cli.main``) in an empty folder of its own.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import boto3
import pytest
import yaml
from moto import mock_aws

from ferry.commands.cli import main
from ferry.config import parse_config
from ferry.local.processes import free_port
from ferry.replicas.ledger import SqliteStateStore

TABLES = [
    {
        "source-table": {"database-name": "sales", "table-name": "orders"},
        "replica-table": {"database-name": "sales_dr", "table-location": "file:///tmp/x/orders"},
    },
    {
        "source-table": {"database-name": "sales", "table-name": "customers"},
        "replica-table": {
            "database-name": "sales_dr",
            "table-location": "file:///tmp/x/customers",
        },
    },
]


def document(**overrides) -> dict:
    """A valid config whose metastores refuse connections (nothing listens on their ports)."""
    return {
        "source-catalog": {
            "name": "onprem",
            "hive-metastore-uris": f"thrift://127.0.0.1:{free_port()}",
        },
        "replica-catalog": {
            "name": "dr",
            "hive-metastore-uris": f"thrift://127.0.0.1:{free_port()}",
        },
        "table-replications": TABLES,
        **overrides,
    }


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    """An empty working folder, and an AWS SDK that reaches nothing real."""
    monkeypatch.chdir(tmp_path)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_REGION", raising=False)
    return tmp_path


def write(here: Path, data: dict, name: str = "replication.yml") -> Path:
    path = here / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) below ``root``: what "nothing changed" compares."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        found[str(path.relative_to(root))] = path.read_bytes() if path.is_file() else None
    return found


def refused(capsys, *argv: str) -> str:
    """The one stderr line of a refused command (exit 2, nothing on stdout)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert out == ""
    assert "Traceback" not in err
    [line] = err.splitlines()
    return line


# -- the state store ---------------------------------------------------------------------------


def _garbage(path: Path) -> None:
    path.write_bytes(b"this is not a SQLite database, it only sits where one should be\n" * 4)


def _a_folder(path: Path) -> None:
    path.mkdir()


def _another_schema(path: Path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE ledger (replica TEXT, location TEXT)")


def _another_program(path: Path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE bookmarks (url TEXT)")


def _damaged(path: Path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE ledger (replica TEXT NOT NULL, path TEXT NOT NULL, event_id TEXT NOT "
            "NULL, replica_table TEXT NOT NULL, recorded_at TEXT NOT NULL, snapshot TEXT, "
            "PRIMARY KEY (replica, path))"
        )
        connection.executemany(
            "INSERT INTO ledger VALUES (?, ?, 'e', 't', 'now', NULL)",
            [("r", f"s3://b/{'x' * 200}/{n}") for n in range(400)],
        )
    data = bytearray(path.read_bytes())
    page = 4096
    data[3 * page : 6 * page] = b"\xff" * (3 * page)  # index and table pages, overwritten
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (_garbage, "cannot be read as a SQLite database: file is not a database"),
        (_a_folder, "is not a file"),
        (
            _another_schema,
            "not Ferry's state store: its table ledger has the columns (replica, location)",
        ),
        (_another_program, "not Ferry's state store: it holds the tables bookmarks"),
        (_damaged, ""),
    ],
    ids=["not-sqlite", "a-folder", "another-schema", "another-programs", "damaged"],
)
@pytest.mark.parametrize(
    "command",
    [["replicate"], ["replicate", "--dry-run"], ["housekeeping"]],
    ids=["replicate", "dry-run", "housekeeping"],
)
def test_a_state_store_ferry_cannot_use(here, capsys, make, expected, command):
    config = write(here, document())
    home = here / "home"
    home.mkdir()
    make(home / "state.sqlite3")
    before = tree(here)
    line = refused(capsys, *command, str(config), "--home", str(home))
    assert line.startswith(f"ferry: error: state store {home}/state.sqlite3: "), line
    assert expected in line
    assert tree(here) == before


def _read_only(path: Path) -> None:
    """Make ``path`` read-only, also for root (the immutable attribute), or skip."""
    path.chmod(0o444)
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("root writes into read-only files, and chattr is not here")
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("root writes into read-only files, and this file system has no chattr +i")


def test_a_read_only_state_store(here, capsys):
    config = write(here, document())
    home = here / "home"
    home.mkdir()
    store = home / "state.sqlite3"
    SqliteStateStore(store).entries("any")  # created by a run, as Ferry creates it
    _read_only(store)
    before = tree(here)
    try:
        line = refused(capsys, "replicate", str(config), "--home", str(home))
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(store)], check=False)
        store.chmod(0o644)
    assert line == (
        f"ferry: error: state store {store}: cannot be written: attempt to write a readonly "
        "database"
    )
    assert tree(here) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_state_store(here, capsys):
    config = write(here, document())
    home = here / "home"
    home.mkdir()
    store = home / "state.sqlite3"
    SqliteStateStore(store).entries("any")
    before = tree(here)
    store.chmod(0)
    try:
        line = refused(capsys, "replicate", str(config), "--home", str(home))
    finally:
        store.chmod(0o644)
    assert line.startswith(f"ferry: error: state store {store}: cannot be read"), line
    assert tree(here) == before


def test_settings_that_are_not_one_yaml_mapping_are_one_line(tmp_path):
    from infra.settings import SettingsError, load_settings

    for text, expected in (
        (_alias_bomb(), "with its YAML aliases (*name) expanded"),
        ("name: [unclosed", "invalid YAML"),
        ("- a list", "the settings must be one YAML mapping"),
    ):
        path = tmp_path / "bad.yml"
        path.write_text(text)
        with pytest.raises(SettingsError) as raised:
            load_settings(path, "bad")
        assert expected in str(raised.value) and "\n" not in str(raised.value)


def test_an_earlier_ferrys_state_store_passes_and_is_upgraded_on_first_use(tmp_path):
    path = tmp_path / "state.sqlite3"
    with sqlite3.connect(path) as connection:  # before snapshots and created folders were kept
        connection.execute(
            "CREATE TABLE ledger (replica TEXT NOT NULL, path TEXT NOT NULL, event_id TEXT NOT "
            "NULL, replica_table TEXT NOT NULL, recorded_at TEXT NOT NULL, "
            "PRIMARY KEY (replica, path))"
        )
        connection.execute(
            "CREATE TABLE locks (replica TEXT PRIMARY KEY, holder TEXT NOT NULL, acquired_at "
            "TEXT NOT NULL, expires_at REAL NOT NULL, owner TEXT)"
        )
    before = tree(tmp_path)
    store = SqliteStateStore(path)
    store.check()
    assert tree(tmp_path) == before  # the check reads only
    assert store.created("r") == [] and store.recording_since("r") is None
    with sqlite3.connect(path) as connection:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(ledger)")]
    assert columns[-2:] == ["snapshot", "intent"]
    SqliteStateStore(path).check()  # the upgraded file is Ferry's too


def test_a_missing_state_store_is_created_on_first_use_not_by_its_check(tmp_path):
    store = SqliteStateStore(tmp_path / "home" / "state.sqlite3")
    store.check()
    assert not (tmp_path / "home").exists()
    assert store.entries("r") == []
    assert (tmp_path / "home" / "state.sqlite3").is_file()


# -- command-line options ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["replicate", "{config}"],
        ["replicate", "{config}", "--dry-run"],
        ["housekeeping", "{config}"],
        ["execute", "{config}"],
        ["local", "status"],
        ["local", "up"],
        ["doctor", "--environment", "local"],
        ["demo"],
    ],
    ids=["replicate", "dry-run", "housekeeping", "execute", "local-status", "local-up",
         "doctor", "demo"],
)  # fmt: skip
@pytest.mark.parametrize("below", [False, True], ids=["the-file", "below-a-file"])
def test_a_home_that_is_a_file(here, capsys, argv, below):
    config = write(here, document())
    blocker = here / "home"
    blocker.write_text("not a folder")
    home = blocker / "state" if below else blocker
    before = tree(here)
    line = refused(capsys, *[a.format(config=config) for a in argv], "--home", str(home))
    command = argv[0]
    assert line.startswith(f"ferry {command}: error: argument --home: '{home}' "), line
    assert (f"{blocker} is a file" if below else "is a file, not a folder") in line
    assert tree(here) == before


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("work", "'work' is not a URI; give file:///absolute/path or s3://bucket/prefix"),
        ("ftp://files.example.com/work", "scheme 'ftp' is not supported"),
        ("s3://Ferry_Work/runs", "'Ferry_Work' is not a bucket name"),
        ("s3:///runs", "names no bucket"),
        ("file:/tmp/work", "write a local folder with three slashes, file:///tmp/work"),
        ("file://tmp/work", "names the host 'tmp'"),
        ("file:///", "is the root folder"),
    ],
    ids=["relative", "ftp", "bucket-name", "no-bucket", "hive-file", "file-host", "root"],
)
@pytest.mark.parametrize("command", ["replicate", "housekeeping"])
def test_a_work_uri_ferry_cannot_write(here, capsys, uri, expected, command):
    config = write(here, document())
    before = tree(here)
    line = refused(capsys, command, str(config), "--work-uri", uri, "--home", str(here / "home"))
    assert line.startswith(f"ferry {command}: error: argument --work-uri: "), line
    assert expected in line
    assert tree(here) == before  # no home, no work folder where a relative path points


@pytest.mark.parametrize("uri", ["file:///tmp/work", "work", "s3://Ferry_Work/x"])
def test_execute_takes_only_an_s3_work_uri(here, capsys, uri):
    config = write(here, document())
    before = tree(here)
    line = refused(
        capsys,
        "execute",
        str(config),
        "--state-machine-arn",
        "arn:aws:states:us-east-1:123456789012:stateMachine:ferry-prod-replication",
        "--work-uri",
        uri,
    )
    assert line.startswith("ferry execute: error: argument --work-uri: "), line
    assert tree(here) == before


def test_a_state_machine_arn_that_is_not_one(here, capsys):
    config = write(here, document())
    line = refused(
        capsys,
        "execute",
        str(config),
        "--state-machine-arn",
        "ferry-prod",
        "--work-uri",
        "s3://w/x",
    )
    assert line.startswith("ferry execute: error: argument --state-machine-arn: 'ferry-prod' is")


def test_a_work_location_below_a_file(here, capsys):
    config = write(here, document())
    blocker = here / "runs"
    blocker.write_text("not a folder")
    before = tree(here)
    work = f"file://{blocker}/work"
    line = refused(capsys, "replicate", str(config), "--work-uri", work, "--home", str(here / "h"))
    assert line == f"ferry: error: work location {work}: {blocker} is a file, not a folder"
    assert tree(here) == before


@pytest.mark.parametrize(
    ("lease", "expected"),
    [
        ("PT0S", "'PT0S' is not a positive duration"),
        ("P0D", "'P0D' is not a positive duration"),
        ("P400D", "'P400D' is longer than P365D, the longest lease"),
        ("P99999999999D", "'P99999999999D' is longer than any duration Ferry can use"),
        ("1h", "'1h' is not an ISO-8601 duration"),
    ],
)
def test_a_lock_lease_that_is_not_a_positive_duration(here, capsys, lease, expected):
    config = write(here, document())
    before = tree(here)
    line = refused(capsys, "replicate", str(config), "--lock-lease", lease, "--home", "h")
    assert line.startswith(f"ferry replicate: error: argument --lock-lease: {expected}"), line
    assert tree(here) == before


def test_the_local_runtime_not_running(here, capsys):
    config = write(here, document())
    before = tree(here)
    line = refused(capsys, "execute", str(config), "--home", str(here / "home"))
    assert line == (
        f"ferry: error: the local runtime is not running in {here / 'home'}; start it with "
        "`ferry local up`"
    )
    assert tree(here) == before


# -- DynamoDB and S3 named on the command line (moto) -----------------------------------------


@pytest.fixture
def mocked_aws(here):
    """AWS as moto emulates it, in this process."""
    with mock_aws():
        yield


@pytest.fixture
def dynamodb(mocked_aws):
    return boto3.client("dynamodb", region_name="us-east-1")


@pytest.mark.parametrize("command", ["replicate", "housekeeping"])
def test_a_state_table_that_does_not_exist(here, capsys, dynamodb, command):
    config = write(here, document())
    before = tree(here)
    line = refused(capsys, command, str(config), "--state-table", "ferry-nope", "--home", "home")
    assert line == (
        "ferry: error: --state-table ferry-nope: no such DynamoDB table in us-east-1; give the "
        "state table of the stack (its StateTableName output)"
    )
    assert tree(here) == before
    assert dynamodb.list_tables()["TableNames"] == []


def test_a_state_table_with_another_key(here, capsys, dynamodb):
    dynamodb.create_table(
        TableName="locks",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    config = write(here, document())
    before = tree(here)
    line = refused(capsys, "replicate", str(config), "--state-table", "locks", "--home", "home")
    assert line == (
        "ferry: error: --state-table locks: its key is id (S, hash key), not Ferry's: pk (S, hash "
        "key) and sk (S, range key); it is not a Ferry state table"
    )
    assert tree(here) == before
    assert dynamodb.scan(TableName="locks")["Items"] == []


def test_a_state_table_without_a_region(here, capsys, monkeypatch):
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    config = write(here, document())
    line = refused(capsys, "replicate", str(config), "--state-table", "ferry-state")
    assert line.startswith(
        "ferry: error: --state-table ferry-state: the AWS SDK has no default region"
    )
    assert not (here / ".ferry").exists()


def test_a_work_bucket_that_does_not_exist(here, capsys, mocked_aws):
    config = write(here, document())
    before = tree(here)
    work = "s3://ferry-no-such-bucket/runs"
    line = refused(capsys, "replicate", str(config), "--work-uri", work, "--home", "home")
    assert (
        line
        == f"ferry: error: work location {work}: the bucket ferry-no-such-bucket does not exist"
    )
    assert tree(here) == before


def test_execute_on_a_state_machine_that_does_not_exist(here, capsys, mocked_aws):
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="ferry-work")
    config = write(here, document())
    arn = "arn:aws:states:us-east-1:123456789012:stateMachine:ferry-nope"
    line = refused(
        capsys, "execute", str(config), "--state-machine-arn", arn, "--work-uri", "s3://ferry-work"
    )
    assert line == f"ferry: error: --state-machine-arn {arn}: no such state machine"
    s3 = boto3.client("s3", region_name="us-east-1")
    assert s3.list_objects_v2(Bucket="ferry-work").get("KeyCount") == 0  # nothing uploaded


def test_execute_on_the_local_runtime_takes_no_work_uri(here, capsys):
    config = write(here, document())
    line = refused(capsys, "execute", str(config), "--work-uri", "s3://ferry-work/x")
    assert line == (
        "ferry: error: --work-uri goes with --state-machine-arn; the local runtime uses its own "
        "work bucket"
    )


# -- the config -------------------------------------------------------------------------------


def test_a_glue_catalog_without_a_region(here, capsys, monkeypatch):
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    config = write(here, document(**{"replica-catalog": {"name": "aws", "glue": {}}}))
    before = tree(here)
    for command in (["plan"], ["replicate"], ["replicate", "--dry-run"], ["housekeeping"]):
        line = refused(capsys, *command, str(config))
        assert line.startswith(
            f"ferry: error: {config}: replica-catalog.glue.region: not given, and the AWS SDK "
            "has no default region"
        ), line
    assert tree(here) == before


def _alias_bomb() -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def _huge(path: Path) -> None:
    with path.open("wb") as file:
        file.truncate(50 * 1024 * 1024)  # 50 MiB (sparse: written in no time)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (
            lambda path: path.write_text(_alias_bomb()),
            "with its YAML aliases (*name) expanded, the config holds more than 4 MiB, the most "
            "a config may hold",
        ),
        (
            lambda path: path.write_text("a: &a\n  - x\n  - *a\n"),
            "the YAML collection at line 1 holds an alias of itself: the config would be infinite",
        ),
        (
            lambda path: path.write_text("[" * 20000 + "]" * 20000),
            "invalid YAML: collections nested too deeply for a config",
        ),
        (_huge, "larger than 4 MiB, the most a config may hold; is it the config?"),
    ],
    ids=["billion-laughs", "alias-of-itself", "nested-too-deep", "50-mib"],
)
@pytest.mark.parametrize("command", ["plan", "replicate", "housekeeping"])
def test_a_config_too_large_to_be_one_is_refused_at_once(here, capsys, make, expected, command):
    path = here / "replication.yml"
    make(path)
    before = tree(here)
    started = time.monotonic()
    line = refused(capsys, command, str(path))
    assert time.monotonic() - started < 10
    assert line == f"ferry: error: {path}: {expected}"
    assert tree(here) == before


@pytest.mark.parametrize(
    ("where", "key", "value", "expected"),
    [
        ((), "copier-options", {"threads": True}, "copier-options.threads: true is not a whole"),
        ((), "copier-options", {"chunk-size-mib": False}, "copier-options.chunk-size-mib: false"),
        (("table-replications", 0), "copier-options", {"s3-batch-files": True}, "s3-batch-files"),
        (("table-replications", 0, "source-table"), "partition-limit", True, "partition-limit: true"),
        (("replica-catalog",), "batch-size", True, "replica-catalog.batch-size: true"),
    ],
    ids=["threads", "chunk-size", "table-copier-option", "partition-limit", "batch-size"],
)  # fmt: skip
def test_a_boolean_where_a_number_goes(here, capsys, where, key, value, expected):
    data = document()
    data["table-replications"] = [
        dict(TABLES[0], **{"source-table": dict(TABLES[0]["source-table"])})
    ]
    section = data
    for part in where:
        section = section[part]
    section[key] = value
    config = write(here, data)
    before = tree(here)
    line = refused(capsys, "replicate", str(config))
    assert line.startswith(f"ferry: error: {config}: "), line
    assert expected in line
    assert tree(here) == before


def test_a_number_from_a_placeholder_is_still_a_number():
    data = document(**{"copier-options": {"threads": "${THREADS}", "chunk-size-mib": 16.0}})
    options = parse_config(data, "c.yml", {"THREADS": "12"}).copier_options
    assert (options.threads, options.chunk_size_mib) == (12, 16)


@pytest.mark.parametrize("catalog_id", ["abc", "12345", "1234567890123", "12345678901a", "-1"])
def test_a_glue_catalog_id_that_is_not_an_account(here, capsys, catalog_id):
    glue = {"region": "us-east-1", "catalog-id": catalog_id}
    config = write(here, document(**{"replica-catalog": {"name": "aws", "glue": glue}}))
    before = tree(here)
    line = refused(capsys, "replicate", str(config))
    assert line == (
        f"ferry: error: {config}: replica-catalog.glue.catalog-id: {catalog_id!r} is not an AWS "
        "account id: a catalog id is the 12 digits of the account whose catalog it is, e.g. "
        '"123456789012" (quoted)'
    )
    assert tree(here) == before


def test_a_glue_catalog_id_of_12_digits_quoted_or_not():
    for written in (123456789012, "012345678901"):
        data = document(**{"replica-catalog": {"name": "aws", "glue": {"catalog-id": written}}})
        glue = parse_config(data, "c.yml", {}).replica_catalog.glue
        assert glue is not None and glue.catalog_id == str(written)


# -- what is printed is text, never markup ------------------------------------------------------


def test_brackets_in_an_error_are_printed_as_written_and_every_table_runs(here, capsys):
    """Rich reads ``[/x]`` as a closing tag; a message holding one is printed, not parsed."""
    data = document()
    data["source-catalog"]["name"] = "onprem[/x]"
    data["replica-catalog"]["name"] = "dr[/x]"
    config = write(here, data)
    code = main(["replicate", str(config), "--dry-run", "--home", "home"])
    out, err = capsys.readouterr()
    assert code == 1 and err == "" and "Traceback" not in out
    failed = [line for line in out.splitlines() if line.startswith("✗")]
    assert [line.split("  ")[0] for line in failed] == [
        "✗ sales.orders → sales_dr.orders",
        "✗ sales.customers → sales_dr.customers",
    ]
    assert all("[/x]' at thrift://127.0.0.1:" in line for line in failed), failed
    assert out.splitlines()[-1].startswith("2 tables: 0 planned, 2 failed")

    assert main(["plan", str(config)]) == 1
    out, err = capsys.readouterr()
    assert err == "" and len([line for line in out.splitlines() if "[/x]' at" in line]) == 2


def test_housekeeping_prints_paths_as_written(capsys):
    from rich.console import Console

    from ferry.commands.housekeeping import print_report

    location = "file:///data/[/b]/orders"
    report = {
        "dryRun": True,
        "vacuum": False,
        "deleteOrphans": False,
        "reportUri": "file:///work/[/r]/report.json",
        "tables": [
            {
                "replicaTable": "sales_dr.orders",
                "skipped": None,
                "location": location,
                "gracePeriod": "P3D",
                "strategy": "HOUSEKEEPING",
                "ledger": [
                    {
                        "path": f"{location}/ferry-a",
                        "action": "would delete",
                        "reason": "superseded by [bold]ferry-b[/bold]",
                    }
                ],
                "orphanFolders": [],
                "deleted": 1,
                "kept": 0,
                "orphans": 0,
                "orphansLedgered": 0,
            },
            {"replicaTable": "sales_dr.gone", "skipped": "no [/i] replica", "location": None},
        ],
    }
    print_report(Console(highlight=False, soft_wrap=True, emoji=False), report)
    out = capsys.readouterr().out
    assert f"sales_dr.orders ({location})" in out
    assert "…/ferry-a  (superseded by [bold]ferry-b[/bold])" in out
    assert "sales_dr.gone: skipped: no [/i] replica" in out
    assert "report: file:///work/[/r]/report.json" in out


# -- ferry plan with a table-name-pattern --------------------------------------------------------


def test_plan_takes_a_table_a_pattern_selects(here, capsys):
    data = document()
    data["table-replications"] = [
        {
            "source-table": {"database-name": "sales", "table-name-pattern": ".*orders"},
            "replica-table": {"database-name": "sales_dr", "table-location": "file:///tmp/x"},
        }
    ]
    config = write(here, data)
    assert main(["plan", str(config), "--table", "sales.ORDERS"]) == 1  # the metastore is away
    out, err = capsys.readouterr()
    assert "not in the config" not in out + err
    [line] = out.splitlines()
    assert line.startswith("✗ sales.orders → sales_dr.orders  [FULL]  CatalogUnreachableError: ")


def test_redrive_of_an_execution_of_a_local_runtime_that_is_not_running(here, capsys):
    arn = "arn:aws:states:us-east-1:123456789012:execution:ferry-local-replication:run-1"
    home = here / "home"
    line = refused(capsys, "redrive", arn, "--environment", "local", "--home", str(home))
    assert line == (
        f"ferry: error: the local runtime is not running in {home}; start it with `ferry local up`"
    )
    assert not home.exists()


def test_wait_goes_with_an_execution_not_a_queue(here, capsys):
    line = refused(capsys, "redrive", "ferry-test-dead-letters", "--wait")
    assert line == "ferry: error: --wait and --json go with an execution's ARN, not a queue"


def test_redrive_of_an_execution_of_another_environment(here, capsys):
    arn = "arn:aws:states:us-east-1:123456789012:execution:ferry-dev-replication:run-1"
    line = refused(capsys, "redrive", arn, "--environment", "prod")
    assert line == (
        f"ferry: error: {arn} is not an execution of ferry-prod-replication, the replication "
        "of --environment prod"
    )
