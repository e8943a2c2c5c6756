"""What travels between the states: each state's input and result, one model each.

The names on the wire are the models' fields in camelCase (``partitions_to_add`` →
``partitionsToAdd``): the state machine's ``Parameters``, ``ResultSelector`` and ``$.…``
paths read them; ``tests/unit/test_state_payloads.py`` holds every path of the definitions
to these models and ``tests/integration/test_state_trail.py`` every handler's result.
Handlers validate their event into the input model and return
``result.model_dump(mode="json")``; ``ferry.statemachine.PAYLOADS`` names each function's pair.

Inputs ignore keys they do not name (a state's input is often the whole execution input);
results are exactly their fields, in the order a consumer reads them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel

from ferry.config import CopierOptions
from ferry.planning.runs import CopierKind

#: A moment as the payloads carry it: ISO 8601 with its offset (``datetime.isoformat``).
Moment = Annotated[datetime, PlainSerializer(datetime.isoformat, return_type=str)]


class Payload(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        frozen=True,
    )


class Input(Payload):
    model_config = ConfigDict(extra="ignore")


class Result(Payload):
    model_config = ConfigDict(extra="forbid")


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


# -- Plan ---------------------------------------------------------------------------------------


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


class CatalogCheckInput(Input):
    """``ferry doctor`` invokes the Plan function with ``{"check": "catalogs", …}``."""

    check: str
    config_uri: str


class CatalogAnswer(Result):
    catalog: str
    ok: bool
    detail: str


class CatalogCheckResult(Result):
    catalogs: list[CatalogAnswer]


class NotificationLogCheckResult(Result):
    """``ferry doctor`` invokes the CatalogPoller function with ``{"check":
    "notification-log", …}`` (input: ``CatalogCheckInput``): does the source metastore write
    its notification log, and is it not behind what the poller read?"""

    metastore: str
    #: The newest event id of the log (0: it never held one).
    current: int
    #: The last event id the poller handed over (None: it never polled).
    position: int | None
    ok: bool
    detail: str


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


# -- Abort table -------------------------------------------------------------------------------


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


# -- Summarize ---------------------------------------------------------------------------------


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


# -- Housekeeping (its own state machine) ------------------------------------------------------


class HousekeepingInput(Input):
    """The housekeeping state machine's input (``events/housekeeping.json``)."""

    config_uri: str
    tables: list[str] | None = None
    dry_run: bool = False
    vacuum: bool = False
    delete_orphans: bool = False


class HousekeepingResult(Result):
    """Counts (``ferry.lifecycle.retired_snapshots``) and the URI of the report that names every
    table and path: the same few hundred bytes whatever the number of tables."""

    dry_run: bool
    vacuum: bool
    deleted: int
    kept: int
    orphans: int
    orphans_ledgered: int
    table_count: int
    tables_skipped: int
    report_uri: str


# -- Catalog change feeds (ferry.feeds; their own state machine) -----------------------------


class CatalogEventInput(Input):
    """An EventBridge rule's input to the intake: the config, and AWS Glue's event whole
    (``events/catalog_events.json``; the rule's template is ``ferry.feeds.trigger_events``')."""

    config_uri: str
    event: dict[str, Any]


class PollInput(Input):
    """A schedule's input to the Hive poller (``events/catalog_poller.json``)."""

    config_uri: str


class IntakeResult(Result):
    """What the intake did with a batch of changes: the tables whose windows it noted, those
    it opened (an execution started), and the changes of tables the config does not select."""

    tables: list[str]
    opened: list[str]
    ignored: int
    #: The tables whose window was open with no execution running: each got another.
    resumed: list[str] = []


class PollResult(Result):
    """What a poll did: events read, the position it reached, and the intake's counts."""

    events: int
    position: int | None
    tables: list[str]
    opened: list[str]
    ignored: int
    #: The log was cleaned past the last position: every table in scope was handed over.
    gap: bool
    polls: int
    #: There was no position: the log was read from the oldest event it keeps.
    replayed: bool = False
    #: The tables whose window was open with no execution running: each got another.
    resumed: list[str] = []


class ChangeWindowInput(Input):
    """The change window state machine's input: one table's window (``events/
    claim_changes.json``)."""

    config_uri: str
    table: str
    window_seconds: int


class ClaimResult(Result):
    """Whether the claimed changes need a run, and the run's ``tables`` and ``trigger``."""

    run: bool
    reason: str
    changes: int
    tables: list[str]
    trigger: dict[str, Any]


class CloseWindowInput(Input):
    config_uri: str
    table: str
    claimed: int


class CloseWindowResult(Result):
    """``more``: changes came during the run; the window stays open for one follow-up."""

    more: bool


# -- the trigger -------------------------------------------------------------------------------


def trigger_time(trigger: Any) -> datetime | None:
    """When the event that started a run happened: an S3 event's ``time``, a schedule's
    ``scheduledTime``; None for a run started by hand (or a time that does not parse)."""
    if not isinstance(trigger, dict):
        return None
    return optional_time(trigger.get("time") or trigger.get("scheduledTime"))


