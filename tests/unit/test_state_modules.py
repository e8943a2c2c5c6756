"""The trail a newcomer follows from one state's name: its handler (``lambdas/<state>.py``),
its state module (``ferry/states/<state>.py``), its sample event (``events/<state>.json``)
and its test (``tests/**/test_<state>.py``), one file each, for every function the
definitions and the stack name."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from ferry import statemachine

ROOT = Path(__file__).parents[2]
STATES = {
    handler.split(".")[1]: function for function, handler in statemachine.ALL_FUNCTIONS.items()
}


@pytest.mark.parametrize("state", sorted(STATES))
def test_the_state_has_its_handler_module_event_and_test(state):
    handler = ROOT / "lambdas" / f"{state}.py"
    module = ROOT / "ferry" / "states" / f"{state}.py"
    assert handler.is_file() and module.is_file()
    assert statemachine.STATES[STATES[state]] == f"ferry.states.{state}"
    # The handler runs its state module, and only through ``run``.
    assert f"{state}.run(" in handler.read_text()
    assert callable(importlib.import_module(f"ferry.states.{state}").run)
    assert (ROOT / "events" / f"{state}.json").is_file()
    tests = sorted((ROOT / "tests").glob(f"**/test_{state}.py"))
    assert tests, f"no tests/**/test_{state}.py"


def test_every_state_module_is_a_functions_state():
    """No module in ferry/states/ without a function, beside the shared context and the
    catalog check the Plan function also answers."""
    modules = {p.stem for p in (ROOT / "ferry" / "states").glob("*.py")}
    assert modules - set(STATES) == {"__init__", "context", "catalog_check"}


def test_the_independence_contract_names_every_state_module():
    """`make lint` holds the state modules independent of one another: each one, new ones too."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [independence] = [c for c in contracts["contracts"] if c["type"] == "independence"]
    modules = {p.stem for p in (ROOT / "ferry" / "states").glob("*.py")} - {"__init__", "context"}
    assert set(independence["modules"]) == {f"ferry.states.{m}" for m in modules}
