"""Resume instead of restart: a table's failed attempt is continued, not copied again.

``ferry replicate`` killed (SIGKILL) after ~90 % of its batches, then run again (or
``ferry resume EVENT``): the same event is continued and only what the attempt had not
copied is copied, as the target files' own inodes and modification times show; the replica
then holds the source. A source file replaced between the attempt and the resume is copied
again; a resume killed again converges; an event that cannot be resumed gets one line, a
non-zero exit, and nothing changes.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from ferry.replicas.replica import REPLICATION_EVENT
from ferry.storage import fs
from tests.e2e.test_pipeline import table_entry
from tests.helpers import assert_replica_holds_source, catalog_state, config_document, ferry

pytestmark = pytest.mark.e2e

BLOBS, BLOB_SIZE = 40, 256 * 1024
#: One file a batch, one file at a time: a kill after batch N leaves exactly N recorded.
ONE_BY_ONE = {"s3-batch-files": 1, "threads": 1}


@pytest.fixture
def resumable(local_runtime, sample, tmp_path, write_config, replica_catalog, source_catalog):
    """The sample's orders with 40 more files (~10 MiB), replicated to a local folder."""
    for index in range(BLOBS):
        day = sample.days[index % len(sample.days)]
        blob = f"{sample.orders.location}/dt={day}/blob-{index:02d}.bin"
        fs.write_bytes(blob, os.urandom(BLOB_SIZE))
    target = fs.local_uri(tmp_path / "replica")
    replica_db = f"{sample.database}_dr"
    home = str(tmp_path / "home")

    def config(**housekeeping):
        extra = {"housekeeping": housekeeping} if housekeeping else {}
        return str(
            write_config(
                config_document(
                    local_runtime,
                    [table_entry(sample, "orders", f"{target}/orders")],
                    **{"copier-options": ONE_BY_ONE},
                    **extra,
                )
            )
        )

    def holds_source():
        assert_replica_holds_source(
            replica_catalog, replica_db, "orders", source_catalog, sample.orders
        )

    def runs():
        """The events that planned under the work location."""
        folder = Path(home) / "work" / "runs"
        return sorted(p.name for p in folder.iterdir() if (p / "plan.json").exists())

    def killed_after(batches: int, *args: str) -> None:
        process = ferry(
            *args, "--home", home,
            faults=[{"point": "copy.batch", "action": "kill", "skip": batches - 1}],
        )  # fmt: skip
        assert process.wait(180) == -signal.SIGKILL, process.stderr.read()

    def state():
        """The replica's catalog and every file below the replica's location and the work
        location, with its inode and modification time: what a command changed."""
        return (
            catalog_state(replica_catalog, replica_db, ["orders"]),
            _files(tmp_path / "replica"),
            _files(Path(home) / "work"),
        )

    return {
        "config": config, "target": target, "replica_db": replica_db, "home": home,
        "holds_source": holds_source, "runs": runs, "killed_after": killed_after,
        "state": state, "root": tmp_path / "replica" / "orders",
    }  # fmt: skip


