"""The replication of one table as steps, written once for both drivers.

Each public method is one state of the state machine (``infra/statemachine/
replication.asl.json``): it takes the state's payload (a small dict, as the definition's
``Parameters`` build it) and returns the state's result (a small dict). The Lambda handlers
in ``lambdas/`` call exactly these; ``ferry replicate`` (``ferry/replicate.py``) walks the
same definition and calls the same methods with the same payloads. Nothing about a
replication depends on which driver ran it.

Large things never travel through payloads: the plan and the manifest are written once
under ``<work>/runs/<event-id>/`` and each step reads only what it needs.

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
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import TypeAdapter

from ferry import concurrency, faults, fs, lifecycle, selection
from ferry.aws import AwsClients
from ferry.catalog import Catalog
from ferry.catalog.factory import open_catalog
from ferry.commit import DEFAULT_CLAIM_LEASE, commit, release_claim, snapshot_references
from ferry.config import (
    CatalogConfig,
    CopierOptions,
    ReplicationConfig,
    ReplicationMode,
    TableReplication,
    load_config_uri,
)
from ferry.copier import Progress
from ferry.errors import (
    CopyError,
    CopyIncompleteError,
    FerryError,
    NotificationError,
    StepFunctionsError,
    describe_error,
)
from ferry.event_id import new_event_id
from ferry.filters import Clock, utc_now
from ferry.manifest import (
    ManifestWriter,
    batch_tasks,
    read_batches,
    recorded_batches,
    write_copy_record,
)
from ferry.model import partition_name
from ferry.notify import FAILURE, START, SUCCESS, NoNotifier, ReplicationEvent, SnsNotifier
from ferry.plan import COPYING_MODES, ReplicationPlan, plan_replication
from ferry.preflight import check_writable
from ferry.replica import CREATED_BY_EVENT

logger = logging.getLogger(__name__)

MIB = 1024 * 1024
#: A Distributed Map whose failed children pass its tolerance fails with this.
TOLERANCE_EXCEEDED = "States.ExceedToleratedFailureThreshold"


class CopierKind(StrEnum):
    NONE = "none"  # nothing changed: skip to the end
    METADATA = "metadata"  # METADATA_MIRROR, or no files to copy
    INLINE = "inline"  # small: in the step's own process
    S3 = "s3"  # S3 to S3: server-side copy
    SPARK = "spark"  # everything else: the Spark job (EMR Serverless, or spark-submit)


def choose_copier(plan: ReplicationPlan, options: CopierOptions) -> CopierKind:
    """The cheapest copier that fits the plan.

    S3 to S3 goes server-side whatever the size: no compute moves bytes, which beats even
    an inline copy. Otherwise small copies stay in the step and large ones go to Spark.
    """
    if plan.unchanged:
        return CopierKind.NONE
    manifest = plan.manifest
    if plan.mode is ReplicationMode.METADATA_MIRROR or not manifest.files:
        return CopierKind.METADATA
    s3 = set(fs.S3_SCHEMES)
    if set(manifest.source_schemes) <= s3 and set(manifest.target_schemes) <= s3:
        return CopierKind.S3
    if manifest.bytes <= options.inline_threshold_mib * MIB:
        return CopierKind.INLINE
    return CopierKind.SPARK


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


_PLAN_DOCUMENT = TypeAdapter(PlanDocument)


@dataclass(frozen=True)
class RunLocations:
    """Where one table replication's documents live under the work location."""

    root: str

    @classmethod
    def for_event(cls, work_uri: str, event_id: str) -> RunLocations:
        return cls(fs.join(work_uri, "runs", event_id))

    @property
    def plan(self) -> str:
        return fs.join(self.root, "plan.json")

    @property
    def manifest(self) -> str:
        return fs.join(self.root, "manifest.json")

    @property
    def report(self) -> str:
        return fs.join(self.root, "copy-report.json")

    @property
    def abort(self) -> str:
        return fs.join(self.root, "abort.json")

    @property
    def copy_results(self) -> str:
        """Where the S3 copy Map writes its batches' results (``ResultWriter``)."""
        return fs.join(self.root, "copy-batches")

    @property
    def tables(self) -> str:
        """A run's tables, one Map item each (``Resolve tables``)."""
        return fs.join(self.root, "tables.json")

    @property
    def results(self) -> str:
        """Where the Map over the tables writes each table's outcome (``ResultWriter``)."""
        return fs.join(self.root, "results")


