"""A home or work folder Ferry may not read, or a runtime's home it may not write: one line
naming the option and the folder, exit code 2, nothing created or started — never a
``PermissionError`` traceback.

Root reads every folder whatever its mode: as root, ``ferry`` runs without the capabilities
that let it (``setpriv`` drops ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH``), so a folder
of mode 000 refuses it as it refuses anyone else. The tests run ``ferry`` in a process of its
own for that.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ferry.local.processes import free_port
from tests.unit.test_bad_input_cli import document, tree

_CAPABILITIES = "-dac_override,-dac_read_search"


@pytest.fixture(scope="module")
def as_anyone() -> list[str]:
    """The command prefix under which folder modes apply to this process's children."""
    if os.geteuid() != 0:
        return []
    prefix = [
        "setpriv", f"--inh-caps={_CAPABILITIES}", f"--ambient-caps={_CAPABILITIES}",
        f"--bounding-set={_CAPABILITIES}",
    ]  # fmt: skip
    if shutil.which("setpriv") is None:
        pytest.skip("root reads every folder, and setpriv is not here to drop that")
    if subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("root reads every folder, and setpriv cannot drop that here")
    return prefix


@pytest.fixture
def folders(tmp_path):
    """``config``, and a folder ``locked`` of mode 000 (its mode restored afterwards)."""
    config = tmp_path / "replication.yml"
    config.write_text(yaml.safe_dump(document(), sort_keys=False))
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    yield tmp_path, config, locked
    locked.chmod(0o755)


def run(prefix: list[str], here: Path, *argv: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1"}
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        environment.pop(name, None)
    return subprocess.run(
        [*prefix, sys.executable, "-m", "ferry.commands.cli", *argv],
        cwd=here, env=environment, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


COMMANDS = {
    "replicate": ["replicate", "{config}"],
    "housekeeping": ["housekeeping", "{config}"],
    "execute": ["execute", "{config}"],
    "doctor": ["doctor", "--environment", "local"],
    "local-status": ["local", "status"],
}


@pytest.mark.parametrize("below", [False, True], ids=["the-home", "above-the-home"])
@pytest.mark.parametrize("argv", list(COMMANDS.values()), ids=list(COMMANDS))
def test_a_home_ferry_may_not_read(as_anyone, folders, argv, below):
    here, config, locked = folders
    home = locked / "home" if below else locked
    locked.chmod(0o755)
    before = tree(here)
    locked.chmod(0)
    done = run(as_anyone, here, *[a.format(config=config) for a in argv], "--home", str(home))
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    expected = (
        f"cannot be reached: {locked} cannot be searched (permission denied)"
        if below
        else "cannot be read (permission denied)"
    )
    assert line.startswith(f"ferry {argv[0]}: error: argument --home: '{home}' {expected}"), line
    locked.chmod(0o755)
    assert tree(here) == before  # nothing created, in the folder or below it


def test_a_work_location_below_a_folder_ferry_may_not_search(as_anyone, folders):
    here, config, locked = folders
    work = (locked / "work").as_uri()
    done = run(as_anyone, here, "replicate", str(config), "--work-uri", work, "--home", "home")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"ferry: error: work location {work}: {locked} cannot be searched (permission denied)"
    ]
    assert not (here / "home").exists()


def test_the_state_store_check_names_a_home_it_may_not_read(as_anyone, folders):
    """The store's own check, for a caller that did not check the home first."""
    here, _, locked = folders
    store = locked / "state.sqlite3"
    check = f"from ferry.replicas.ledger import SqliteStateStore; SqliteStateStore({str(store)!r}).check()"
    done = subprocess.run(
        [*as_anyone, sys.executable, "-c", check], cwd=here, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"ferry.core.errors.StateStoreError: state store {store}: cannot be read: Permission denied"
    )


@pytest.mark.parametrize("argv", [["local", "up"], ["demo"]], ids=["local-up", "demo"])
@pytest.mark.parametrize("below", [False, True], ids=["the-home", "below-it"])
def test_a_runtime_home_ferry_may_not_write(as_anyone, folders, argv, below):
    here, _, locked = folders
    locked.chmod(0o555)
    home = locked / "home" if below else locked
    ports = [str(free_port()) for _ in range(3)]
    done = run(
        as_anyone, here, *argv, "--home", str(home), "--source-port", ports[0],
        "--replica-port", ports[1], "--aws-port", ports[2],
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"ferry: error: --home {home}: {locked} is not writable; the local runtime keeps its "
        "state there"
    ]
    assert os.listdir(locked) == []  # nothing started: no state, no process files
