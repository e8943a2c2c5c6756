"""The in-process driver runs a Map's items up to the definition's ``MaxConcurrency`` at once.

Each test drives the replication definition's own ``S3 server-side copy`` Map (its
``ItemReader`` reading a manifest of batches from a local work folder, its ``ItemSelector``,
its ``Copy batch`` task with its ``Retry`` and ``Catch``) through ``InProcessDriver``; the
batches themselves are run by a context that records when each starts and ends.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from copy import deepcopy
from pathlib import Path
from typing import Any

import pytest

from ferry import statemachine
from ferry.commands.in_process import InProcessDriver
from ferry.commands.in_process_map import concurrency
from ferry.core.errors import CopyError
from ferry.statemachine.replication_payloads import CopyBatchInput, CopyBatchResult

COPY_MAP = "S3 server-side copy"
#: A batch waits at most this long for the others it expects to run beside it.
PATIENCE = 20.0


def _replication_maps() -> dict[str, dict[str, Any]]:
    definition = json.loads(statemachine.DEFINITION_PATH.read_text())
    tables = definition["States"]["Replicate tables"]
    copy = tables["ItemProcessor"]["States"][COPY_MAP]
    return {"tables": tables, "copy": copy}


def _copy_map_machine(tmp_path: Path, **changes: Any) -> Path:
    """A definition of one state: the replication definition's S3 copy Map, its outcome kept
    in ``$.copied`` (``changes`` to the state: a tolerance)."""
    state = deepcopy(_replication_maps()["copy"])
    for key in ("Next", "Catch", "ResultWriter"):
        state.pop(key)
    state.update({"End": True, "ResultPath": "$.copied", **changes})
    path = tmp_path / "copy-map.asl.json"
    path.write_text(json.dumps({"StartAt": COPY_MAP, "States": {COPY_MAP: state}}))
    return path


def _input(tmp_path: Path, batches: int) -> dict[str, Any]:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps([{"eventId": "e", "batch": i} for i in range(batches)]))
    plan = {
        "eventId": "e",
        "manifestUri": manifest.as_uri(),
        "manifestBucket": "",
        "manifestKey": str(manifest),
        "copierOptions": {},
    }
    return {"plan": plan}


class Batches:
    """Runs ``S3CopyBatch`` by calling ``behaviour(batch index)``; records starts and ends."""

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.started: list[int] = []
        self.finished: list[int] = []

    def run_state(self, function: str, payload: CopyBatchInput, *extra: Any) -> CopyBatchResult:
        assert function == "S3CopyBatch"
        index = payload.batch["batch"]
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(index)
        try:
            self.behaviour(index)
            return CopyBatchResult(files=index, bytes=0, resumed=0)
        finally:
            with self.lock:
                self.running -= 1
                self.finished.append(index)


def test_the_definitions_maps_run_as_many_items_at_once_as_their_max_concurrency_says():
    maps = _replication_maps()
    assert maps["copy"]["MaxConcurrency"] == 16 and concurrency(maps["copy"]) == 16
    # The tables' Map names none (unbounded on AWS): one table at a time here.
    assert "MaxConcurrency" not in maps["tables"] and concurrency(maps["tables"]) == 1


def test_a_map_runs_max_concurrency_items_at_once_and_keeps_their_results_in_item_order(
    tmp_path,
):
    # The first 16 batches end in reverse order, each only once the next one has ended: they
    # can only all end if all 16 run at once.
    ended = [threading.Event() for _ in range(40)]

    def behaviour(index: int) -> None:
        if index < 15:
            assert ended[index + 1].wait(PATIENCE), f"batch {index + 1} never ran beside it"
        ended[index].set()

    batches = Batches(behaviour)
    driver = InProcessDriver(batches, None, definition_path=_copy_map_machine(tmp_path))
    execution = driver.run(_input(tmp_path, 40))
    assert execution.status == "SUCCEEDED", execution.cause
    assert batches.most == 16
    assert [index for index in batches.finished if index < 16] == list(range(15, -1, -1))
    assert [result["files"] for result in execution.output["copied"]] == list(range(40))
    assert execution.table_states("") == []  # no table: the Map's items run at the top level


def test_a_failed_item_fails_a_map_without_tolerance_and_no_item_starts_after_it(tmp_path):
    # Batch 3 fails at once; the others of the first 16 end later, so the failure is seen
    # while they run: they finish, and no batch after them starts.
    release = threading.Event()

    def behaviour(index: int) -> None:
        if index == 3:
            raise CopyError("batch 3 could not be copied")
        release.wait(3.0)

    batches = Batches(behaviour)
    driver = InProcessDriver(batches, None, definition_path=_copy_map_machine(tmp_path))
    execution = driver.run(_input(tmp_path, 40))
    assert execution.status == "FAILED"
    assert execution.error == "States.ExceedToleratedFailureThreshold"
    assert "item 3 of S3 server-side copy failed with CopyError" in execution.cause
    assert sorted(batches.started) == sorted(batches.finished) == list(range(16))


def test_a_map_with_a_tolerance_runs_every_item_and_fails_only_past_it(tmp_path):
    def failing(which: set[int]):
        def behaviour(index: int) -> None:
            if index in which:
                raise CopyError(f"batch {index} could not be copied")

        return behaviour

    machine = _copy_map_machine(tmp_path, ToleratedFailurePercentage=50)
    within = Batches(failing({1, 7, 19}))
    execution = InProcessDriver(within, None, definition_path=machine).run(_input(tmp_path, 20))
    assert execution.status == "SUCCEEDED", execution.cause
    assert sorted(within.started) == list(range(20))
    copied = execution.output["copied"]
    assert [i for i, result in enumerate(copied) if result is None] == [1, 7, 19]

    past = Batches(failing(set(range(11))))
    execution = InProcessDriver(past, None, definition_path=machine).run(_input(tmp_path, 20))
    assert (execution.status, execution.error) == (
        "FAILED",
        "States.ExceedToleratedFailureThreshold",
    )
    assert "11 of 20 items of S3 server-side copy failed" in execution.cause
    assert sorted(past.started) == list(range(20))


def test_ctrl_c_starts_no_more_items_and_lets_the_running_ones_finish_first(tmp_path):
    # Once 16 batches run, the first presses Ctrl-C; the others are still running.
    all_running = threading.Barrier(16, timeout=PATIENCE)
    never = threading.Event()

    def behaviour(index: int) -> None:
        all_running.wait()
        if index == 0:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, which the main thread receives
        else:
            never.wait(0.5)

    batches = Batches(behaviour)
    driver = InProcessDriver(batches, None, definition_path=_copy_map_machine(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        driver.run(_input(tmp_path, 40))
    # Every batch that started had ended when the interruption reached the caller, and none
    # started after it.
    assert sorted(batches.started) == sorted(batches.finished) == list(range(16))


def test_a_tables_copy_of_many_batches_at_once_shows_one_progress(tmp_path):
    class Shown:
        def __init__(self):
            self.calls: list[str] = []

        def state_entered(self, table, state):
            pass

        def copy_progress(self, table, plan):
            self.calls.append(f"progress {table}")
            return lambda size: None

        def copy_finished(self, table):
            self.calls.append(f"finished {table}")

        def table_finished(self, table, result, states, seconds):
            pass

    from ferry.commands.in_process_observer import Guarded

    shown = Shown()
    guarded = Guarded(shown)
    progress = [guarded.copy_progress("db.t", {}) for _ in range(3)]
    assert len({id(each) for each in progress}) == 1
    guarded.copy_finished("db.t")
    guarded.copy_finished("db.t")
    assert shown.calls == ["progress db.t"]
    guarded.copy_finished("db.t")
    assert shown.calls == ["progress db.t", "finished db.t"]
