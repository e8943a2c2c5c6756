"""``ferry status --governance``: each replica's column statistics and keys compared with its
source's, as a person and a script read them; nothing written."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ferry.core.statistics import StatisticsKind
from ferry.storage import fs
from tests.e2e.test_status import ferry
from tests.helpers import catalog_state, config_document
from tests.integration.test_replicate_statistics import _analyzed, _entry

pytestmark = pytest.mark.e2e


def test_status_compares_statistics_and_keys_and_says_what_a_run_would_write(
    local_runtime, source_catalog, replica_catalog, unique, tmp_path, write_config
):
    sample = _analyzed(source_catalog, f"stats_status_{unique}", local_runtime.warehouse)
    target = fs.local_uri(tmp_path / "replica")
    document = config_document(
        local_runtime, [_entry(sample, "customers", target), _entry(sample, "orders", target)]
    )
    config, home = str(write_config(document)), str(tmp_path / "home")
    done = ferry("replicate", config, "--home", home)
    assert done.returncode == 0, done.stderr

    status = ferry("status", config, "--home", home, "--governance")
    assert status.returncode == 0, status.stderr
    shown = status.stdout.splitlines()
    assert shown[1] == shown[3] == "  statistics and keys: in sync", status.stdout

    # The source is analysed again: one column of the whole table has new statistics.
    amount = source_catalog.get_column_statistics(sample.orders)["amount"]
    assert amount.kind is StatisticsKind.DOUBLE
    source_catalog.set_column_statistics(sample.orders, [replace(amount, high=99.5)])
    replica_db = f"{sample.database}_dr"
    before = catalog_state(replica_catalog, replica_db, ["orders", "customers"])

    status = ferry("status", config, "--home", home, "--governance", "--json")
    assert status.returncode == 0, status.stderr
    rows = {row["sourceTable"]: row for row in json.loads(status.stdout)}
    orders = rows[f"{sample.database}.orders"]["governance"]
    assert orders["statistics"] == {
        "tableColumns": 1, "partitions": 0, "partitionColumns": 0, "keysToAdd": 0, "keysToDrop": 0
    }  # fmt: skip
    assert orders["permissions"] is None  # the config has no permissions section
    assert rows[f"{sample.database}.customers"]["governance"]["statistics"] is None
    assert catalog_state(replica_catalog, replica_db, ["orders", "customers"]) == before
    human = ferry("status", config, "--home", home, "--governance").stdout
    assert "  statistics and keys differ: 1 table column to write" in human.splitlines()

    done = ferry("replicate", config, "--home", home)
    assert done.returncode == 0, done.stderr
    status = ferry("status", config, "--home", home, "--governance", "--json")
    assert [row["governance"]["statistics"] for row in json.loads(status.stdout)] == [None, None]
