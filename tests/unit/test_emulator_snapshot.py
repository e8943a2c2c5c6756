"""The emulator's snapshot (``ferry.local.emulator_snapshot``, its pickler
``ferry.local.emulator_snapshot_pickler``): what Ferry's extensions keep beside moto's backends
comes back after a save and a restore, and what pickle refuses comes back as it was."""

from __future__ import annotations

import collections
import importlib
import io
import pickle
import threading
import weakref

import pytest

from ferry.local import emulator_map_children, emulator_redrive_branches, emulator_snapshot
from ferry.local.emulator_snapshot_pickler import Pickler


def test_every_extra_names_a_dictionary_where_it_lives():
    for module_name, attribute in emulator_snapshot.EXTRAS:
        value = getattr(importlib.import_module(module_name), attribute, None)
        assert isinstance(value, dict), f"{module_name}.{attribute}"


@pytest.fixture
def kept_state():
    """The extensions' dictionaries, emptied for the test and put back after it."""
    saved = {
        (module, attribute): dict(getattr(importlib.import_module(module), attribute))
        for module, attribute in emulator_snapshot.EXTRAS
    }
    yield
    for (module, attribute), value in saved.items():
        target = getattr(importlib.import_module(module), attribute)
        target.clear()
        target.update(value)


def test_a_map_runs_children_and_iterations_come_back_after_a_save_and_a_restore(
    tmp_path, kept_state
):
    map_run = "arn:aws:states:eu-west-1:123456789012:mapRun:machine/Map:run"
    child_arn = emulator_map_children.child_execution_arn(map_run, 3)
    child = {"index": 3, "input": {"table": "t"}, "status": "SUCCEEDED", "arn": child_arn}
    emulator_map_children._CHILDREN[child_arn] = child
    emulator_map_children._MAP_RUN_CHILDREN[map_run] = [child_arn]
    iteration = ("execution", "Tables", 0, "{}")
    emulator_redrive_branches._iterations[iteration] = {"output": 1}
    path = tmp_path / emulator_snapshot.FILE
    emulator_snapshot.save(path)
    for module, attribute in emulator_snapshot.EXTRAS:
        getattr(importlib.import_module(module), attribute).clear()

    restored = emulator_snapshot.restore(path)

    assert restored.restored, restored.message
    assert emulator_map_children._child(child_arn) == child
    assert emulator_map_children._MAP_RUN_CHILDREN[map_run] == [child_arn]
    assert emulator_redrive_branches._iterations[iteration] == {"output": 1}


def _round_trip(value, tmp_path):
    buffer = io.BytesIO()
    Pickler(buffer, None, tmp_path).dump(value)
    return pickle.loads(buffer.getvalue())


class _Holder:
    pass


def test_what_pickle_refuses_is_rebuilt(tmp_path):
    held = _Holder()
    nested = collections.defaultdict(lambda: collections.defaultdict(list))
    nested["account"]["region"].append("backend")
    value = {
        "weak": weakref.WeakValueDictionary({"held": held}),
        "nested": nested,
        "lock": threading.Lock(),
        "held": held,
    }

    rebuilt = _round_trip(value, tmp_path)

    assert dict(rebuilt["weak"]) == {"held": rebuilt["held"]}
    assert rebuilt["nested"]["account"]["region"] == ["backend"]
    assert rebuilt["nested"]["another"]["region"] == []  # its factory works again
    assert rebuilt["lock"].acquire(blocking=False)
