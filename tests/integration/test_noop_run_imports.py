"""A run with nothing to do imports only what it uses: ``ferry replicate`` of a Hive table
already replicated, as a person runs it (a new process), loads neither pyiceberg nor sqlglot,
nor Jinja2 (no partition filter), nor rich (``--json``), nor boto3 (two Hive metastores, a
local work location and state store: no AWS session), nor the payloads of the other state
machines, and still finds the table unchanged through every guard; nor does an Iceberg table
already replicated, whose replica is found up to date from the two catalog entries
(``ferry.planning.iceberg_noop``) without reading its metadata
(``tests/unit/test_cold_start_imports.py`` holds the modules' imports; this holds the run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ferry.local.samples import create_iceberg_sample
from tests.helpers import config_document, one_replication

pytestmark = pytest.mark.integration

#: The no-op run in a fresh interpreter; the modules it loaded are written to ``argv[1]``.
RUN_AND_LIST_MODULES = """
import json, sys
from pathlib import Path
from ferry.commands.cli import main
code = main(sys.argv[2:])
Path(sys.argv[1]).write_text(json.dumps(sorted(sys.modules)))
sys.exit(code)
"""


def test_a_hive_table_with_nothing_to_do_imports_no_iceberg_sql_parser_or_templates(
    local_runtime, sample, replica_catalog, write_config, tmp_path
):
    replica_database = f"{sample.database}_dr"
    replica_location = (tmp_path / "dr" / "orders").as_uri()
    config = write_config(
        config_document(local_runtime, one_replication(sample.database, "orders", replica_location))
    )
    loaded = _replicated_then_again(replica_catalog, config, replica_database, "orders", tmp_path)
    assert "ferry.planning.table_plan" in loaded  # it planned
    assert not {"pyiceberg", "sqlglot", "jinja2", "rich", "boto3", "botocore.session"} & loaded
    assert (
        not {
            f"ferry.statemachine.{group}"
            for group in (
                "housekeeping_payloads",
                "feed_payloads",
                "check_payloads",
                "failover_payloads",
            )
        }
        & loaded
    )


def test_an_iceberg_table_with_nothing_to_do_imports_no_pyiceberg(
    local_runtime, sample, replica_catalog, write_config, tmp_path
):
    replica_database = f"{sample.database}_dr"
    create_iceberg_sample(
        local_runtime.source_uri, sample.database, (tmp_path / "source" / "events").as_uri()
    )
    replica_location = (tmp_path / "dr" / "events").as_uri()
    config = write_config(
        config_document(local_runtime, one_replication(sample.database, "events", replica_location))
    )
    loaded = _replicated_then_again(replica_catalog, config, replica_database, "events", tmp_path)
    assert "ferry.planning.iceberg_noop" in loaded  # it planned, from the entries
    assert not {"pyiceberg", "sqlglot", "jinja2", "rich", "boto3", "botocore.session"} & loaded


def _replicated_then_again(replica_catalog, config, replica_database, table, tmp_path) -> set[str]:
    """Replicate ``config`` (its one table ``SUCCEEDED``), then run it again in a fresh
    interpreter (``UNCHANGED``, the replica table as the first run left it); the modules the
    second run loaded."""
    arguments = ["replicate", str(config), "--home", str(tmp_path / "home"), "--json"]
    environment = {**os.environ}
    first = subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", *arguments],
        capture_output=True, text=True, timeout=300, env=environment,
    )  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    assert [t["status"] for t in json.loads(first.stdout)["tables"]] == ["SUCCEEDED"]
    replicated = replica_catalog.get_table(replica_database, table)

    modules = tmp_path / "modules.json"
    again = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST_MODULES, str(modules), *arguments],
        capture_output=True, text=True, timeout=300, env=environment,
    )  # fmt: skip

    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in json.loads(again.stdout)["tables"]] == ["UNCHANGED"]
    assert replica_catalog.get_table(replica_database, table) == replicated
    return set(json.loads(modules.read_text()))
