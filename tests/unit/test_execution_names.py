"""Execution names as Step Functions takes them (``ferry.local.emulator_executions``): at
most 80 characters, none of those AWS refuses; the names Ferry generates pass."""

from __future__ import annotations

import pytest

from ferry.local import deploy
from ferry.local.emulator_executions import name_problem
from ferry.local.emulator_map_children import child_execution_name


def test_the_names_ferry_generates_pass():
    assert name_problem(deploy.execution_name()) is None
    assert name_problem(deploy.execution_name("catalog-changes")) is None
    assert name_problem(child_execution_name(99_999_999)) is None


def test_80_characters_pass_and_81_are_refused_as_aws_refuses_them():
    assert name_problem("x" * 80) is None
    assert name_problem("x" * 81).startswith(
        f"ValidationException: 1 validation error detected: Value '{'x' * 81}' at 'name'"
    )


@pytest.mark.parametrize(
    "character", list(' <>{}[]?*"#%\\^|~`$&,;:/') + ["\t", "\x00", "\x85", "\u00a0"]
)
def test_a_character_aws_refuses_is_refused_by_name(character):
    name = f"run{character}1"
    assert name_problem(name) == f"InvalidName: Invalid Name: '{name}'"


@pytest.mark.parametrize("name", ["run-1", "run_1", "run.1", "Run1", "2026-11-21T08.30"])
def test_letters_digits_and_the_other_punctuation_pass(name):
    assert name_problem(name) is None
