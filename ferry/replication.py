"""The replication of tables, step by step: plan, copy, verify, commit, notify.

Each table replicates on its own: its failure is recorded in its outcome and the next
table goes on. Nothing is written to the replica catalog until every file of the new
snapshot is at the target and verified; a failed copy removes the snapshot folder again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from ferry import fs
from ferry.catalog import Catalog
from ferry.commit import commit
from ferry.config import CopierOptions, ReplicationConfig, TableReplication
from ferry.copier import Copier, InlineCopier, Progress
from ferry.errors import CopyError, FerryError
from ferry.event_id import new_event_id
from ferry.filters import Clock, utc_now
from ferry.model import Table
from ferry.notify import NoNotifier, ReplicationEvent, SnsNotifier
from ferry.plan import ReplicationPlan, plan_replication

logger = logging.getLogger(__name__)


class Status(StrEnum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    PLANNED = "PLANNED"  # a dry run


@dataclass(frozen=True)
class TableOutcome:
    """What happened to one table, for people (the CLI) and machines (``--json``)."""

    source_table: str
    replica_table: str
    mode: str
    status: Status
    event_id: str
    started: datetime
    finished: datetime
    #: "partitioned table", "table" or "view" (known once the source table was read).
    kind: str | None = None
    replica_location: str | None = None
    partitions_added: int = 0
    partitions_altered: int = 0
    files: int = 0
    bytes: int = 0
    partition_filter: str | None = None
    modified_partitions: list[list[str]] = field(default_factory=list)
    error_type: str | None = None
    error: str | None = None

    @property
    def partitions(self) -> int:
        return self.partitions_added + self.partitions_altered

    @property
    def ok(self) -> bool:
        return self.status is not Status.FAILED

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        data["started"] = self.started.isoformat()
        data["finished"] = self.finished.isoformat()
        data["partitions"] = self.partitions
        return data


def _kind(table: Table) -> str:
    if table.is_view:
        return "view"
    return "partitioned table" if table.is_partitioned else "table"


class Observer(Protocol):
    """Told when a table's copy starts and ends; returns a byte counter to advance."""

    def copy_started(self, plan: ReplicationPlan) -> Progress | None: ...

    def copy_finished(self, plan: ReplicationPlan) -> None: ...


class _Silent:
    def copy_started(self, plan: ReplicationPlan) -> Progress | None:
        return None

    def copy_finished(self, plan: ReplicationPlan) -> None:
        pass


CopierFactory = Callable[[CopierOptions], Copier]


def inline_copier(options: CopierOptions) -> Copier:
    return InlineCopier(threads=options.threads, chunk_size=options.chunk_size_mib * 1024 * 1024)


def copy_snapshot(plan: ReplicationPlan, copier: Copier, progress: Progress | None = None) -> None:
    """Copy the plan's manifest; on failure remove the new snapshot folder again.

    The snapshot folder is new and nothing points at it yet, so a failed run leaves the
    target as it found it.
    """
    try:
        copier.copy(plan.manifest, progress)
    except Exception as error:
        remove_snapshot(plan)
        if isinstance(error, FerryError):
            raise
        raise CopyError(f"copy failed: {error}") from error


def remove_snapshot(plan: ReplicationPlan) -> None:
    if plan.snapshot_location:
        try:
            fs.delete_tree(plan.snapshot_location)
        except OSError:
            logger.warning("could not remove %s after a failed copy", plan.snapshot_location)


class Replicator:
    """Replicates the tables of one config between one source and one replica catalog."""

    def __init__(
        self,
        config: ReplicationConfig,
        source: Catalog,
        replica: Catalog,
        notifier: SnsNotifier | NoNotifier | None = None,
        *,
        clock: Clock = utc_now,
        event_ids: Callable[[], str] | None = None,
        copier_factory: CopierFactory = inline_copier,
        observer: Observer | None = None,
    ):
        self.config = config
        self.source = source
        self.replica = replica
        self.notifier = notifier or NoNotifier()
        self.clock = clock
        self.event_ids = event_ids or (lambda: new_event_id(clock))
        self.copier_factory = copier_factory
        self.observer = observer or _Silent()

    def run(
        self, replications: Sequence[TableReplication], dry_run: bool = False
    ) -> list[TableOutcome]:
        return [self.replicate_table(replication, dry_run) for replication in replications]

    def replicate_table(self, replication: TableReplication, dry_run: bool = False) -> TableOutcome:
        event_id = self.event_ids()
        started = self.clock()
        names = {
            "source_table": replication.source_table.qualified_name,
            "replica_table": replication.replica_qualified_name,
            "mode": replication.replication_mode.value,
            "event_id": event_id,
            "started": started,
        }
        if not dry_run:
            self._notify(replication, "START", event_id, started)
        plan: ReplicationPlan | None = None
        try:
            options = self.config.copier_options_for(replication)
            plan = plan_replication(
                replication, self.source, self.replica, event_id, self.clock, options.threads
            )
            if not dry_run:
                self._copy(plan, options)
                commit(plan, self.replica)
        except Exception as error:  # each table fails on its own; the run goes on
            if not isinstance(error, FerryError):
                logger.exception("unexpected error replicating %s", names["source_table"])
            outcome = TableOutcome(
                **names,
                status=Status.FAILED,
                finished=self.clock(),
                error_type=type(error).__name__,
                error=str(error),
            )
            if not dry_run:
                self._notify(replication, "FAILURE", event_id, started, outcome=outcome, plan=plan)
            return outcome
        outcome = TableOutcome(
            **names,
            status=Status.PLANNED if dry_run else Status.SUCCEEDED,
            finished=self.clock(),
            kind=_kind(plan.source_table),
            replica_location=plan.replica_table.location,
            partitions_added=len(plan.partitions_to_add),
            partitions_altered=len(plan.partitions_to_alter),
            files=len(plan.manifest.tasks),
            bytes=plan.manifest.total_bytes,
            partition_filter=plan.partition_filter,
            modified_partitions=[list(p.values) for p in plan.replica_partitions],
        )
        if not dry_run:
            self._notify(replication, "SUCCESS", event_id, started, outcome=outcome, plan=plan)
        return outcome

    def _copy(self, plan: ReplicationPlan, options: CopierOptions) -> None:
        if not plan.manifest.tasks:
            return
        progress = self.observer.copy_started(plan)
        try:
            copy_snapshot(plan, self.copier_factory(options), progress)
        finally:
            self.observer.copy_finished(plan)

    def _notify(
        self,
        replication: TableReplication,
        kind: str,
        event_id: str,
        started: datetime,
        outcome: TableOutcome | None = None,
        plan: ReplicationPlan | None = None,
    ) -> None:
        event = ReplicationEvent(
            type=kind,
            event_id=event_id,
            source_table=replication.source_table.qualified_name,
            replica_table=replication.replica_qualified_name,
            replica_catalog_uris=self.replica.description,
            start_time=started,
            end_time=outcome.finished if outcome else None,
            replica_table_location=(
                plan.replica_table.location if plan else replication.replica_table.table_location
            ),
            partition_keys=plan.source_table.partition_keys if plan else (),
            modified_partitions=outcome.modified_partitions if outcome else [],
            bytes_replicated=outcome.bytes if outcome else 0,
            error_message=outcome.error if outcome else None,
        )
        try:
            self.notifier.publish(event)
        except Exception as error:  # a notification never undoes or fails a replication
            logger.warning("could not publish %s notification for %s: %s", kind, event_id, error)