def _files(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every file below ``folder``: (inode, modification time, size) by path."""
    found = {}
    for path in folder.rglob("*") if folder.exists() else ():
        if path.is_file():
            stat = path.stat()
            found[str(path)] = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    return found


def _written_since(before: dict, after: dict) -> tuple[int, int]:
    """Files (and bytes) written between two ``_files``: new, or replaced (another inode or
    modification time)."""
    written = [path for path, seen in after.items() if before.get(path) != seen]
    return len(written), sum(after[path][2] for path in written)


def _replicate(resumable, *args: str) -> dict:
    process = ferry(*args, "--home", resumable["home"], "--json")
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    (table,) = json.loads(out)["tables"]
    return table


@pytest.mark.parametrize("how", ["replicate", "resume"])
def test_a_copy_killed_at_90_percent_resumes_the_same_event_and_copies_only_the_rest(
    resumable, how, replica_catalog
):
    config = resumable["config"]()
    resumable["killed_after"](39, "replicate", config)  # of 43 batches (40 blobs, 3 parquet)
    (event,) = resumable["runs"]()
    before = _files(resumable["root"])
    total = 3 + BLOBS
    assert len(before) == 39

    command = ("replicate", config) if how == "replicate" else ("resume", event)
    table = _replicate(resumable, *command)

    assert table["status"] == "SUCCEEDED"
    assert table["event_id"] == event
    assert table["resumed"] is True
    assert table["files"] == total
    assert table["reused_files"] == 39
    # At the storage edge: only the files the attempt had not copied were written.
    written, written_bytes = _written_since(before, _files(resumable["root"]))
    assert written == total - 39
    assert written_bytes == table["bytes"] - table["reused_bytes"]
    assert written_bytes <= 0.15 * table["bytes"]
    assert resumable["runs"]() == [event], "no second event"
    replica = replica_catalog.get_table(resumable["replica_db"], "orders")
    assert replica.parameters[REPLICATION_EVENT] == event
    resumable["holds_source"]()


def test_the_command_line_says_what_a_resume_reused(resumable):
    config = resumable["config"]()
    resumable["killed_after"](39, "replicate", config)
    process = ferry("replicate", config, "--home", resumable["home"])
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    (event,) = resumable["runs"]()
    assert f"resumed event {event}: 39 files (" in out
    assert "already copied and verified; copied 4 files (" in out


def test_a_source_file_replaced_since_the_attempt_is_copied_again(
    resumable, sample, replica_catalog
):
    config = resumable["config"]()
    resumable["killed_after"](39, "replicate", config)
    before = _files(resumable["root"])
    copied = sorted(p for p in before if Path(p).name.startswith("blob-"))[0]
    day = Path(copied).parent.name
    replaced = f"{sample.orders.location}/{day}/{Path(copied).name}"
    time.sleep(0.01)  # a new modification time, the same size
    fs.write_bytes(replaced, os.urandom(BLOB_SIZE))

    table = _replicate(resumable, "replicate", config)

    assert table["resumed"] is True
    assert table["reused_files"] == 38
    after = _files(resumable["root"])
    assert after[copied] != before[copied], "the replaced file was copied again"
    assert _written_since(before, after)[0] == 3 + BLOBS - 38
    resumable["holds_source"]()


def test_a_resume_killed_again_converges(resumable):
    config = resumable["config"]()
    resumable["killed_after"](30, "replicate", config)
    (event,) = resumable["runs"]()
    # The resume records what is left one batch at a time: killed after 5 more.
    resumable["killed_after"](5, "replicate", config)
    assert len(_files(resumable["root"])) == 35
    table = _replicate(resumable, "replicate", config)
    assert table["event_id"] == event
    assert table["reused_files"] == 35
    resumable["holds_source"]()


def test_an_event_that_cannot_be_resumed_gets_one_line_and_changes_nothing(resumable):
    config = resumable["config"]()
    home = resumable["home"]

    def refused(*args: str) -> str:
        before = resumable["state"]()
        process = ferry("resume", *args, "--home", home)
        out, err = process.communicate(timeout=120)
        assert process.returncode == 1, (out, err)
        assert len(err.strip().splitlines()) == 1, err
        assert resumable["state"]() == before
        return err

    assert "unknown event" in refused("ferry-20260101T000000Z-nope")
    # Still running: its process holds the replica's lock (it hangs after 10 batches).
    running = ferry(
        "replicate", config, "--home", home,
        faults=[{"point": "copy.batch", "action": "hang", "seconds": 120, "skip": 9}],
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(_files(resumable["root"])) < 10 and time.monotonic() < deadline:
            time.sleep(0.2)
        (event,) = resumable["runs"]()
        assert "not resumable: it is still running" in refused(event)
    finally:
        running.send_signal(signal.SIGKILL)
        running.wait(30)
    # Resumed and committed: a resume of it again is refused.
    _replicate(resumable, "replicate", config)
    assert "not resumable: it committed" in refused(event)


def test_an_attempt_past_its_grace_period_is_not_resumed_and_housekeeping_deletes_it(
    resumable,
):
    config = resumable["config"](**{"expired-path-duration": "PT2S"})
    home = resumable["home"]
    # A copy that fails (not killed): Abort keeps the attempt for a resume.
    process = ferry(
        "replicate", config, "--home", home, "--json",
        faults=[{"point": "copy.batch", "action": "raise", "error": "CopyError", "skip": 38}],
    )  # fmt: skip
    out, err = process.communicate(timeout=180)
    assert process.returncode == 1, err
    (table,) = json.loads(out)["tables"]
    assert "kept for a resume until" in table["error"]
    (event,) = resumable["runs"]()
    snapshot = resumable["root"] / event
    assert len(_files(snapshot)) >= 39
    time.sleep(2.5)
    before = resumable["state"]()
    process = ferry("resume", event, "--home", home)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 1
    assert "not resumable: its grace period ended at" in err
    assert resumable["state"]() == before
    housekeeping = ferry("housekeeping", config, "--home", home, "--json")
    out, err = housekeeping.communicate(timeout=120)
    assert housekeeping.returncode == 0, err
    assert not snapshot.exists(), "the abandoned attempt was deleted"
    process = ferry("resume", event, "--home", home)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 1
    assert "not resumable: no attempt of it is kept" in err
    # The next run starts a new event and copies everything.
    table = _replicate(resumable, "replicate", config)
    assert table["resumed"] is False and table["event_id"] != event
    resumable["holds_source"]()


def test_summarize_aborting_a_resumed_table_finds_the_attempt_it_continued(resumable, sample):
    # Summarize aborts a table whose iteration failed where no Catch takes the error, by the
    # event id its item was given; a resumed table's plan is under the attempt's event id.
    from ferry.config import load_config_uri
    from ferry.lifecycle import replica_state
    from ferry.states import abort as abort_state
    from ferry.states import plan as plan_state
    from ferry.states.context import StateContext

    config = resumable["config"]()
    resumable["killed_after"](39, "replicate", config)
    (attempt,) = resumable["runs"]()
    home = Path(resumable["home"])
    state = replica_state.open_state(home=home)
    context = StateContext(fs.local_uri(home / "work"), state=state)
    item = "ferry-20991231t000000000z-0000000e"
    table = {
        "configUri": config, "sourceTable": f"{sample.database}.orders",
        "replicaTable": f"{sample.database}_dr.orders", "eventId": item,
        "startTime": "2026-11-26T00:00:00+00:00",
    }  # fmt: skip
    planned = plan_state.run(context, {**table, "triggerTime": table["startTime"]})
    assert (planned.event_id, planned.resumed) == (attempt, True)
    aborted = abort_state.run(context, 
        {**table, "error": {"Error": "States.Runtime", "Cause": "uncaught"},
         "failedState": "Replicate tables", "findPlan": True}
    )  # fmt: skip
    assert aborted.event_id == attempt
    document = load_config_uri(config)
    replication = document.replication_of(table["sourceTable"], table["replicaTable"])
    key = replica_state.replica_of(document.replica_catalog, replication, context.aws.region)
    assert state.store.lease(key) is None, "the attempt's lock was released"
    # Found: its snapshot is the attempt's (an uncaught failure is not kept: removed).
    assert aborted.snapshot.endswith(f"/{attempt}") and aborted.snapshot_removed


def test_an_attempt_whose_replica_changed_since_is_not_resumed(resumable, replica_catalog, sample):
    from dataclasses import replace

    config = resumable["config"]()
    first = _replicate(resumable, "replicate", config)
    # The source changes; the next run is killed after 2 batches.
    for day in sample.days:
        fs.write_bytes(f"{sample.orders.location}/dt={day}/more.bin", os.urandom(BLOB_SIZE))
    resumable["killed_after"](2, "replicate", config)
    attempt = next(e for e in resumable["runs"]() if e != first["event_id"])
    # Another writer commits to the replica meanwhile (here: its event, by hand).
    table = replica_catalog.get_table(resumable["replica_db"], "orders")
    changed = {**table.parameters, REPLICATION_EVENT: "ferry-20991231t000000000z-0000000f"}
    replica_catalog.alter_table(replace(table, parameters=changed))
    before = resumable["state"]()
    process = ferry("resume", attempt, "--home", resumable["home"])
    _, err = process.communicate(timeout=120)
    assert process.returncode == 1
    assert "not resumable: the replica changed since it planned" in err
    assert resumable["state"]() == before
