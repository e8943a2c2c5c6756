"""State `Resolve tables` (``ferry/states/resolve_tables.py``): the config's tables as the
Map's items, critical first, each with its own event id; real metastores."""

from __future__ import annotations

import pytest

from ferry.core.errors import ConfigError
from ferry.states import resolve_tables
from tests.state_runs import StateRun

pytestmark = pytest.mark.integration


def test_each_table_is_one_item_with_its_own_event_id_critical_tables_first(
    local_runtime, sample, tmp_path
):
    run = StateRun(
        local_runtime, sample, tmp_path, tables=("orders", "customers"),
        priorities={"customers": "critical"},
    )  # fmt: skip

    items = run.items()

    assert [item["sourceTable"] for item in items] == [
        f"{sample.database}.customers",
        f"{sample.database}.orders",
    ]
    assert [item["replicaTable"] for item in items] == [
        f"{sample.database}_dr.customers",
        f"{sample.database}_dr.orders",
    ]
    assert len({item["eventId"] for item in items}) == 2
    assert all(item["configUri"] == str(run.config) for item in items)


def test_adopting_a_table_the_run_does_not_replicate_is_refused(local_runtime, sample, tmp_path):
    run = StateRun(local_runtime, sample, tmp_path)
    with pytest.raises(ConfigError, match=r"adopt: sales_.*_dr\.customers is not a replica table"):
        resolve_tables.run(
            run.context,
            {"configUri": str(run.config), "adopt": [f"{sample.database}_dr.customers"]},
            1,
        )