def read_plan(plan_uri: str) -> PlanDocument:
    return _PLAN_DOCUMENT.validate_json(fs.read_bytes(plan_uri))


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

    # -- shared pieces --------------------------------------------------------------------

    def notifier(self, config: ReplicationConfig) -> SnsNotifier | NoNotifier:
        listener = config.sns_event_listener
        if listener is None:
            return NoNotifier()
        return SnsNotifier(listener, lambda region: self.aws.client("sns", region))

    def event(
        self,
        config: ReplicationConfig,
        replication: TableReplication,
        kind: str,
        event_id: str,
        started: datetime,
        plan: ReplicationPlan | None = None,
        *,
        copied: bool = True,
        error_message: str | None = None,
    ) -> ReplicationEvent:
        """The one builder of what consumers are told, for every type and both drivers."""
        data = plan is not None and plan.mode in COPYING_MODES
        partitioned = plan is not None and plan.source_table.is_partitioned
        return ReplicationEvent(
            type=kind,
            event_id=event_id,
            source_catalog=config.source_catalog.name,
            replica_catalog=config.replica_catalog.name,
            source_table=replication.source_table.qualified_name,
            replica_table=replication.replica_qualified_name,
            replica_metastore_uris=self.catalog_description(config.replica_catalog),
            replica_table_location=(
                plan.replica_table.location if plan else replication.replica_table.table_location
            ),
            start_time=started,
            end_time=None if kind == START else self.clock(),
            partition_keys=plan.source_table.partition_keys if plan else (),
            modified_partitions=(
                ([list(p.values) for p in plan.replica_partitions] if copied else [])
                if partitioned and plan
                else None
            ),
            bytes_replicated=(plan.manifest.bytes if copied else 0) if data and plan else None,
            error_message=error_message,
            headers=config.sns_event_listener.headers if config.sns_event_listener else {},
        )

    def catalog_description(self, catalog: CatalogConfig) -> str:
        """``replicaMetastoreUris``: the metastore URIs, or ``glue:<region>`` (resolved)."""
        if catalog.glue is not None:
            return f"glue:{catalog.glue.region or self.aws.region}"
        return catalog.hive_metastore_uris or ""

    def _open(self, catalog: CatalogConfig) -> Catalog:
        return self.catalogs(catalog, self.aws)

    def _replica_key(self, config: ReplicationConfig, replication: TableReplication) -> str:
        """The replica table's key in the locks and the ledger (``ferry.ledger``)."""
        return lifecycle.replica_of(config.replica_catalog, replication, self.aws.region)

    # -- Resolve tables -------------------------------------------------------------------

    def resolve_tables(self, payload: dict[str, Any], max_concurrency: int) -> dict[str, Any]:
        """Validate the config; one Map item per table, each with its own event id.

        A ``table-name-pattern`` is expanded here, against the source catalog: each table
        it matches is an item of its own (``ferry.selection``).
        """
        config_uri = payload["configUri"]
        config = load_config_uri(config_uri, self.config_environment)
        items = []
        triggered = trigger_time(payload.get("trigger"))
        for replication in self.select_tables(config, payload.get("tables") or [], config_uri):
            started = self.clock()
            items.append(
                {
                    "configUri": config_uri,
                    "sourceTable": replication.source_table.qualified_name,
                    "replicaTable": replication.replica_qualified_name,
                    "eventId": self.event_ids(started),
                    "startTime": started.isoformat(),
                    "triggerTime": (triggered or started).isoformat(),
                }
            )
        # The list goes to S3, read by the Map's ItemReader: a config that selects thousands
        # of tables would not fit in a state (256 KiB).
        run = RunLocations.for_event(self.work_uri, f"run-{new_event_id(self.clock)}")
        fs.write_bytes(run.tables, json.dumps(items).encode())
        tables_bucket, tables_key = fs.object_location(run.tables)
        return {
            "tablesBucket": tables_bucket,
            "tablesKey": tables_key,
            "resultsPrefix": fs.object_location(run.results)[1],
            "count": len(items),
            "maxConcurrency": max_concurrency,
        }

    def select_tables(
        self, config: ReplicationConfig, tables: Sequence[str] = (), source: str = "config"
    ) -> list[TableReplication]:
        """The run's table replications, patterns expanded (the source catalog read if needed)."""
        if not selection.needs_catalog(config, tables):
            return selection.expand(config, tables, source=source)
        with self._open(config.source_catalog) as catalog:
            return selection.expand(config, tables, catalog.list_table_names, source)

    def check_catalogs(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Whether each catalog of a config answers from where this runs (``ferry doctor``
        invokes the deployed Plan function with ``{"check": "catalogs"}``): a cheap read of a
        database the config names, which the function's role may read."""
        config = load_config_uri(payload["configUri"], self.config_environment)
        first = config.table_replications[0] if config.table_replications else None
        # A housekeeping-only config names no database; every Hive metastore has "default".
        source_database = first.source_table.database_name if first else "default"
        replica_database = first.replica_database if first else "default"
        answers = []
        for role, catalog, database in (
            ("source", config.source_catalog, source_database),
            ("replica", config.replica_catalog, replica_database),
        ):
            name = f"{role} {catalog.name} ({self.catalog_description(catalog)})"
            try:
                with self._open(catalog) as opened:
                    opened.get_database(database)
                answers.append({"catalog": name, "ok": True, "detail": "answered"})
            except Exception as error:  # noqa: BLE001 - the answer is the check's finding
                answers.append({"catalog": name, "ok": False, "detail": str(error)[:300]})
        return {"catalogs": answers}

    # -- Plan -----------------------------------------------------------------------------

    def plan(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Tell consumers START, plan, stream the manifest, write the plan; choose the copier.

        Planning only reads both catalogs and the source files; what it writes is under the
        run's own folder of the work location, so running it again is harmless.
        """
        config_uri, event_id = payload["configUri"], payload["eventId"]
        config = load_config_uri(config_uri, self.config_environment)
        replication = config.replication_of(payload["sourceTable"], payload.get("replicaTable"))
        lifecycle.take_lock(
            self.state, self._replica_key(config, replication), event_id, self.clock()
        )
        started = datetime.fromisoformat(payload["startTime"])
        self.notifier(config).publish(self.event(config, replication, START, event_id, started))
        options = config.copier_options_for(replication)
        where = RunLocations.for_event(self.work_uri, event_id)
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
                ),
            )
        lifecycle.snapshot_created(
            self.state, self._replica_key(config, replication), plan, self.clock()
        )
        for notice in plan.notices:
            logger.warning("%s", notice)
        faults.point("plan.planned")
        copier = choose_copier(plan, options)
        fs.write_bytes(
            where.plan,
            _PLAN_DOCUMENT.dump_json(
                PlanDocument(
                    config_uri, copier, started, plan, _optional_time(payload.get("triggerTime"))
                )
            ),
        )
        bucket, key = fs.object_location(where.manifest)
        return {
            "eventId": event_id,
            "planUri": where.plan,
            "manifestUri": where.manifest,
            "manifestBucket": bucket,
            "manifestKey": key,
            "reportUri": where.report,
            "copyResultsPrefix": fs.object_location(where.copy_results)[1],
            "copier": copier.value,
            "copierOptions": _batch_options(options),
            "files": plan.manifest.files,
            "bytes": plan.manifest.bytes,
            "batches": plan.manifest.batches,
            "partitions": len(plan.replica_partitions),
            "partitionsToAdd": len(plan.partitions_to_add),
            "partitionsToAlter": len(plan.partitions_to_alter),
            "kind": plan.kind,
            "replicaLocation": plan.replica_table.location,
            "partitionFilter": plan.partition_filter,
            "sourceTable": replication.source_table.qualified_name,
            "replicaTable": replication.replica_qualified_name,
            "notices": list(plan.notices),
        }

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
        config = load_config_uri(config_uri, self.config_environment)
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
                s3 = self.aws.client("s3", fs.bucket_region(location))
            check_writable(location, s3)
        return {
            "copier": choose_copier(plan, options).value,
            "files": plan.manifest.files,
            "bytes": plan.manifest.bytes,
            "partitions": len(plan.replica_partitions),
            "partitionsToAdd": len(plan.partitions_to_add),
            "partitionsToAlter": len(plan.partitions_to_alter),
            "kind": plan.kind,
            "replicaLocation": plan.replica_table.location,
            "partitionFilter": plan.partition_filter,
            "partitionsUnchanged": plan.partitions_unchanged,
            "partitionsToDrop": len(plan.partitions_to_drop),
            "dropTable": plan.drop_table,
            "overwrite": plan.overwrite,
            "unchanged": plan.unchanged,
            "changes": [
                {
                    "values": list(change.values),
                    "name": partition_name(plan.source_table.partition_keys, change.values),
                    "change": change.change.value,
                    "files": change.files,
                    "bytes": change.bytes,
                }
                for change in plan.changes
            ],
        }

    # -- copies ---------------------------------------------------------------------------

    def inline_copy(
        self, payload: dict[str, Any], progress: Progress | None = None
    ) -> dict[str, Any]:
        """Copy the manifest here, batch by batch; a retry skips batches already recorded."""
        from ferry.copier import InlineCopier, Manifest

        document = read_plan(payload["planUri"])
        config = load_config_uri(document.config_uri, self.config_environment)
        options = config.copier_options_for(document.plan.replication)
        where = RunLocations.for_event(self.work_uri, document.plan.event_id)
        copier = InlineCopier(threads=options.threads, chunk_size=options.chunk_size_mib * MIB)
        done = recorded_batches(where.manifest)
        batches = read_batches(where.manifest)
        pending = [batch for batch in batches if batch["batch"] not in done]
        tasks = {batch["batch"]: tuple(batch_tasks(batch)) for batch in batches}
        if progress is not None:
            for batch in batches:
                if batch["batch"] in done:
                    progress(sum(task.size for task in tasks[batch["batch"]]))

        def record(index: int) -> None:
            batch = pending[index]
            copied = tasks[batch["batch"]]
            write_copy_record(where.manifest, batch, len(copied), sum(task.size for task in copied))
            faults.point("copy.batch")

        # Every pending batch on the same pools: no batch waits for the last file of the one
        # before it, and each is recorded as soon as its own files are verified.
        copier.copy_batches(
            [Manifest(batch["eventId"], tasks[batch["batch"]]) for batch in pending],
            progress,
            record,
        )
        return {
            "files": sum(len(batch_files) for batch_files in tasks.values()),
            "bytes": sum(task.size for batch_files in tasks.values() for task in batch_files),
        }

    def copy_batch(
        self, payload: dict[str, Any], progress: Progress | None = None
    ) -> dict[str, Any]:
        """Server-side copy of one batch of the manifest (one item of the S3 copy Map)."""
        from ferry.copier import Manifest
        from ferry.s3_copy import S3ServerSideCopier

        options = CopierOptions.model_validate(payload.get("copierOptions") or {})
        batch = payload["batch"]
        tasks = batch_tasks(batch)
        done: list[Any] = []
        if payload.get("attempt"):
            # A retry (the Lambda ran out of time, or failed part-way): the objects already at
            # the target, whole, are not copied again. The target is this event's own new
            # folder, and S3 stores an object only once it is complete.
            done, tasks = already_copied(tasks)
        region = fs.bucket_region(tasks[0].target) if tasks else None
        # The threads fit this batch (many small objects, or a few large ones); the client's
        # connections fit the threads (objects and their parts run on two pools).
        multipart_threshold = options.multipart_threshold_mib * MIB
        threads = concurrency.copy_threads(
            [task.size for task in tasks], multipart_threshold, options.threads
        )
        copier = S3ServerSideCopier(
            self.aws.client("s3", region, connections=2 * threads),
            threads=threads,
            multipart_threshold=multipart_threshold,
            part_size=options.part_size_mib * MIB,
        )
        if progress is not None and done:
            progress(sum(task.size for task in done))
        report = copier.copy(Manifest(batch["eventId"], tuple(tasks)), progress)
        faults.point("copy.batch")
        files = report.files + len(done)
        size = report.bytes + sum(task.size for task in done)
        write_copy_record(payload["manifestUri"], batch, files, size)
        return {"files": files, "bytes": size, "resumed": len(done)}

    # -- Commit ---------------------------------------------------------------------------

    def commit(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Check every batch was copied and verified, then point the replica at the snapshot."""
        document = read_plan(payload["planUri"])
        plan = document.plan
        config = load_config_uri(document.config_uri, self.config_environment)
        if document.copier is CopierKind.NONE:
            raise FerryError(f"event {plan.event_id} has nothing to commit")
        where = RunLocations.for_event(self.work_uri, plan.event_id)
        if plan.manifest.batches:
            missing = set(range(plan.manifest.batches)) - recorded_batches(where.manifest)
            if missing:
                raise CopyIncompleteError(
                    f"{len(missing)} of {plan.manifest.batches} batches of event "
                    f"{plan.event_id} have no copy record (first: batch {min(missing)}); "
                    f"not committing"
                )
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
            )
            key = self._replica_key(config, plan.replication)
            lifecycle.committed(self.state, key, plan, replica, before, self.clock())
        return {
            "replicaLocation": plan.replica_table.location,
            "partitionsAdded": result.partitions_added,
            "partitionsAltered": result.partitions_altered,
        }

    # -- Notify success -------------------------------------------------------------------

    def notify_success(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Tell consumers SUCCESS; the table's outcome (UNCHANGED when nothing was done).

        A message that cannot be published raises ``NotificationError``: the replica keeps
        its new snapshot (Abort checks the catalog before removing anything) and the table
        is reported as failed to notify.
        """
        document = read_plan(payload["planUri"])
        plan = document.plan
        config = load_config_uri(document.config_uri, self.config_environment)
        unchanged = document.copier is CopierKind.NONE
        event = self.event(
            config, plan.replication, SUCCESS, plan.event_id, document.started, plan,
            copied=not unchanged,
        )  # fmt: skip
        faults.point("notify.success")
        self.notifier(config).publish(event)
        lifecycle.release_lock(
            self.state, self._replica_key(config, plan.replication), plan.event_id
        )
        ended = event.end_time or document.started
        return {
            "status": "UNCHANGED" if unchanged else "SUCCEEDED",
            "sourceTable": plan.source_table.qualified_name,
            "replicaTable": plan.replication.replica_qualified_name,
            "eventId": plan.event_id,
            "replicaLocation": plan.replica_table.location,
            "partitionFilter": plan.partition_filter,
            "files": 0 if unchanged else plan.manifest.files,
            "bytes": 0 if unchanged else plan.manifest.bytes,
            "partitions": 0 if unchanged else len(plan.replica_partitions),
            "durationSeconds": (ended - document.started).total_seconds(),
            "lagSeconds": (ended - (document.triggered or document.started)).total_seconds(),
        }

    # -- Abort table ----------------------------------------------------------------------

    def abort(self, payload: dict[str, Any]) -> dict[str, Any]:
        """A table failed: remove what nothing references, tell consumers, name the error.

        The snapshot folder is removed only when no replica table or partition references
        it (a failure after or part-way through Commit leaves it in place: readers may use
        it). What was removed or kept is recorded in the run's ``abort.json``.
        """
        name, message = describe_error(payload["error"])
        if name == TOLERANCE_EXCEEDED and payload.get("failedState") == "S3 server-side copy":
            # The copy Map tolerates no failed batch: what failed is the copy. (Each batch's
            # own error is in the function's log; the batches without a copy record are
            # the failed ones.)
            name, message = CopyError.__name__, f"batches of the S3 copy failed: {message}"
        event_id, source_table = payload["eventId"], payload["sourceTable"]
        plan_result = payload.get("plan") or {}
        plan_uri = plan_result.get("planUri")
        if plan_uri is None and payload.get("findPlan"):
            # A table Summarize aborts (its iteration failed where no Catch takes the error):
            # its plan, if Plan got that far, is where every plan of the event is.
            candidate = RunLocations.for_event(self.work_uri, event_id).plan
            plan_uri = candidate if fs.exists(candidate) else None
            if plan_uri is not None:
                plan_result = {"planUri": plan_uri, "reportUri": RunLocations.for_event(
                    self.work_uri, event_id).report}  # fmt: skip
        document = read_plan(plan_uri) if plan_uri else None
        if document is not None and document.copier is CopierKind.SPARK:
            name, message = _spark_failure(plan_result.get("reportUri"), name, message)
        try:
            config: ReplicationConfig | None = load_config_uri(
                payload["configUri"], self.config_environment
            )
            replication = config.replication_of(source_table, payload.get("replicaTable"))
        except FerryError:
            config, replication = None, None  # the config itself is what failed
        outcome = {"snapshot": None, "removed": False, "referencedBy": []}
        if document is not None and config is not None:
            outcome = self._clean_up(document.plan, config)
            if outcome["referencedBy"]:
                message += f" (the replica references snapshot {outcome['snapshot']}; it was kept)"
        if config is not None and replication is not None:  # never another run's lock
            lifecycle.release_lock(self.state, self._replica_key(config, replication), event_id)
        notified = False
        if config is not None and replication is not None:
            started = datetime.fromisoformat(payload["startTime"])
            event = self.event(
                config, replication, FAILURE, event_id, started,
                document.plan if document else None, copied=False, error_message=message,
            )  # fmt: skip
            try:
                self.notifier(config).publish(event)
                notified = True
            except NotificationError as error:
                logger.warning("%s", error)
        return {
            "status": "FAILED",
            "sourceTable": source_table,
            "replicaTable": replication.replica_qualified_name if replication else None,
            "eventId": event_id,
            "failedState": payload.get("failedState"),
            "error": name,
            "cause": message,
            "snapshot": outcome["snapshot"],
            "snapshotRemoved": outcome["removed"],
            "notified": notified,
        }

    def _clean_up(self, plan: ReplicationPlan, config: ReplicationConfig) -> dict[str, Any]:
        snapshot = plan.snapshot_location
        outcome: dict[str, Any] = {"snapshot": snapshot, "removed": False, "referencedBy": []}
        table = plan.replica_table
        with self._open(config.replica_catalog) as replica:
            if snapshot:
                references = snapshot_references(snapshot, replica, table.database, table.name)
                outcome["referencedBy"] = references
                if not references:
                    try:
                        fs.delete_tree(snapshot)
                        outcome["removed"] = True
                    except Exception as error:  # noqa: BLE001 - e.g. a location it may not touch
                        # What could not be removed is left for the vacuum; the table's
                        # consumers still hear FAILURE and its lock is still released.
                        outcome["removeError"] = f"{type(error).__name__}: {error}"
                        logger.warning("could not remove snapshot %s: %s", snapshot, error)
            if release_claim(replica, plan):
                outcome["claimReleased"] = True
            database = replica.get_database(table.database)
            if (
                database is not None
                and database.parameters.get(CREATED_BY_EVENT) == plan.event_id
                and not replica.list_table_names(table.database)
            ):
                replica.drop_database(table.database)
                outcome["droppedDatabase"] = table.database
        where = RunLocations.for_event(self.work_uri, plan.event_id)
        fs.write_bytes(where.abort, json.dumps(outcome).encode())
        return outcome

    # -- Housekeeping (its own state machine) --------------------------------------------

    def housekeeping(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Delete superseded snapshots past their grace period; the vacuum when asked.

        Writes the full report under ``<work>/housekeeping/``; returns counts, the first
        paths and the report's URI (``ferry/housekeeping.py``).
        """
        from ferry import housekeeping

        config = load_config_uri(payload["configUri"], self.config_environment)
        replications = self.select_tables(config, payload.get("tables") or [], payload["configUri"])
        now = self.clock()
        # No table to ask about (a housekeeping-only config, a pattern that matched
        # nothing): the replica catalog is not opened, and the report lists no table.
        with self._open(config.replica_catalog) if replications else nullcontext() as replica:
            report = housekeeping.housekeep(
                config, replications, replica, self.state, now,
                lambda replication: self._replica_key(config, replication),
                housekeeping.Request.from_payload(payload),
            )  # fmt: skip
        where = fs.join(self.work_uri, "housekeeping", f"{self.event_ids(now)}.json")
        fs.write_bytes(where, json.dumps(report.to_dict(), indent=2).encode())
        return report.result(where)

    # -- Summarize ------------------------------------------------------------------------

    def summarize(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Every table's outcome, from the results the Map over the tables wrote.

        A table whose iteration failed without reaching Abort (an error no ``Catch`` takes:
        ``States.DataLimitExceeded``, ``States.Runtime``) is aborted here, so it too ends
        as every failed table does: FAILURE to consumers, its lock released, its snapshot
        removed unless the replica references it.
        """
        faults.point("summarize")
        outcomes = []
        for child in map_results(payload["results"]):
            if child.status == "SUCCEEDED":
                outcomes.append(child.output)
                continue
            item = child.input
            outcomes.append(
                self.abort(
                    {
                        **item,
                        "configUri": item.get("configUri") or payload.get("configUri"),
                        "error": {"Error": child.error, "Cause": child.cause},
                        "failedState": "Replicate tables",
                        "findPlan": True,
                    }
                )
            )
        return summary(outcomes)


def resolved_tables(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The items ``resolve_tables`` wrote (each table of the run), from its result."""
    return json.loads(fs.read_bytes(fs.object_uri(result["tablesBucket"], result["tablesKey"])))


@dataclass(frozen=True)
class ChildResult:
    """One child execution of a Distributed Map, as its ``ResultWriter`` wrote it."""

    status: str
    input: dict[str, Any]
    output: dict[str, Any]
    error: str | None = None
    cause: str | None = None


def map_results(details: Mapping[str, Any]) -> list[ChildResult]:
    """The children's results a Distributed Map's ``ResultWriter`` wrote, in item order.

    ``details`` is the Map's ``ResultWriterDetails`` (``Bucket``, ``Key`` of its manifest).
    """
    manifest = json.loads(fs.read_bytes(fs.object_uri(details["Bucket"], details["Key"])))
    bucket = manifest.get("DestinationBucket", details["Bucket"])
    found = []
    for status in ("SUCCEEDED", "FAILED", "PENDING"):
        for result_file in manifest.get("ResultFiles", {}).get(status, []):
            for entry in json.loads(fs.read_bytes(fs.object_uri(bucket, result_file["Key"]))):
                found.append(
                    ChildResult(
                        status=entry.get("Status", status),
                        input=json.loads(entry.get("Input") or "{}"),
                        output=json.loads(entry.get("Output") or "{}"),
                        error=entry.get("Error"),
                        cause=entry.get("Cause"),
                    )
                )
    return found


def summary(outcomes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts of the tables' outcomes, and the first failure's error."""
    # A table's outcome: Abort's result, or the whole iteration's data ending in Notify.
    statuses = [r.get("status") or (r.get("notified") or {}).get("status") for r in outcomes]
    failed = [r for r, status in zip(outcomes, statuses, strict=True) if status == "FAILED"]
    first = failed[0] if failed else {}
    error, cause = first.get("error"), first.get("cause")
    if error and error.startswith("States."):
        # The execution's Fail state cannot end with Step Functions' own names.
        error, cause = StepFunctionsError.__name__, f"{error}: {cause}"
    return {
        "succeeded": statuses.count("SUCCEEDED"),
        "unchanged": statuses.count("UNCHANGED"),
        "failed": len(failed),
        "error": error,
        "cause": (
            f"{first.get('sourceTable')}: {cause}"
            + (f" (and {len(failed) - 1} more failed tables)" if len(failed) > 1 else "")
            if failed
            else None
        ),
    }


def already_copied(tasks: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """``(done, pending)``: the tasks whose target is there with the planned size, the rest.

    One listing per target folder, not a request per object.
    """
    folders: dict[str, dict[str, int]] = {}
    done, pending = [], []
    for task in tasks:
        folder = task.target.rsplit("/", 1)[0]
        if folder not in folders:
            folders[folder] = {entry.uri: entry.size for entry in fs.list_files(folder)}
        if folders[folder].get(task.target) == task.size:
            done.append(task)
        else:
            pending.append(task)
    return done, pending


def _batch_options(options: CopierOptions) -> dict[str, Any]:
    """What a copy batch needs of the copier options (travels through the Map's items)."""
    return options.model_dump(
        by_alias=True, include={"threads", "multipart_threshold_mib", "part_size_mib"}
    )


def _spark_failure(report_uri: str | None, name: str, message: str) -> tuple[str, str]:
    """The copy job's own report names the files it could not copy; prefer it."""
    if not report_uri:
        return name, message
    try:
        report = json.loads(fs.read_bytes(report_uri))
    except (OSError, ValueError):
        return name, message
    failed = report.get("failed") or []
    if not failed:
        return name, message
    first = failed[0]
    more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
    return (
        CopyError.__name__,
        f"{len(failed)} files not copied; first {first['source']}: {first['error']}{more}",
    )


def trigger_time(trigger: Any) -> datetime | None:
    """When the event that started a run happened: an S3 event's ``time``, a schedule's
    ``scheduledTime``; None for a run started by hand (or a time that does not parse)."""
    if not isinstance(trigger, dict):
        return None
    return _optional_time(trigger.get("time") or trigger.get("scheduledTime"))


def _optional_time(text: Any) -> datetime | None:
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
