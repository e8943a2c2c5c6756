"""State `Plan`: tell consumers START, plan, stream the manifest, write the plan; choose the
copier (the planning rules themselves are ``ferry.planning.table_plan``; this module is the state).

Planning only reads both catalogs and the source files; what it writes is under the run's
own folder of the work location, so running it again is harmless. ``preview`` is what Plan
would decide, without notifying, locking or copying (``ferry plan``, ``--dry-run``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ferry.config import CopierOptions, ReplicationConfig, ReplicationMode, TableReplication
from ferry.copying.manifest import ManifestWriter
from ferry.copying.side_credentials import write_sides
from ferry.core import faults
from ferry.core.model import Partition
from ferry.iceberg.iceberg_run import IcebergIntent
from ferry.lifecycle import attempts, iceberg_intent, replica_state, snapshot_records
from ferry.lifecycle.notify import START
from ferry.lifecycle.replica_as_planned import write_replica_as_planned
from ferry.planning.grants_plan import plan_grants
from ferry.planning.plan_document import PlanDocument, write_plan
from ferry.planning.preflight import check_writable
from ferry.planning.preview import preview_of
from ferry.planning.replication_plan import ReplicationPlan
from ferry.planning.runs import CopierKind, RunLocations, choose_copier
from ferry.planning.table_plan import plan_replication
from ferry.statemachine.replication_payloads import PlanInput, PlanResult, batch_copier_options
from ferry.states.context import StateContext
from ferry.storage import fs

logger = logging.getLogger(__name__)


def run(context: StateContext, payload: PlanInput | Mapping[str, Any]) -> PlanResult:
    """Lock the replica, tell consumers START, plan and write the plan; the copier chosen."""
    payload = PlanInput.model_validate(payload)
    config_uri, event_id = payload.config_uri, payload.event_id
    config = context.load(config_uri)
    replication = config.replication_of(payload.source_table, payload.replica_table)
    adopted = payload.adopt or replication.replica_qualified_name.lower() in context.adopt
    # A failed attempt of this table is continued, not restarted (``ferry.lifecycle.attempts``).
    attempt = _resumable(context, config, replication)
    if attempt is not None:
        event_id = attempt.event_id
    key = context.replica_key(config, replication)
    replica_state.take_lock(
        context.state, key, event_id, context.clock(), owner=payload.execution,
        gone=context.lock_holder_gone,
    )  # fmt: skip
    started = payload.start_time
    context.publish(config, context.event(config, replication, START, event_id, started))
    options = config.copier_options_for(replication)
    where = RunLocations.for_event(context.work_uri, event_id)

    def intend(intent: IcebergIntent) -> None:
        """Write-ahead: an Iceberg run's files at the replica, ledgered before any is."""
        iceberg_intent.iceberg_writes_intended(
            context.state, key, replication, event_id, intent, where.root, context.clock()
        )

    write_sides(config, where.manifest)  # the Spark job's roles for other accounts
    read_at = context.clock()  # before the source is read: no later change is claimed
    reusable = {}
    if attempt is not None and context.state is not None:
        attempts.take(context.state, key, attempt, context.work_uri, context.clock())
        attempts.record_resumed_as(context.work_uri, payload.event_id, attempt)
        reusable = attempts.reusable_targets(context.work_uri, event_id)
    replica_read: list[Mapping[tuple[str, ...], Partition]] = []
    with (
        context.open(config.source_catalog) as source,
        context.open(config.replica_catalog) as replica,
    ):
        plan = plan_replication(
            replication, source, replica, event_id, context.clock, options.listing_threads,
            ManifestWriter(
                where.manifest, event_id, options.s3_batch_files,
                options.s3_batch_gib * 1024**3, reusable,
            ),
            intend,
            adopt=adopted,
            replica_read=replica_read.append,
        )  # fmt: skip
        # Who may read it: checked on the replica's side now, given by Commit.
        plan = plan_grants(plan, config, source, replica, context.aws)
    snapshot_records.snapshot_created(context.state, key, plan, context.clock())
    for notice in plan.notices:
        logger.warning("%s", notice)
    faults.point("plan.planned")
    copier = choose_copier(plan, options)
    if (
        replica_read
        and plan.replica_before is not None
        and _commit_reads_replica(context, plan, copier)
    ):
        write_replica_as_planned(where.root, plan.replica_before, replica_read[0])
    write_plan(
        where.plan,
        PlanDocument(config_uri, copier, started, plan, payload.trigger_time, read_at, adopted),
    )
    return _result(plan, where, copier, options, resumed=attempt is not None)


def _commit_reads_replica(context: StateContext, plan: ReplicationPlan, copier: CopierKind) -> bool:
    """Whether Commit will read what the replica references before it writes, to ledger
    what it supersedes (``snapshot_records.locations_before_commit``): then the replica's
    partitions Plan read are left for it, so that it need not list them again."""
    return (
        copier is not CopierKind.NONE
        and context.state is not None
        and plan.mode is not ReplicationMode.METADATA_MIRROR
    )


def _result(
    plan: ReplicationPlan,
    where: RunLocations,
    copier: CopierKind,
    options: CopierOptions,
    *,
    resumed: bool,
) -> PlanResult:
    """What Plan returns: where the run's documents are, and the plan's counts."""
    replication = plan.replication
    bucket, manifest_key = fs.object_location(where.manifest)
    return PlanResult(
        event_id=plan.event_id,
        plan_uri=where.plan,
        manifest_uri=where.manifest,
        manifest_bucket=bucket,
        manifest_key=manifest_key,
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
        resumed=resumed,
        reused_files=plan.manifest.reused_files,
        reused_bytes=plan.manifest.reused_bytes,
    )


def _resumable(
    context: StateContext, config: ReplicationConfig, replication: TableReplication
) -> attempts.Attempt | None:
    """The replica table's failed attempt this run continues, if any
    (``ferry.lifecycle.attempts``)."""
    if context.state is None or replication.replica_table.table_location is None:
        return None
    attempt, why = resumable_attempt(context, config, replication)
    if attempt is None and why != attempts.NO_ATTEMPT:
        logger.info("%s: not resuming: %s", replication.replica_qualified_name, why)
    return attempt


def resumable_attempt(
    context: StateContext,
    config: ReplicationConfig,
    replication: TableReplication,
    event_id: str | None = None,
) -> tuple[attempts.Attempt | None, str]:
    """The replica table's newest failed attempt a run may continue (``event_id``: that
    one), or None and why not (``ferry.lifecycle.attempts.resumable``)."""
    with context.open(config.replica_catalog) as replica:
        return attempts.resumable(
            context.state,
            context.replica_key(config, replication),
            context.work_uri,
            replica,
            context.clock(),
            config.housekeeping_for(replication).expired_path_duration,
            context.lock_holder_gone,
            (replication.replica_database, replication.replica_table_name),
            event_id,
        )


def preview(
    context: StateContext,
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
    config = context.load(config_uri)
    replication = config.replication_of(source_table, replica_table)
    options = config.copier_options_for(replication)
    with (
        context.open(config.source_catalog) as source,
        context.open(config.replica_catalog) as replica,
    ):
        plan = plan_replication(
            replication, source, replica, "<event-id>", context.clock, options.listing_threads
        )
        plan = plan_grants(plan, config, source, replica, context.aws)
    location = replication.replica_table.table_location
    if probe and plan.snapshot_location and location:
        s3 = None
        if fs.scheme_of(location) in fs.S3_SCHEMES:
            s3 = fs.default().s3_client(fs.object_location(location)[0])
        check_writable(location, s3)
    return preview_of(plan, choose_copier(plan, options))
