"""What housekeeping was asked to do (``Request``), and what it did: an outcome per path it
looked at, a summary per table, and the report the step writes
(``ferry.lifecycle.retired_snapshots`` decides; ``ferry.states.housekeeping`` writes it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Action(StrEnum):
    DELETED = "deleted"
    WOULD_DELETE = "would delete"  # a dry run
    KEPT = "kept"
    FOUND = "found"  # the vacuum found it; deleting was not asked for
    LEDGERED = "ledgered"  # the vacuum handed it to the ledger: deleted after the grace period
    WOULD_LEDGER = "would ledger"  # a dry run


# -- what housekeeping did ----------------------------------------------------------------------


@dataclass(frozen=True)
class PathOutcome:
    """One location housekeeping looked at, and what it did with it."""

    path: str
    action: Action
    reason: str
    #: Ledger entries: the event that superseded the path, and when.
    event_id: str | None = None
    recorded_at: str | None = None


@dataclass
class TableHousekeeping:
    source_table: str
    replica_table: str
    location: str | None
    grace_period: str
    strategy: str
    ledger: list[PathOutcome] = field(default_factory=list)
    orphans: list[PathOutcome] = field(default_factory=list)
    skipped: str | None = None

    def count(self, outcomes: Iterable[PathOutcome], *actions: Action) -> int:
        return sum(1 for outcome in outcomes if outcome.action in actions)

    def summary(self) -> dict[str, Any]:
        return {
            "sourceTable": self.source_table,
            "replicaTable": self.replica_table,
            "location": self.location,
            "gracePeriod": self.grace_period,
            "strategy": self.strategy,
            "skipped": self.skipped,
            "deleted": self.count(self.ledger, Action.DELETED, Action.WOULD_DELETE),
            "kept": self.count(self.ledger, Action.KEPT),
            "orphans": len(self.orphans),
            "orphansLedgered": self.count(self.orphans, Action.LEDGERED, Action.WOULD_LEDGER),
        }


@dataclass
class HousekeepingReport:
    dry_run: bool
    vacuum: bool
    delete_orphans: bool
    started: str
    state: str
    tables: list[TableHousekeeping] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dryRun": self.dry_run,
            "vacuum": self.vacuum,
            "deleteOrphans": self.delete_orphans,
            "started": self.started,
            "state": self.state,
            "tables": [
                {
                    **table.summary(),
                    "ledger": [_outcome_dict(o) for o in table.ledger],
                    "orphanFolders": [_outcome_dict(o) for o in table.orphans],
                }
                for table in self.tables
            ],
        }

    def result(self, report_uri: str) -> dict[str, Any]:
        """The step's result: counts, and the URI of the report that names every table and
        path. Its size does not grow with the config's tables (Step Functions takes 256 KiB
        per state: a line per table would pass it at a few hundred tables)."""
        tables = [table.summary() for table in self.tables]
        return {
            "dryRun": self.dry_run,
            "vacuum": self.vacuum,
            "deleted": sum(t["deleted"] for t in tables),
            "kept": sum(t["kept"] for t in tables),
            "orphans": sum(t["orphans"] for t in tables),
            "orphansLedgered": sum(t["orphansLedgered"] for t in tables),
            "tableCount": len(tables),
            "tablesSkipped": sum(1 for t in tables if t["skipped"]),
            "reportUri": report_uri,
        }


def _outcome_dict(outcome: PathOutcome) -> dict[str, Any]:
    data = asdict(outcome)
    data["action"] = outcome.action.value
    data["eventId"], data["recordedAt"] = data.pop("event_id"), data.pop("recorded_at")
    return data


# -- the request ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """What the step (and ``ferry housekeeping``) was asked to do."""

    dry_run: bool = False
    vacuum: bool = False
    delete_orphans: bool = False

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Request:
        delete_orphans = bool(payload.get("deleteOrphans"))
        return cls(
            dry_run=bool(payload.get("dryRun")),
            vacuum=bool(payload.get("vacuum")) or delete_orphans,
            delete_orphans=delete_orphans,
        )
