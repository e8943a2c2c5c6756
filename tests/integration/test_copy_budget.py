"""The copy budget as the in-process driver walks it: a table whose copy finds every slot held
waits (``Wait for a copy slot``) and claims again, copies once granted and frees its slot at
Commit; one run starts its critical tables first. Real metastores, the real definition."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import yaml

from ferry.commands.in_process import InProcessDriver
from ferry.config import Priority
from ferry.copying.budget import CopyBudget, EnvironmentBudget
from ferry.copying.budget.sqlite import SqliteSlots
from ferry.copying.spark_job import LocalSpark
from ferry.states.context import StateContext
from ferry.storage import fs
from tests.conftest import fixed_clock
from tests.helpers import config_document

pytestmark = pytest.mark.integration


def table(sample, name: str, target: str, priority: str) -> dict:
    return {
        "source-table": {"database-name": sample.database, "table-name": name},
        "replica-table": {
            "database-name": f"{sample.database}_dr",
            "table-location": f"{target}/{name}",
        },
        "priority": priority,
    }


def test_a_copy_waits_for_a_held_slot_then_copies_and_frees_it(
    local_runtime, replica_catalog, sample, tmp_path
):
    target = (tmp_path / "replica").as_uri()
    document = config_document(
        local_runtime,
        [table(sample, "orders", target, "bulk"), table(sample, "customers", target, "critical")],
    )
    config = tmp_path / "replication.yml"
    config.write_text(yaml.safe_dump(document, sort_keys=False))
    slots = SqliteSlots(tmp_path / "home" / "state.sqlite3")
    budget = CopyBudget(slots=1, wait_seconds=2)
    # Another replication holds the only slot; it finishes while the first table waits.
    assert slots.claim(budget, "ferry-elsewhere", Priority.BULK, datetime.now(UTC)).granted
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        slots.release("ferry-elsewhere")

    context = StateContext(
        fs.local_uri(tmp_path / "work"), clock=fixed_clock,
        budget=EnvironmentBudget(budget, slots),
    )  # fmt: skip
    driver = InProcessDriver(context, LocalSpark(tmp_path / "spark"), sleep=sleep)
    execution = driver.run({"configUri": str(config), "tables": []})

    assert execution.status == "SUCCEEDED", execution.cause
    customers, orders = f"{sample.database}.customers", f"{sample.database}.orders"
    # The critical table is listed, so run, first: it met the held slot and waited.
    tables = [owner for owner, state in execution.states if state == "Plan"]
    assert tables == [customers, orders]
    assert execution.table_states(customers) == [
        "Plan", "Choose copier", "Claim copy slot", "Copy slot granted?",
        "Wait for a copy slot", "Claim copy slot", "Copy slot granted?",
        "Inline copy", "Commit", "Notify success",
    ]  # fmt: skip
    assert waits == [2.0]
    # The second table found the slot its predecessor's Commit freed.
    assert execution.table_states(orders)[2:5] == [
        "Claim copy slot", "Copy slot granted?", "Inline copy",
    ]  # fmt: skip
    assert slots.holders() == [] and slots.waiting() == []
    for name in ("orders", "customers"):
        assert replica_catalog.get_table(f"{sample.database}_dr", name) is not None


def test_without_a_budget_every_claim_is_granted_at_once(
    local_runtime, replica_catalog, sample, tmp_path
):
    target = (tmp_path / "replica").as_uri()
    document = config_document(local_runtime, [table(sample, "orders", target, "normal")])
    config = tmp_path / "replication.yml"
    config.write_text(yaml.safe_dump(document, sort_keys=False))
    context = StateContext(fs.local_uri(tmp_path / "work"), clock=fixed_clock)
    driver = InProcessDriver(context, None, sleep=lambda seconds: pytest.fail("waited"))
    execution = driver.run({"configUri": str(config), "tables": []})
    assert execution.status == "SUCCEEDED", execution.cause
    states = execution.table_states(f"{sample.database}.orders")
    assert "Wait for a copy slot" not in states and "Inline copy" in states
