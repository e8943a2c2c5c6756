"""What a run of ``ferry replicate`` (and ``ferry failback``) reports: one outcome per table,
read from the in-process driver's Map iteration output (``ferry.commands.in_process``), or a
dry run's preview."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TableOutcome:
    """What happened to one table, for people (the CLI) and machines (``--json``)."""

    source_table: str
    replica_table: str | None
    status: str  # SUCCEEDED | UNCHANGED | FAILED | PLANNED
    event_id: str | None
    seconds: float = 0.0
    mode: str | None = None
    kind: str | None = None
    copier: str | None = None
    replica_location: str | None = None
    partitions_added: int = 0
    partitions_altered: int = 0
    files: int = 0
    bytes: int = 0
    partition_filter: str | None = None
    error_type: str | None = None
    error: str | None = None
    #: After a failure: the run's snapshot, and whether it was removed or kept (referenced).
    snapshot: str | None = None
    snapshot_removed: bool = False
    #: The states this table went through, in order.
    states: tuple[str, ...] = ()
    #: What a person should know about the run, one line each (``ReplicationPlan.notices``).
    notices: tuple[str, ...] = ()
    #: A failed attempt of the same event was continued (``ferry.lifecycle.attempts``): of ``files``
    #: and ``bytes``, what it had already copied (and was not copied again).
    resumed: bool = False
    reused_files: int = 0
    reused_bytes: int = 0

    @property
    def partitions(self) -> int:
        return self.partitions_added + self.partitions_altered

    @property
    def ok(self) -> bool:
        return self.status != "FAILED"

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["states"] = list(self.states)
        data["partitions"] = self.partitions
        return data


def outcome_of(
    result: dict[str, Any], states: list[str], seconds: float, mode: str | None
) -> TableOutcome:
    """A table's outcome from the Map iteration's output (success path or Abort's result)."""
    if result.get("status") == "FAILED":
        return TableOutcome(
            source_table=result["sourceTable"],
            replica_table=result.get("replicaTable"),
            status="FAILED",
            event_id=result.get("eventId"),
            seconds=seconds,
            mode=mode,
            error_type=result.get("error"),
            error=result.get("cause"),
            snapshot=result.get("snapshot"),
            snapshot_removed=bool(result.get("snapshotRemoved")),
            states=tuple(states),
        )
    plan, notified = result.get("plan") or {}, result.get("notified") or {}
    committed = (result.get("commit") or {}).get("result") or {}
    unchanged = notified.get("status") == "UNCHANGED"
    return TableOutcome(
        source_table=result["sourceTable"],
        replica_table=plan.get("replicaTable"),
        status=notified.get("status", "SUCCEEDED"),
        # A resumed run carries its attempt's event id (Plan's), not the item's.
        event_id=plan.get("eventId") or result.get("eventId"),
        seconds=seconds,
        mode=mode,
        kind=plan.get("kind"),
        copier=plan.get("copier"),
        replica_location=plan.get("replicaLocation"),
        partitions_added=committed.get("partitionsAdded", 0),
        partitions_altered=committed.get("partitionsAltered", 0),
        files=0 if unchanged else plan.get("files", 0),
        bytes=0 if unchanged else plan.get("bytes", 0),
        partition_filter=plan.get("partitionFilter"),
        states=tuple(states),
        notices=tuple(plan.get("notices") or ()),
        resumed=bool(plan.get("resumed")),
        reused_files=0 if unchanged else plan.get("reusedFiles") or 0,
        reused_bytes=0 if unchanged else plan.get("reusedBytes") or 0,
    )


def preview_outcome(
    source_table: str, replica_table: str, mode: str, preview: dict[str, Any]
) -> TableOutcome:
    """A dry run's outcome: what Plan would decide."""
    return TableOutcome(
        source_table=source_table,
        replica_table=replica_table,
        status="PLANNED",
        event_id=None,
        mode=mode,
        kind=preview["kind"],
        copier=preview["copier"],
        replica_location=preview["replicaLocation"],
        partitions_added=preview["partitionsToAdd"],
        partitions_altered=preview["partitionsToAlter"],
        files=preview["files"],
        bytes=preview["bytes"],
        partition_filter=preview["partitionFilter"],
    )
