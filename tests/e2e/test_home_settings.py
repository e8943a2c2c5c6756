"""What ``--home`` selects is where every client goes: ``ferry execute --wait`` and ``ferry
doctor`` from a shell without the settings ``ferry local up`` printed (or with another
runtime's) reach the local runtime in ``--home`` with boto3 and with pyarrow alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.e2e.test_cli import setup  # noqa: F401 - the fixture
from tests.helpers import files_below

pytestmark = pytest.mark.e2e


def bare_shell(tmp_path) -> dict[str, str]:
    """This process's environment without any AWS setting: no endpoint, credentials, region
    or profile, and no instance metadata to look credentials up in."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    environment.update(
        AWS_CONFIG_FILE=str(tmp_path / "no-aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    return environment


def test_execute_wait_reads_the_tables_outcomes_from_the_runtime_home_selects(
    setup,  # noqa: F811
    write_config,
    sample,
    local_runtime,
    pipeline,
    tmp_path,
):
    path = write_config(setup["document"]())
    result = subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", "execute", str(path), "--wait", "--json",
         "--home", str(local_runtime.state_dir), "--table", f"{sample.database}.customers"],
        capture_output=True, text=True, timeout=300, env=bare_shell(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["status"] == "SUCCEEDED"
    # The tables' outcomes are what the Map over the tables wrote to the work bucket (S3),
    # read through pyarrow.
    [table] = outcome["tables"]
    assert table["plan"]["copier"] == "inline" and table["plan"]["files"] == 1
    assert list(files_below(f"{setup['target']}/customers").values()) == [table["plan"]["bytes"]]
