"""The plan document: what Plan leaves under ``<work>/runs/<event-id>/plan.json`` for the
later states (the plan, the copier it chose, when the run started), written and read whole.

Apart from ``ferry.planning.runs`` (the run's locations, the copier's kind) because the
plan's model holds the table plan, and with it pyiceberg's and sqlglot's: a step that never
reads a plan does not import them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import TypeAdapter

from ferry.planning.runs import CopierKind
from ferry.planning.table_plan import ReplicationPlan
from ferry.storage import fs


@dataclass(frozen=True)
class PlanDocument:
    """What Plan leaves for the later states: the config's location, the plan, the copier."""

    config_uri: str
    copier: CopierKind
    started: datetime
    plan: ReplicationPlan
    #: When what started the run happened (the S3 object's event, the schedule's due time;
    #: else the run's start): the replication lag is measured from it.
    triggered: datetime | None = None
    #: When Plan read the source (before it read anything): the replica holds every change
    #: the source made before then once this run succeeds (``ferry.planning.source_versions``).
    source_read_at: datetime | None = None
    #: The replica is adopted (``TableItem.adopt``): Commit claims it as Plan took it.
    adopt: bool = False


_PLAN_DOCUMENT = TypeAdapter(PlanDocument)


def write_plan(uri: str, document: PlanDocument) -> None:
    fs.write_bytes(uri, _PLAN_DOCUMENT.dump_json(document))


def read_plan(plan_uri: str) -> PlanDocument:
    return _PLAN_DOCUMENT.validate_json(fs.read_bytes(plan_uri))