def optional_time(text: Any) -> datetime | None:
    """An ISO-8601 time (AWS's events), or epoch seconds (the emulator's S3 events)."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            return datetime.fromtimestamp(float(text), UTC)
        except (ValueError, OverflowError):
            return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# -- Freshness check (a schedule's, outside the definitions) ------------------------------------


class FreshnessCheckInput(Input):
    """The freshness check's schedule input: every config the environment deploys
    (``events/freshness_check.json``)."""

    config_uris: list[str] = Field(min_length=1)


class FreshnessCheckResult(Result):
    """How many tables were measured, those past their RPO, and the PutMetricData requests."""

    tables: int
    over_rpo: list[str]
    requests: int
    #: Why nothing was measured, when the environment is not set up yet (its secret unfilled).
    skipped: str | None = None


# -- Claim copy slot (``ferry.copying.budget``) ----------------------------------------------------


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


# -- Failover switch (invoked by ``ferry failover`` / ``ferry failback``, outside the definitions)


class FailoverSwitchInput(Input):
    """What ``ferry failover`` (``suspend``) or ``ferry failback`` (``resume``) asks of the
    deployed FailoverSwitch function for one config (``events/failover_switch.json``)."""

    action: str = Field(pattern="^(suspend|resume)$")
    #: The config's file name without ``.yml``: its triggers are ``ferry-<env>-<config>…``.
    config_name: str = Field(min_length=1)
    #: The deployed config object (the stack's ``ConfigUri…`` output): its runs are found by it.
    config_uri: str = Field(min_length=1)
    #: Its rules and schedules (``ferry.failover.trigger_names.config_triggers``); empty when only
    #: some of its tables fail over (their promotion leaves them out of each run).
    rules: list[str] = Field(default_factory=list)
    schedules: list[str] = Field(default_factory=list)
    #: False when only some of its tables fail over: its triggers stay on.
    every_table: bool = True
    #: The source tables that fail over (``database.table``); empty: every table of the config.
    tables: list[str] = Field(default_factory=list)
    #: Their replica keys (``<catalog>/<database>.<table>``), whose claims are released.
    replicas: list[str] = Field(default_factory=list)
    cancel_runs: bool = False
    wait_seconds: int = Field(default=0, ge=0, le=840)


class FailoverSwitchResult(Result):
    """What the switch did (``ferry.failover.SwitchReport``, as names)."""

    triggers: list[str]
    stopped_runs: list[str]
    awaited_runs: list[str]
    released_claims: int
    notes: list[str]


# -- Failover (invoked by ``ferry failover --environment``, outside the definitions)


class FailoverInput(Input):
    """What ``ferry failover --environment`` asks of the deployed Failover function for one
    config (``events/failover.json``): ``check`` its replicas before the switch stops
    anything, then ``promote`` them (baseline, then ``ferry.promoted``)."""

    action: str = Field(pattern="^(check|promote)$")
    #: The deployed config object (the stack's ``ConfigUri…`` output).
    config_uri: str = Field(min_length=1)
    #: The source tables that fail over (``database.table``); empty: every table of the config.
    tables: list[str] = Field(default_factory=list)
    #: The failover's id (an event id), given by the command: a table promoted by it before
    #: keeps it.
    failover_id: str = Field(min_length=1)


class TableFailoverResult(Result):
    """One table's ``ferry.failover.config_failover.TableFailover``."""

    source_table: str
    replica_table: str
    failover_id: str
    promoted: str
    already_promoted: bool
    source_version: str | None
    source_read_at: str | None
    rpo_seconds: float | None
    partitions: int
    baseline_uri: str


class FailoverResult(Result):
    """What the function did (``check``: no tables)."""

    failover_id: str
    tables: list[TableFailoverResult]


# -- Failback (invoked by ``ferry failback --environment``, outside the definitions)


class FailbackInput(Input):
    """What ``ferry failback --environment`` asks of the deployed Failback function for one
    config (``events/failback.json``): ``plan`` what would come home (``--dry-run``), or
    ``run`` the failback as far as it can go in one invocation: it starts the reverse run on
    the replication state machine and answers ``COPYING``; invoked again once that run has
    succeeded, it restores the original tables and answers ``DONE``."""

    action: str = Field(pattern="^(plan|run)$")
    #: The deployed config object (the stack's ``ConfigUri…`` output).
    config_uri: str = Field(min_length=1)
    #: The source tables that fail back (``database.table``); empty: every table of the config.
    tables: list[str] = Field(default_factory=list)
    #: The side that wins a table changed on both (``replica`` or ``source``), if named.
    prefer: str | None = Field(default=None, pattern="^(replica|source)$")


class FailbackResult(Result):
    """Where the failback stands (``PLANNED``, ``COPYING`` or ``DONE``) and each table's
    ``ferry.failover.config_failback.TableFailback``."""

    status: str = Field(pattern="^(PLANNED|COPYING|DONE)$")
    #: The reverse run on the replication state machine, while ``COPYING``.
    execution_arn: str | None = None
    reverse_config: str | None = None
    reverse_text: str | None = None
    tables: list[dict[str, Any]] = Field(default_factory=list)
