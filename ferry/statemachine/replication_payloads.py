"""The replication definition's payloads (``FUNCTIONS``): each state's input and result,
from Resolve tables to Summarize (``ferry.statemachine.payloads`` holds the rules they keep).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ferry.config import CopierOptions
from ferry.planning.runs import CopierKind
from ferry.statemachine.payloads import Input, Moment, Result

# -- Resolve tables ---------------------------------------------------------------------------


class ResolveTablesInput(Input):
    """The execution's input: a config, the tables to replicate (none: all) and, when a
    schedule or an S3 event started it, that trigger (``events/scheduled.json``)."""

    config_uri: str
    tables: list[str] | None = None
    trigger: dict[str, Any] | None = None
    #: Replica tables (``database.table``) taken as the run's replicas though they are none
    #: yet: ``ferry failback``'s original source tables, and only those.
    adopt: list[str] = Field(default_factory=list)


class TableItem(Input):
    """One table of a run: an item of the Map over the tables, and so Plan's input."""

    config_uri: str
    source_table: str
    replica_table: str | None = None
    event_id: str
    start_time: Moment
    trigger_time: Moment | None = None
    #: The table's own execution (a child of the Map over the tables, ``$$.Execution.Id``):
    #: the owner of the replica's lock, which another run takes over once it has ended.
    execution: str | None = None
    #: The replica is a table Ferry never replicated that this run takes as its replica (the
    #: execution's ``adopt``): Plan's guard and Commit's claim accept it.
    adopt: bool = False


PlanInput = TableItem


class ResolveTablesResult(Result):
    """Where the run's items are (an S3 object the Map reads) and how many there are."""

    tables_bucket: str
    tables_key: str
    results_prefix: str
    count: int
    max_concurrency: int


# -- Plan -------------------------------------------------------------------------------------


class PlanResult(Result):
    """What Plan decided, for the later states (``$.plan``) and the table's outcome."""

    event_id: str
    plan_uri: str
    manifest_uri: str
    manifest_bucket: str
    manifest_key: str
    report_uri: str
    copy_results_prefix: str
    copier: CopierKind
    #: What a copy batch needs of the copier options, by their config names.
    copier_options: dict[str, Any]
    files: int
    bytes: int
    batches: int
    partitions: int
    partitions_to_add: int
    partitions_to_alter: int
    kind: str
    replica_location: str | None
    partition_filter: str | None
    source_table: str
    replica_table: str
    notices: list[str]
    #: A failed attempt of the same event continued (``ferry.lifecycle.attempts``), and what of
    #: ``files``/``bytes`` it had already copied: those are not copied again.
    resumed: bool = False
    reused_files: int = 0
    reused_bytes: int = 0


def batch_copier_options(options: CopierOptions) -> dict[str, Any]:
    """What a copy batch needs of the copier options (``PlanResult.copier_options``)."""
    return options.model_dump(
        by_alias=True, include={"threads", "multipart_threshold_mib", "part_size_mib"}
    )


# -- Claim copy slot (``ferry.copying.budget``) -----------------------------------------------


class CopySlotInput(Input):
    """A table about to copy data: its plan (which names its priority) and its execution."""

    plan_uri: str
    event_id: str
    #: The table's execution (its slot's holder); None in the in-process driver.
    execution: str | None = None


class CopySlotResult(Result):
    """A slot granted, or how long to wait before asking again; the line behind it."""

    granted: bool
    slot: int | None
    priority: str
    #: Seconds to wait before claiming again (0 when granted).
    wait_seconds: int
    #: Seconds since the table first asked.
    waited_seconds: float
    queued_critical: int
    queued_normal: int
    queued_bulk: int


# -- the steps after Plan ---------------------------------------------------------------------


class PlannedRun(Input):
    """Inline copy, Commit and Notify success read everything from the plan Plan wrote."""

    plan_uri: str
    event_id: str


class InlineCopyResult(Result):
    files: int
    bytes: int
    #: What this copy moved: ``files``/``bytes`` less what a resumed run reused.
    copied_files: int | None = None
    copied_bytes: int | None = None


class CopyBatchInput(Input):
    """One item of the S3 copy Map: a batch of the manifest, as ``ferry.copying.manifest`` writes
    it."""

    event_id: str
    manifest_uri: str
    copier_options: dict[str, Any] = Field(default_factory=dict)
    batch: dict[str, Any]
    #: ``$$.State.RetryCount``: above 0, objects already copied whole are skipped.
    attempt: int = 0


class CopyBatchResult(Result):
    files: int
    bytes: int
    resumed: int


class CommitResult(Result):
    replica_location: str | None
    partitions_added: int
    partitions_altered: int


class NotifySuccessResult(Result):
    """A table's outcome when it succeeded (status SUCCEEDED or UNCHANGED), and its metrics."""

    status: str
    source_table: str
    replica_table: str
    event_id: str
    replica_location: str | None
    partition_filter: str | None
    files: int
    bytes: int
    partitions: int
    duration_seconds: float
    lag_seconds: float
    #: Source snapshots an Iceberg replica got in this run (0 for every other table).
    iceberg_snapshots: int = 0
    #: The table's priority (``ferry.copying.budget``): its lag is published by priority.
    priority: str = "normal"


# -- Abort table ------------------------------------------------------------------------------


class TaskError(Input):
    """A failed state's error, as Step Functions' ``Catch`` puts it in ``$.error``."""

    error: str | None = Field(default=None, alias="Error")
    cause: str | None = Field(default=None, alias="Cause")


class PlanLocations(Input):
    """What Abort reads of Plan's result, when Plan got that far."""

    plan_uri: str | None = None
    report_uri: str | None = None


class AbortInput(Input):
    config_uri: str | None = None
    source_table: str
    replica_table: str | None = None
    event_id: str
    start_time: Moment
    plan: PlanLocations | None = None
    error: TaskError
    failed_state: str | None = None
    #: Summarize aborts a table whose iteration failed before Abort: its plan, if Plan got
    #: that far, is found where every plan of the event is.
    find_plan: bool = False


class AbortResult(Result):
    """A table's outcome when it failed."""

    status: str
    source_table: str
    replica_table: str | None
    event_id: str
    failed_state: str | None
    error: str | None
    cause: str
    snapshot: str | None
    snapshot_removed: bool
    notified: bool


# -- Summarize --------------------------------------------------------------------------------


class ResultWriterDetails(Input):
    """Where a Distributed Map's ``ResultWriter`` put its manifest."""

    bucket: str = Field(alias="Bucket")
    key: str = Field(alias="Key")


class SummarizeInput(Input):
    config_uri: str | None = None
    results: ResultWriterDetails


class SummarizeResult(Result):
    succeeded: int
    unchanged: int
    failed: int
    error: str | None
    cause: str | None
