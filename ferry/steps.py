"""A compatibility façade over the state modules, kept only for its callers' sake.

What one state of the definitions does lives in its own module, ``ferry/states/<state>.py``,
taking a ``ferry.states.context.StateContext`` and its input model (``ferry.payloads``). The
Lambda handlers, the in-process driver and the commands call those modules; ``Steps`` is a
``StateContext`` whose methods are one-line delegations to them, for code that still calls
the steps by method. New code calls the state modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ferry.config import ReplicationConfig, TableReplication
from ferry.copier import Progress
from ferry.payloads import (
    AbortInput,
    AbortResult,
    CatalogCheckInput,
    CatalogCheckResult,
    CommitResult,
    CopyBatchInput,
    CopyBatchResult,
    CopySlotInput,
    CopySlotResult,
    HousekeepingInput,
    HousekeepingResult,
    InlineCopyResult,
    NotifySuccessResult,
    PlanInput,
    PlannedRun,
    PlanResult,
    ResolveTablesInput,
    ResolveTablesResult,
    SummarizeInput,
    SummarizeResult,
)
from ferry.states import (
    abort,
    catalog_check,
    commit,
    copy_slot,
    housekeeping,
    inline_copy,
    notify_success,
    plan,
    resolve_tables,
    s3_copy_batch,
    summarize,
)
from ferry.states.context import CatalogOpener, StateContext

__all__ = ["CatalogOpener", "Steps"]


class Steps(StateContext):
    """The states as methods of their context (``ferry.states``); kept only for its callers."""

    def resolve_tables(
        self, payload: ResolveTablesInput | Mapping[str, Any], max_concurrency: int
    ) -> ResolveTablesResult:
        return resolve_tables.run(self, payload, max_concurrency)

    def leave_out_promoted(
        self, config: ReplicationConfig, replications: list[TableReplication]
    ) -> list[TableReplication]:
        return resolve_tables.leave_out_promoted(self, config, replications)

    def check_catalogs(self, payload: CatalogCheckInput | Mapping[str, Any]) -> CatalogCheckResult:
        return catalog_check.run(self, payload)

    def plan(self, payload: PlanInput | Mapping[str, Any]) -> PlanResult:
        return plan.run(self, payload)

    def resumable_attempt(
        self, config: ReplicationConfig, replication: TableReplication, event_id: str | None = None
    ) -> tuple[Any, str]:
        return plan.resumable_attempt(self, config, replication, event_id)

    def preview(
        self, config_uri: str, source_table: str, replica_table: str | None = None, *,
        probe: bool = True,
    ) -> dict[str, Any]:  # fmt: skip
        return plan.preview(self, config_uri, source_table, replica_table, probe=probe)

    def inline_copy(
        self, payload: PlannedRun | Mapping[str, Any], progress: Progress | None = None
    ) -> InlineCopyResult:
        return inline_copy.run(self, payload, progress)

    def copy_batch(
        self, payload: CopyBatchInput | Mapping[str, Any], progress: Progress | None = None
    ) -> CopyBatchResult:
        return s3_copy_batch.run(self, payload, progress)

    def claim_copy_slot(self, payload: CopySlotInput | Mapping[str, Any]) -> CopySlotResult:
        return copy_slot.run(self, payload)

    def commit(self, payload: PlannedRun | Mapping[str, Any]) -> CommitResult:
        return commit.run(self, payload)

    def notify_success(self, payload: PlannedRun | Mapping[str, Any]) -> NotifySuccessResult:
        return notify_success.run(self, payload)

    def abort(self, payload: AbortInput | Mapping[str, Any]) -> AbortResult:
        return abort.run(self, payload)

    def failed_table_freshness(self, aborted: AbortResult, config_uri: str | None) -> float | None:
        return abort.failed_table_freshness(self, aborted, config_uri)

    def summarize(self, payload: SummarizeInput | Mapping[str, Any]) -> SummarizeResult:
        return summarize.run(self, payload)

    def housekeeping(self, payload: HousekeepingInput | Mapping[str, Any]) -> HousekeepingResult:
        return housekeeping.run(self, payload)
