"""The replication states run one by one, as the state machine runs them, on the local
runtime's real metastores: what the tests named after each state (``tests/**/test_<state>.py``)
start from. Each state is called through its own module (``ferry/states/<state>.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ferry.statemachine.outcomes import resolved_tables
from ferry.statemachine.replication_payloads import PlanResult
from ferry.states import inline_copy, plan, resolve_tables
from ferry.states.context import StateContext
from ferry.storage import fs
from tests.conftest import fixed_clock
from tests.helpers import config_document


def table_entry(sample, name: str, target: str, **extra: Any) -> dict[str, Any]:
    return {
        "source-table": {"database-name": sample.database, "table-name": name},
        "replica-table": {
            "database-name": f"{sample.database}_dr",
            "table-location": f"{target}/{name}",
        },
        **extra,
    }


class StateRun:
    """A config of the sample's tables, a work folder, and the states' context."""

    def __init__(
        self, local_runtime, sample, tmp_path: Path, tables=("orders",), priorities=None,
        **extra: Any,
    ):  # fmt: skip
        self.target = fs.local_uri(tmp_path / "replica")
        priority = priorities or {}
        entries = [
            table_entry(
                sample, t, self.target, **({"priority": priority[t]} if t in priority else {})
            )
            for t in tables
        ]
        document = config_document(local_runtime, entries, **extra)
        self.config = tmp_path / "replication.yml"
        self.config.write_text(yaml.safe_dump(document, sort_keys=False))
        self.work = fs.local_uri(tmp_path / "work")
        self.context = StateContext(self.work, clock=fixed_clock)

    def items(self) -> list[dict[str, Any]]:
        """Resolve tables' items (Plan's inputs)."""
        return resolved_tables(resolve_tables.run(self.context, {"configUri": str(self.config)}, 1))

    def planned(self) -> tuple[dict[str, Any], PlanResult]:
        """The first table's item, and its plan."""
        item = self.items()[0]
        return item, plan.run(self.context, item)

    def copied(self) -> tuple[dict[str, Any], PlanResult]:
        """The first table planned and copied inline."""
        item, planned = self.planned()
        inline_copy.run(self.context, run_of(planned))
        return item, planned


def run_of(planned: PlanResult) -> dict[str, str]:
    """What Inline copy, Commit and Notify success are given (``PlannedRun``)."""
    return {"planUri": planned.plan_uri, "eventId": planned.event_id}
