"""Errors that reach a person are Ferry's named errors (``ferry/core/errors.py``).

A plain ``ValueError``, ``RuntimeError``, ``KeyError``, ``TypeError`` or ``Exception`` raised
in ``ferry/``, ``lambdas/``, ``emr_jobs/`` or ``infra/`` is either a pydantic validator's (pydantic
wants ``ValueError``; the config's load makes it one ``ConfigError`` line naming the key) or
listed below with the reason it never reaches a person as it is. A new one fails this test.
"""

from __future__ import annotations

import ast
import socket
from pathlib import Path

import pytest

from ferry.commands import EXIT_FAILED, EXIT_USAGE, run_command
from ferry.core.errors import ConfigError, FerryError, LocalRuntimeError, SettingsError

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("ferry", "lambdas", "emr_jobs", "infra")
PLAIN = {"ValueError", "RuntimeError", "KeyError", "TypeError", "Exception"}
PYDANTIC_VALIDATORS = {"field_validator", "model_validator"}

# Checks and parsers pydantic validators (and argparse types) call: their ValueError becomes
# the config's (the settings', the command line's) one line naming the key.
CHECK = "a check pydantic validators call: the load makes it one ConfigError line"
PARSER = "a parser like int(): pydantic validators and argparse types make it one line"

#: (file, function) → (how many plain raises it holds, why they are left plain).
ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    ("ferry/config/assume_role.py", "check_role_arn"): (1, CHECK),
    ("ferry/config/assume_role.py", "parse_session_duration"): (2, PARSER),
    ("ferry/config/assume_role.py", "translate_circus_train"): (3, "parse_config: ConfigError"),
    ("ferry/config/base.py", "_not_a_boolean"): (1, "a BeforeValidator: " + CHECK),
    ("ferry/config/catalogs.py", "check_metastore_uri"): (3, CHECK),
    ("ferry/config/checks.py", "check_hive_name"): (2, CHECK),
    ("ferry/config/checks.py", "check_location"): (8, CHECK),
    ("ferry/config/checks.py", "check_region"): (1, CHECK),
    ("ferry/config/checks.py", "check_bucket_name"): (5, CHECK),
    ("ferry/config/housekeeping.py", "_parse_iso_duration"): (1, PARSER),
    ("ferry/config/objectives.py", "parse_rpo"): (2, PARSER),
    ("ferry/config/permissions.py", "check_lake_formation_principal"): (1, CHECK),
    ("ferry/config/permissions.py", "check_hive_principal"): (1, CHECK),
    ("ferry/config/permissions.py", "check_permissions_catalogs"): (2, CHECK),
    ("ferry/config/objectives.py", "parse_priority"): (1, PARSER),
    ("ferry/config/schedules.py", "_CronField.value"): (1, CHECK),
    ("ferry/config/schedules.py", "check_schedule_expression"): (1, CHECK),
    ("ferry/config/schedules.py", "_check_rate"): (3, CHECK),
    ("ferry/config/schedules.py", "_check_cron"): (2, CHECK),
    ("ferry/config/schedules.py", "_check_cron_field"): (2, CHECK),
    ("ferry/config/schedules.py", "check_time_zone"): (1, CHECK),
    ("ferry/config/tables.py", "_compile"): (1, CHECK),
    ("ferry/config/triggers.py", "check_catalog_events_source"): (1, CHECK),
    ("ferry/core/duration.py", "parse_duration"): (2, PARSER),
    ("ferry/config/filters.py", "_check_arguments"): (2, "inside a template: check_template's"),
    ("ferry/config/filters.py", "check_template"): (3, CHECK),
    ("infra/settings_access.py", "_s3_prefix"): (1, "an AfterValidator: the load's SettingsError"),
    ("infra/settings_access.py", "_matching.check"): (1, "an AfterValidator: the load's SettingsError"),
    # Programming errors: an invariant the callers keep, never a person's input.
    ("ferry/storage/avro.py", "replica_schema_url"): (1, "its one caller asks with a place only"),
    ("ferry/storage/fingerprint.py", "_walk.finish"): (1, "an invariant of the sorted walk"),
    ("ferry/lifecycle/replica_state.py", "open_state"): (1, "every caller names a table or a home"),
    ("ferry/core/resource_names.py", "fitted"): (1, "settings bound the names' parts"),
    ("ferry/copying/s3_copy.py", "S3ServerSideCopier.__init__"): (3, "copier-options bound them first"),
    ("ferry/planning/selection.py", "expand"): (1, "needs_catalog decides who passes list_tables"),
    ("ferry/statemachine/__init__.py", "render"): (1, "Ferry's own substitutions, all of them"),
    ("ferry/local/emulator_resume.py", "_resume"): (1, "resume_all records it as stopped"),
    ("emr_jobs/copy_files.py", "balance"): (1, "--tasks is positive, and so is Spark's parallelism"),
}


