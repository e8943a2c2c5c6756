"""The replication of one table as steps, written once for both drivers.

Each public method is one state of the state machine (``ferry/statemachine/
replication.asl.json``): it takes the state's input model and returns the state's result
model (``ferry.payloads``; a method also takes the input's JSON form and validates it). The
Lambda handlers in ``lambdas/`` call exactly these; ``ferry replicate``
(``ferry/replicate.py``) walks the same definition and calls the same methods with the same
payloads. Nothing about a replication depends on which driver ran it.

Large things never travel through payloads: the plan and the manifest are written once
under ``<work>/runs/<event-id>/`` (``ferry.runs``) and each step reads only what it needs.

The invariants every step keeps, whatever fails:

- a location any replica table or partition references exists and holds a complete,
  verified snapshot: Commit runs only when every batch of the manifest has its copy record,
  and Abort removes a snapshot only when no replica metadata references it;
- every step can run again for the same event and converge (see ``ferry/commit.py``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from datetime import datetime
from typing import Any

from ferry import attempts, copies, faults, fs, housekeeping, lifecycle, selection
from ferry.abort import clean_up, failure_of
from ferry.aws import AwsClients
from ferry.budget import EnvironmentBudget, Holder
from ferry.catalog import Catalog
from ferry.catalog.factory import open_catalog
from ferry.clock import Clock, utc_now
from ferry.commit import DEFAULT_CLAIM_LEASE, commit
from ferry.config import (
    CatalogConfig,
    CopierOptions,
    ReplicationConfig,
    TableReplication,
    load_config_uri,
)
from ferry.copier import Progress
from ferry.errors import ConfigError, CopyIncompleteError, FerryError, NotificationError
from ferry.event_id import new_event_id
from ferry.freshness import TableFreshness, measure
from ferry.iceberg.pipeline import IcebergIntent, commit_metadata
from ferry.ledger import Lease
from ferry.ledger.records import one_line
from ferry.manifest import ManifestWriter, recorded_batches
from ferry.notify import (
    FAILURE,
    START,
    SUCCESS,
    ReplicationEvent,
    catalog_description,
    notifier_for,
    replication_event,
)
from ferry.outcomes import map_results, summary
from ferry.payloads import (
    AbortInput,
    AbortResult,
    CatalogAnswer,
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
    PlanLocations,
    PlannedRun,
    PlanResult,
    ResolveTablesInput,
    ResolveTablesResult,
    SummarizeInput,
    SummarizeResult,
    TableItem,
    batch_copier_options,
    trigger_time,
)
from ferry.plan import ReplicationPlan, plan_replication
from ferry.preflight import check_writable
from ferry.preview import preview_of
from ferry.replica import promoted_replicas
from ferry.runs import CopierKind, PlanDocument, RunLocations, choose_copier, read_plan, write_plan
from ferry.sides import reach_sides, side_of_batch, write_sides
from ferry.source_versions import recorded_parameters

logger = logging.getLogger(__name__)

CatalogOpener = Callable[[CatalogConfig, AwsClients], Catalog]


class Steps:
    """The steps, with their collaborators injected (work location, AWS clients, clock)."""

    def __init__(
        self,
        work_uri: str,
        aws: AwsClients | None = None,
        clock: Clock = utc_now,
        *,
        event_ids: Callable[[datetime], str] | None = None,
        catalogs: CatalogOpener = open_catalog,
        state: lifecycle.ReplicaState | None = None,
        config_environment: Mapping[str, str] | None = None,
        budget: EnvironmentBudget | None = None,
        adopt: frozenset[str] = frozenset(),
    ):
        self.work_uri = work_uri.rstrip("/")
        #: What the configs' ``${NAME}`` placeholders resolve from (None: this process's
        #: environment); the functions add the values of their Secrets Manager secret.
        self.config_environment = config_environment
        #: Replica locks and the snapshot ledger (``ferry.lifecycle``); None: neither.
        self.state = state
        self.aws = aws or AwsClients()
        self.clock = clock
        self.event_ids = event_ids or (lambda started: new_event_id(lambda: started))
        self.catalogs = catalogs
        #: The environment's copy slots (``ferry.budget``); None: every claim granted at once.
        self.budget = budget
        #: Replica tables (``database.table``, lower case) taken as replicas though they are
        #: none yet: ``ferry failback``'s original source tables, and only those.
        self.adopt = frozenset(name.lower() for name in adopt)

    # -- shared pieces --------------------------------------------------------------------

    def _publish(self, config: ReplicationConfig, event: ReplicationEvent) -> None:
        notifier_for(config, lambda region: self.aws.client("sns", region)).publish(event)

    def _event(
        self,
        config: ReplicationConfig,
        replication: TableReplication,
        kind: str,
        event_id: str,
        started: datetime,
        plan: ReplicationPlan | None = None,
        **details: Any,
    ) -> ReplicationEvent:
        """What consumers are told (``ferry.notify.replication_event``), ended now."""
        return replication_event(
            config, replication, kind, event_id, started,
            None if kind == START else self.clock(),
            self._describe(config.replica_catalog), plan, **details,
        )  # fmt: skip

    def _describe(self, catalog: CatalogConfig) -> str:
        return catalog_description(catalog, self.aws.region)

    def _open(self, catalog: CatalogConfig) -> Catalog:
        return self.catalogs(catalog, self.aws)

    def _load(self, config_uri: str, environment: Mapping[str, str] | None) -> ReplicationConfig:
        """The config at ``config_uri``, its sides in other accounts reached with their roles."""
        return reach_sides(load_config_uri(config_uri, environment), self.aws)

    def _replica_key(self, config: ReplicationConfig, replication: TableReplication) -> str:
        """The replica table's key in the locks and the ledger (``ferry.ledger``)."""
        return lifecycle.replica_of(config.replica_catalog, replication, self.aws.region)

    # -- Resolve tables -------------------------------------------------------------------

    def resolve_tables(
        self, payload: ResolveTablesInput | Mapping[str, Any], max_concurrency: int
    ) -> ResolveTablesResult:
        """Validate the config; one Map item per table, each with its own event id.

        A ``table-name-pattern`` is expanded here, against the source catalog: each table
        it matches is an item of its own (``ferry.selection``).
        """
        payload = ResolveTablesInput.model_validate(payload)
        config = self._load(payload.config_uri, self.config_environment)
        items = []
        triggered = trigger_time(payload.trigger)
        replications = self.select_tables(config, payload.tables or [], payload.config_uri)
        adopt = {name.lower() for name in payload.adopt}
        unknown = adopt - {r.replica_qualified_name.lower() for r in replications}
        if unknown:
            raise ConfigError(
                f"adopt: {sorted(unknown)[0]} is not a replica table of this run; nothing "
                "is adopted that the run does not replicate"
            )
        replications = self.leave_out_promoted(config, replications)
        # Critical tables first, then normal, then bulk: the Map starts them in this order.
        for replication in sorted(replications, key=lambda r: r.priority.rank):
            started = self.clock()
            items.append(
                TableItem(
                    config_uri=payload.config_uri,
                    source_table=replication.source_table.qualified_name,
                    replica_table=replication.replica_qualified_name,
                    event_id=self.event_ids(started),
                    start_time=started,
                    trigger_time=triggered or started,
                    adopt=replication.replica_qualified_name.lower() in adopt,
                )
            )
        # The list goes to S3, read by the Map's ItemReader: a config that selects thousands
        # of tables would not fit in a state (256 KiB).
        run = RunLocations.for_event(self.work_uri, f"run-{new_event_id(self.clock)}")
        fs.write_bytes(run.tables, json.dumps([i.model_dump(mode="json") for i in items]).encode())
        tables_bucket, tables_key = fs.object_location(run.tables)
        return ResolveTablesResult(
            tables_bucket=tables_bucket,
            tables_key=tables_key,
            results_prefix=fs.object_location(run.results)[1],
            count=len(items),
            max_concurrency=max_concurrency,
        )

    def leave_out_promoted(
        self, config: ReplicationConfig, replications: list[TableReplication]
    ) -> list[TableReplication]:
        """The replications whose replica ``ferry failover`` did not promote; each promoted one
        is left out of the run with a note (writers own it; the run neither fails nor alarms
        for it). A replica catalog that cannot be read leaves nothing out: Plan refuses a
        promoted replica anyway."""
        if not replications:
            return replications
        try:
            with self._open(config.replica_catalog) as replica:
                promoted = promoted_replicas(replica, replications)
        except Exception as error:  # noqa: BLE001 - Plan checks each table again
            logger.info("promoted replicas not checked: %s", error)
            return replications
        for name, value in promoted.items():
            logger.warning("%s: left out of the run: promoted by ferry failover (%s)", name, value)
        return [r for r in replications if r.replica_qualified_name.lower() not in promoted]

    def select_tables(
        self, config: ReplicationConfig, tables: Sequence[str] = (), source: str = "config"
    ) -> list[TableReplication]:
        """The run's table replications, patterns expanded (the source catalog read if needed)."""
        if not selection.needs_catalog(config, tables):
            return selection.expand(config, tables, source=source)
        with self._open(config.source_catalog) as catalog:
            return selection.expand(config, tables, catalog.list_table_names, source)

    def check_catalogs(self, payload: CatalogCheckInput | Mapping[str, Any]) -> CatalogCheckResult:
        """Whether each catalog of a config answers from where this runs (``ferry doctor``
        invokes the deployed Plan function with ``{"check": "catalogs"}``): a cheap read of a
        database the config names, which the function's role may read."""
        payload = CatalogCheckInput.model_validate(payload)
        config = self._load(payload.config_uri, self.config_environment)
        first = config.table_replications[0] if config.table_replications else None
        # A housekeeping-only config names no database; every Hive metastore has "default".
        source_database = first.source_table.database_name if first else "default"
        replica_database = first.replica_database if first else "default"
        answers = []
        for role, catalog, database in (
            ("source", config.source_catalog, source_database),
            ("replica", config.replica_catalog, replica_database),
        ):
            name = f"{role} {catalog.name} ({self._describe(catalog)})"
            try:
                with self._open(catalog) as opened:
                    opened.get_database(database)
                answers.append(CatalogAnswer(catalog=name, ok=True, detail="answered"))
            except Exception as error:  # noqa: BLE001 - the answer is the check's finding
                answers.append(CatalogAnswer(catalog=name, ok=False, detail=str(error)[:300]))
        return CatalogCheckResult(catalogs=answers)

    # -- Plan -----------------------------------------------------------------------------

    def _lock_holder_gone(self, lease: Lease) -> bool:
        """A lock's holder that no longer runs: a process of this machine, or an execution
        of the pipeline that ended without releasing it."""
        if lifecycle.holder_is_gone(lease):
            return True
        if lease.owner and lease.owner.startswith("arn:aws:states:"):
            region = lease.owner.split(":")[3]
            return lifecycle.execution_has_ended(
                self.aws.client("stepfunctions", region), lease.owner
            )
        return False

    def plan(self, payload: PlanInput | Mapping[str, Any]) -> PlanResult:
        """Tell consumers START, plan, stream the manifest, write the plan; choose the copier.

        Planning only reads both catalogs and the source files; what it writes is under the
        run's own folder of the work location, so running it again is harmless.
        """
        payload = PlanInput.model_validate(payload)
        config_uri, event_id = payload.config_uri, payload.event_id
        config = self._load(config_uri, self.config_environment)
        replication = config.replication_of(payload.source_table, payload.replica_table)
        adopted = payload.adopt or replication.replica_qualified_name.lower() in self.adopt
        # A failed attempt of this table is continued, not restarted (``ferry.attempts``).
        attempt = self._resumable(config, replication)
        if attempt is not None:
            event_id = attempt.event_id
        lifecycle.take_lock(
            self.state,
            self._replica_key(config, replication),
            event_id,
            self.clock(),
            owner=payload.execution,
            gone=self._lock_holder_gone,
        )
        started = payload.start_time
        self._publish(config, self._event(config, replication, START, event_id, started))
        options = config.copier_options_for(replication)
        where = RunLocations.for_event(self.work_uri, event_id)
        key = self._replica_key(config, replication)

        def intend(intent: IcebergIntent) -> None:
            """Write-ahead: an Iceberg run's files at the replica, ledgered before any is."""
            lifecycle.iceberg_writes_intended(
                self.state, key, replication, event_id, intent, where.root, self.clock()
            )

        write_sides(config, where.manifest)  # the Spark job's roles for other accounts
        read_at = self.clock()  # before the source is read: no later change is claimed
        reusable = {}
        if attempt is not None and self.state is not None:
            attempts.take(self.state, key, attempt, self.work_uri, self.clock())
            attempts.record_resumed_as(self.work_uri, payload.event_id, attempt)
            reusable = attempts.reusable_targets(self.work_uri, event_id)
        with (
            self._open(config.source_catalog) as source,
            self._open(config.replica_catalog) as replica,
        ):
            plan = plan_replication(
                replication,
                source,
                replica,
                event_id,
                self.clock,
                options.listing_threads,
                ManifestWriter(
                    where.manifest,
                    event_id,
                    options.s3_batch_files,
                    options.s3_batch_gib * 1024**3,
                    reusable,
                ),
                intend,
                adopt=adopted,
            )
        lifecycle.snapshot_created(self.state, key, plan, self.clock())
        for notice in plan.notices:
            logger.warning("%s", notice)
        faults.point("plan.planned")
        copier = choose_copier(plan, options)
        write_plan(
            where.plan,
            PlanDocument(
                config_uri, copier, started, plan, payload.trigger_time, read_at, adopted
            ),
        )
        bucket, key = fs.object_location(where.manifest)
        return PlanResult(
            event_id=event_id,
            plan_uri=where.plan,
            manifest_uri=where.manifest,
            manifest_bucket=bucket,
            manifest_key=key,
            report_uri=where.report,
            copy_results_prefix=fs.object_location(where.copy_results)[1],
            copier=copier,
            copier_options=batch_copier_options(options),
            files=plan.manifest.files,
            bytes=plan.manifest.bytes,
            batches=plan.manifest.batches,
            partitions=len(plan.replica_partitions),
            partitions_to_add=len(plan.partitions_to_add),
            partitions_to_alter=len(plan.partitions_to_alter),
            kind=plan.kind,
            replica_location=plan.replica_table.location,
            partition_filter=plan.partition_filter,
            source_table=replication.source_table.qualified_name,
            replica_table=replication.replica_qualified_name,
            notices=list(plan.notices),
            resumed=attempt is not None,
            reused_files=plan.manifest.reused_files,
            reused_bytes=plan.manifest.reused_bytes,
        )

    def _resumable(
        self, config: ReplicationConfig, replication: TableReplication
    ) -> attempts.Attempt | None:
        """The replica table's failed attempt this run continues, if any (``ferry.attempts``)."""
        if self.state is None or replication.replica_table.table_location is None:
            return None
        attempt, why = self.resumable_attempt(config, replication)
        if attempt is None and why != attempts.NO_ATTEMPT:
            logger.info("%s: not resuming: %s", replication.replica_qualified_name, why)
        return attempt

    def resumable_attempt(
        self, config: ReplicationConfig, replication: TableReplication, event_id: str | None = None
    ) -> tuple[attempts.Attempt | None, str]:
        """The replica table's newest failed attempt a run may continue (``event_id``: that
        one), or None and why not (``ferry.attempts.resumable``)."""
        with self._open(config.replica_catalog) as replica:
            return attempts.resumable(
                self.state,
                self._replica_key(config, replication),
                self.work_uri,
                replica,
                self.clock(),
                config.housekeeping_for(replication).expired_path_duration,
                self._lock_holder_gone,
                (replication.replica_database, replication.replica_table_name),
                event_id,
            )

    def preview(
        self,
        config_uri: str,
        source_table: str,
        replica_table: str | None = None,
        *,
        probe: bool = True,
    ) -> dict[str, Any]:
        """What Plan would decide, and why, without notifying, locking or copying anything.

        ``ferry plan`` shows it; ``ferry replicate --dry-run`` also checks (``probe``) that
        the replica location is writable, with a probe file written and deleted.
        """
        config = self._load(config_uri, self.config_environment)
        replication = config.replication_of(source_table, replica_table)
        options = config.copier_options_for(replication)
        with (
            self._open(config.source_catalog) as source,
            self._open(config.replica_catalog) as replica,
        ):
            plan = plan_replication(
                replication, source, replica, "<event-id>", self.clock, options.listing_threads
            )
        location = replication.replica_table.table_location
        if probe and plan.snapshot_location and location:
            s3 = None
            if fs.scheme_of(location) in fs.S3_SCHEMES:
                s3 = fs.default().s3_client(fs.object_location(location)[0])
            check_writable(location, s3)
        return preview_of(plan, choose_copier(plan, options))

    # -- copies (``ferry.copies``) ------------------------------------------------------

    def inline_copy(
        self, payload: PlannedRun | Mapping[str, Any], progress: Progress | None = None
    ) -> InlineCopyResult:
        """Copy the manifest here, batch by batch; a retry skips batches already recorded."""
        document = read_plan(PlannedRun.model_validate(payload).plan_uri)
        config = self._load(document.config_uri, self.config_environment)
        options = config.copier_options_for(document.plan.replication)
        where = RunLocations.for_event(self.work_uri, document.plan.event_id)
        return copies.copy_inline(where.manifest, options, progress)

    def copy_batch(
        self, payload: CopyBatchInput | Mapping[str, Any], progress: Progress | None = None
    ) -> CopyBatchResult:
        """Server-side copy of one batch of the manifest (one item of the S3 copy Map)."""
        payload = CopyBatchInput.model_validate(payload)
        # A target bucket of another account is written (and the source read) as its role.
        aws = side_of_batch(payload.batch, payload.manifest_uri, self.aws)
        return copies.copy_batch_server_side(
            payload.batch,
            payload.manifest_uri,
            CopierOptions.model_validate(payload.copier_options),
            resume=bool(payload.attempt),
            s3_client=lambda region, connections: aws.client(
                "s3", region, connections=connections
            ),
            progress=progress,
        )

    # -- Commit ---------------------------------------------------------------------------

    def commit(self, payload: PlannedRun | Mapping[str, Any]) -> CommitResult:
        """Check every batch was copied and verified, then point the replica at the snapshot."""
        document = read_plan(PlannedRun.model_validate(payload).plan_uri)
        plan = document.plan
        config = self._load(document.config_uri, self.config_environment)
        if document.copier is CopierKind.NONE:
            raise FerryError(f"event {plan.event_id} has nothing to commit")
        where = RunLocations.for_event(self.work_uri, plan.event_id)
        if plan.manifest.batches:
            recorded = recorded_batches(where.manifest, plan.manifest.digests)
            missing = set(range(plan.manifest.batches)) - recorded
            if missing:
                raise CopyIncompleteError(
                    f"{len(missing)} of {plan.manifest.batches} batches of event "
                    f"{plan.event_id} have no copy record (first: batch {min(missing)}); "
                    f"not committing"
                )
        if plan.iceberg is not None and plan.iceberg.changed:
            # The manifest lists and metadata.json, then every file the run brought, checked.
            commit_metadata(plan.iceberg)
        with self._open(config.replica_catalog) as replica:
            before = lifecycle.locations_before_commit(self.state, plan, replica, where.root)
            result = commit(
                plan,
                replica,
                config.replica_catalog.batch_size,
                self.clock(),
                self.state.lease if self.state is not None else DEFAULT_CLAIM_LEASE,
                self.state.owner if self.state is not None else None,
                lifecycle.process_is_gone,
                recorded_parameters(plan.source_version, document.source_read_at),
                adopt=document.adopt or plan.replica_table.qualified_name.lower() in self.adopt,
            )
            key = self._replica_key(config, plan.replication)
            lifecycle.committed(self.state, key, plan, replica, before, self.clock(), where.root)
        self.release_copy_slot(plan.event_id)
        self._record_success(config, document)
        return CommitResult(
            replica_location=plan.replica_table.location,
            partitions_added=result.partitions_added,
            partitions_altered=result.partitions_altered,
        )

    # -- Notify success -------------------------------------------------------------------

    def notify_success(self, payload: PlannedRun | Mapping[str, Any]) -> NotifySuccessResult:
        """Tell consumers SUCCESS; the table's outcome (UNCHANGED when nothing was done).

        A message that cannot be published raises ``NotificationError``: the replica keeps
        its new snapshot (Abort checks the catalog before removing anything) and the table
        is reported as failed to notify.
        """
        document = read_plan(PlannedRun.model_validate(payload).plan_uri)
        plan = document.plan
        config = self._load(document.config_uri, self.config_environment)
        unchanged = document.copier is CopierKind.NONE
        event = self._event(
            config, plan.replication, SUCCESS, plan.event_id, document.started, plan,
            copied=not unchanged,
        )  # fmt: skip
        faults.point("notify.success")
        self._publish(config, event)
        if unchanged:  # nothing to do: the replica is in sync with what Plan read
            self._record_success(config, document)
        lifecycle.release_lock(
            self.state, self._replica_key(config, plan.replication), plan.event_id
        )
        ended = event.end_time or document.started
        return NotifySuccessResult(
            status="UNCHANGED" if unchanged else "SUCCEEDED",
            source_table=plan.source_table.qualified_name,
            replica_table=plan.replication.replica_qualified_name,
            event_id=plan.event_id,
            replica_location=plan.replica_table.location,
            partition_filter=plan.partition_filter,
            files=0 if unchanged else plan.manifest.files,
            bytes=0 if unchanged else plan.manifest.bytes,
            partitions=0 if unchanged else len(plan.replica_partitions),
            iceberg_snapshots=(
                len(plan.iceberg.new_snapshot_ids) if plan.iceberg and not unchanged else 0
            ),
            priority=plan.replication.priority.value,
            duration_seconds=(ended - document.started).total_seconds(),
            lag_seconds=(ended - (document.triggered or document.started)).total_seconds(),
        )

    # -- Abort table ----------------------------------------------------------------------

    def abort(self, payload: AbortInput | Mapping[str, Any]) -> AbortResult:
        """A table failed: remove what nothing references, tell consumers, name the error.

        The snapshot folder is removed only when no replica table or partition references
        it (a failure after or part-way through Commit leaves it in place: readers may use
        it). What was removed or kept is recorded in the run's ``abort.json``.
        """
        payload = AbortInput.model_validate(payload)
        event_id, source_table = payload.event_id, payload.source_table
        planned = payload.plan or PlanLocations()
        if planned.plan_uri is None and payload.find_plan:
            # A table Summarize aborts (its iteration failed where no Catch takes the error):
            # its plan, if Plan got that far, is where every plan of the event is.
            where = RunLocations.for_event(
                self.work_uri, attempts.resumed_as(self.work_uri, event_id)
            )
            if fs.exists(where.plan):
                planned = PlanLocations(plan_uri=where.plan, report_uri=where.report)
        document = read_plan(planned.plan_uri) if planned.plan_uri else None
        if document is not None:
            # A resumed run's plan carries the attempt's event id, not the item's.
            event_id = document.plan.event_id
        name, message = failure_of(
            payload.error.model_dump(), payload.failed_state, document, planned.report_uri
        )
        try:
            config: ReplicationConfig | None = self._load(
                payload.config_uri, self.config_environment
            )
            replication = config.replication_of(source_table, payload.replica_table)
        except FerryError:
            config, replication = None, None  # the config itself is what failed
        outcome = {"snapshot": None, "removed": False, "referencedBy": []}
        if document is not None and config is not None:
            where = RunLocations.for_event(self.work_uri, document.plan.event_id)
            keep = attempts.keeps(self.state, document, payload.failed_state, name, where.root)
            with self._open(config.replica_catalog) as replica:
                outcome = clean_up(document.plan, replica, keep=keep)
            if keep and not outcome["referencedBy"] and self.state is not None:
                # What was copied and verified stays for the next run to continue.
                until = attempts.keep(
                    self.state, self._replica_key(config, document.plan.replication),
                    document, where.root, payload.failed_state, message, self.clock(),
                    config.housekeeping_for(document.plan.replication).expired_path_duration,
                )  # fmt: skip
                outcome["keptForResumeUntil"] = until.isoformat(timespec="seconds")
                message += (
                    f" (its copy is kept for a resume until {outcome['keptForResumeUntil']}: "
                    f"run it again, or ferry resume {event_id})"
                )
            # An Iceberg run's copies stay: its intent, ledgered by Plan, names them for
            # housekeeping (as it does when a run is killed before getting here).
            fs.write_bytes(where.abort, json.dumps(outcome).encode())
            if outcome["referencedBy"]:
                message += f" (the replica references snapshot {outcome['snapshot']}; it was kept)"
            elif outcome.get("removeError"):
                why = outcome["removeError"]
                # The same error as the failure's (the same location) is said once.
                why = "" if why.split(":", 1)[0] == name else f": {why}"
                message += f" (its snapshot {outcome['snapshot']} could not be removed{why})"
        if config is not None and replication is not None:  # never another run's lock
            self._record_failure(config, replication, event_id, f"{name}: {message}")
            lifecycle.release_lock(self.state, self._replica_key(config, replication), event_id)
        self.release_copy_slot(event_id)
        notified = False
        if config is not None and replication is not None:
            event = self._event(
                config, replication, FAILURE, event_id, payload.start_time,
                document.plan if document else None, copied=False, error_message=message,
            )  # fmt: skip
            try:
                self._publish(config, event)
                notified = True
            except NotificationError as error:
                logger.warning("%s", error)
        return AbortResult(
            status="FAILED",
            source_table=source_table,
            replica_table=replication.replica_qualified_name if replication else None,
            event_id=event_id,
            failed_state=payload.failed_state,
            error=name,
            cause=message,
            snapshot=outcome["snapshot"],
            snapshot_removed=outcome["removed"],
            notified=notified,
        )

    # -- outcomes (``ferry.ledger.Outcome``: what ``ferry status`` reads) ----------------

    def _record_success(self, config: ReplicationConfig, document: PlanDocument) -> None:
        """The replica holds the source as Plan read it: its outcome says so."""
        if self.state is None:
            return
        plan = document.plan
        self.state.store.record_success(
            self._replica_key(config, plan.replication),
            plan.replication.replica_qualified_name,
            plan.event_id,
            self.clock(),
            plan.source_version,
            document.source_read_at,
        )

    def _record_failure(
        self,
        config: ReplicationConfig,
        replication: TableReplication,
        event_id: str,
        error: str,
    ) -> None:
        """A failed run, in the replica's outcome; a store that fails here is logged only:
        Abort must still release the lock and tell consumers."""
        if self.state is None:
            return
        try:
            self.state.store.record_failure(
                self._replica_key(config, replication),
                replication.replica_qualified_name,
                event_id,
                self.clock(),
                one_line(error),
            )
        except Exception as failure:  # noqa: BLE001 - the failure being aborted comes first
            logger.warning("could not record the failure of event %s: %s", event_id, failure)

    # -- Housekeeping (its own state machine) --------------------------------------------

    def housekeeping(self, payload: HousekeepingInput | Mapping[str, Any]) -> HousekeepingResult:
        """Delete superseded snapshots past their grace period; the vacuum when asked.

        Writes the full report under ``<work>/housekeeping/``; returns counts, the first
        paths and the report's URI (``ferry/housekeeping.py``).
        """
        payload = HousekeepingInput.model_validate(payload)
        config = self._load(payload.config_uri, self.config_environment)
        replications = self.select_tables(config, payload.tables or [], payload.config_uri)
        now = self.clock()
        # No table to ask about (a housekeeping-only config, a pattern that matched
        # nothing): the replica catalog is not opened, and the report lists no table.
        with self._open(config.replica_catalog) if replications else nullcontext() as replica:
            report = housekeeping.housekeep(
                config, replications, replica, self.state, now,
                lambda replication: self._replica_key(config, replication),
                housekeeping.Request.from_payload(payload.model_dump()),
            )  # fmt: skip
        where = fs.join(self.work_uri, "housekeeping", f"{self.event_ids(now)}.json")
        fs.write_bytes(where, json.dumps(report.to_dict(), indent=2).encode())
        return HousekeepingResult.model_validate(report.result(where))

    # -- Freshness (the periodic check's and a failed table's, ferry.freshness_metrics) ----

    def measure_freshness(
        self, config_uri: str, tables: Sequence[str] = ()
    ) -> list[TableFreshness]:
        """Each table's freshness of the config at ``config_uri`` (``tables``: some of them),
        from both catalogs and the state store (``ferry.freshness``)."""
        config = self._load(config_uri, self.config_environment)
        store = self.state.store if self.state is not None else None
        with (
            self._open(config.source_catalog) as source,
            self._open(config.replica_catalog) as replica,
        ):
            return measure(
                config, source, replica, store, self.clock(), tables=tables, region=self.aws.region
            )

    def failed_table_freshness(self, aborted: AbortResult, config_uri: str | None) -> float | None:
        """How far behind a table Abort just ended is, in seconds (its replica keeps its last
        snapshot); None when it cannot be told. Never raises: the abort comes first."""
        if config_uri is None:
            return None
        try:
            measured = self.measure_freshness(config_uri, [aborted.source_table])
        except Exception as error:  # noqa: BLE001 - a metric must not fail the abort
            logger.warning("freshness of %s not measured: %s", aborted.source_table, error)
            return None
        behind = [t.behind for t in measured if t.replica_table == aborted.replica_table]
        return behind[0].total_seconds() if behind and behind[0] is not None else None

    # -- Summarize ------------------------------------------------------------------------

    def summarize(self, payload: SummarizeInput | Mapping[str, Any]) -> SummarizeResult:
        """Every table's outcome, from the results the Map over the tables wrote.

        A table whose iteration failed without reaching Abort (an error no ``Catch`` takes:
        ``States.DataLimitExceeded``, ``States.Runtime``) is aborted here, so it too ends
        as every failed table does: FAILURE to consumers, its lock released, its snapshot
        removed unless the replica references it.
        """
        payload = SummarizeInput.model_validate(payload)
        faults.point("summarize")
        outcomes = []
        for child in map_results(payload.results.model_dump()):
            if child.status == "SUCCEEDED":
                outcomes.append(child.output)
                continue
            item = child.input
            aborted = self.abort(
                {
                    **item,
                    "configUri": item.get("configUri") or payload.config_uri,
                    "error": {"Error": child.error, "Cause": child.cause},
                    "failedState": "Replicate tables",
                    "findPlan": True,
                }
            )
            outcomes.append(aborted.model_dump(mode="json"))
        return SummarizeResult.model_validate(summary(outcomes))

    # -- Claim copy slot (``ferry.budget``) ---------------------------------------------

    def claim_copy_slot(self, payload: CopySlotInput | Mapping[str, Any]) -> CopySlotResult:
        """Take one of the environment's copy slots for this table's copy (critical tables
        first), or wait in line: the answer says how long before asking again. Commit and
        Abort free it (``release_copy_slot``)."""
        payload = CopySlotInput.model_validate(payload)
        priority = read_plan(payload.plan_uri).plan.replication.priority
        if self.budget is None:
            return CopySlotResult(
                granted=True, slot=None, priority=priority.value, wait_seconds=0,
                waited_seconds=0, queued_critical=0, queued_normal=0, queued_bulk=0,
            )  # fmt: skip
        owner = payload.execution or (self.state.owner if self.state is not None else None)
        answer = self.budget.slots.claim(
            self.budget.budget, payload.event_id, priority, self.clock(), owner,
            self._slot_holder_gone,
        )  # fmt: skip
        queued = {p.value: n for p, n in answer.queued.items()}
        return CopySlotResult(
            granted=answer.granted,
            slot=answer.slot,
            priority=priority.value,
            wait_seconds=answer.wait_seconds,
            waited_seconds=answer.waited_seconds,
            queued_critical=queued.get("critical", 0),
            queued_normal=queued.get("normal", 0),
            queued_bulk=queued.get("bulk", 0),
        )

    def release_copy_slot(self, event_id: str) -> None:
        """Free the event's copy slot, or take it out of line (nothing when it has neither)."""
        if self.budget is not None:
            self.budget.slots.release(event_id)

    def _slot_holder_gone(self, holder: Holder) -> bool:
        """A slot's holder that no longer runs, told as a lock's is (``_lock_holder_gone``)."""
        return self._lock_holder_gone(
            Lease("copy-budget", holder.event_id, holder.acquired_at, holder.expires_at,
                  holder.owner)
        )  # fmt: skip