def _plain_raises() -> dict[tuple[str, str], int]:
    """Every plain raise outside a pydantic validator: (file, function) → how many."""
    found: dict[tuple[str, str], int] = {}

    def walk(node: ast.AST, path: str, scope: list[str], validator: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                decorators = {
                    ast.unparse(d.func if isinstance(d, ast.Call) else d)
                    for d in getattr(child, "decorator_list", [])
                }
                inside = isinstance(child, ast.ClassDef) and validator
                walk(child, path, [*scope, child.name], inside or bool(decorators & PYDANTIC_VALIDATORS))
                continue
            if isinstance(child, ast.Raise) and child.exc is not None and not validator:
                raised = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                if isinstance(raised, ast.Name) and raised.id in PLAIN:
                    key = (path, ".".join(scope) or "<module>")
                    found[key] = found.get(key, 0) + 1
            walk(child, path, scope, validator)

    for folder in FOLDERS:
        for file in sorted((ROOT / folder).rglob("*.py")):
            path = file.relative_to(ROOT).as_posix()
            walk(ast.parse(file.read_text(encoding="utf-8")), path, [], False)
    return found


def test_only_the_listed_plain_errors_are_raised_and_the_list_is_current():
    found = _plain_raises()
    new = {key: count for key, count in found.items() if count != ALLOWED.get(key, (0, ""))[0]}
    assert not new, (
        "raise one of Ferry's named errors (ferry/core/errors.py) where a person can meet it; "
        f"a programming error that cannot goes to ALLOWED with its reason: {new}"
    )
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"no longer raised: remove from ALLOWED: {stale}"


def test_a_new_plain_raise_is_found(tmp_path, monkeypatch):
    module = tmp_path / "ferry" / "new.py"
    module.parent.mkdir()
    module.write_text(
        "from pydantic import field_validator\n"
        "class Model:\n"
        "    @field_validator('x')\n"
        "    def _x(cls, value):\n"
        "        raise ValueError('a validator may')\n"
        "def step():\n"
        "    raise RuntimeError('a step may not')\n"
    )
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert _plain_raises() == {("ferry/new.py", "step"): 1}


def test_settings_errors_are_config_errors_one_line_and_exit_2(capsys):
    from infra.settings import load_environment

    assert issubclass(SettingsError, ConfigError)
    assert run_command(lambda: load_environment("nowhere")) == EXIT_USAGE
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("ferry: error: no settings for environment 'nowhere': expected ")


@pytest.fixture
def busy_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_the_local_runtime_refuses_a_port_in_use_with_its_named_error(tmp_path, busy_port):
    from ferry.local.emulator import start_emulator

    assert issubclass(LocalRuntimeError, FerryError)
    with pytest.raises(LocalRuntimeError) as refused:
        start_emulator(tmp_path, busy_port)
    assert str(refused.value) == f"port {busy_port} is already in use; pick another with --aws-port"
    assert not (tmp_path / "aws").exists()


def test_ferry_local_up_on_a_port_in_use_is_one_line_and_exit_1(tmp_path, busy_port, capsys):
    from ferry.commands.cli import main

    home = tmp_path / "home"
    code = main(["local", "up", "--home", str(home), "--source-port", str(busy_port)])
    assert code == EXIT_FAILED
    assert capsys.readouterr().err == (
        f"ferry: error: port {busy_port} is already in use; pick another with --source-port\n"
    )
    assert not (home / "source").exists()
