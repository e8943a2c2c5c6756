"""State `Commit`: check every batch of the manifest was copied and verified, then point the
replica catalog at the new snapshot (the catalog writes themselves are
``ferry.lifecycle.committing``).

Commit runs only when every batch has its copy record: a location any replica table or
partition references always holds a complete, verified snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ferry.copying.copy_records import recorded_batches
from ferry.core import faults
from ferry.core.errors import CopyIncompleteError, FerryError
from ferry.lifecycle import replica_state, snapshot_records
from ferry.lifecycle.committing import DEFAULT_CLAIM_LEASE, commit
from ferry.planning.grants_plan import apply_grants
from ferry.planning.plan_document import read_plan
from ferry.planning.runs import CopierKind, RunLocations
from ferry.planning.source_versions import recorded_parameters
from ferry.statemachine.replication_payloads import CommitResult, PlannedRun
from ferry.states.context import StateContext


def run(context: StateContext, payload: PlannedRun | Mapping[str, Any]) -> CommitResult:
    """Commit the run's plan to the replica catalog; free its copy slot; record the outcome."""
    document = read_plan(PlannedRun.model_validate(payload).plan_uri)
    plan = document.plan
    config = context.load(document.config_uri)
    if document.copier is CopierKind.NONE:
        raise FerryError(f"event {plan.event_id} has nothing to commit")
    where = RunLocations.for_event(context.work_uri, plan.event_id)
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
        # Imported here: pyiceberg is for Iceberg tables only (test_cold_start_imports.py).
        from ferry.iceberg.pipeline import commit_metadata

        commit_metadata(plan.iceberg)
    state = context.state
    with context.open(config.replica_catalog) as replica:
        before = snapshot_records.locations_before_commit(state, plan, replica, where.root)
        result = commit(
            plan,
            replica,
            config.replica_catalog.batch_size,
            context.clock(),
            state.lease if state is not None else DEFAULT_CLAIM_LEASE,
            state.owner if state is not None else None,
            replica_state.process_is_gone,
            recorded_parameters(plan.source_version, document.source_read_at),
            adopt=document.adopt or plan.replica_table.qualified_name.lower() in context.adopt,
        )
        # Who may read it, once the table carries its schema (column grants name its columns).
        apply_grants(plan, config, replica, context.aws)
        faults.point("commit.grants-applied")
        key = context.replica_key(config, plan.replication)
        snapshot_records.committed(state, key, plan, replica, before, context.clock(), where.root)
    context.release_copy_slot(plan.event_id)
    context.record_success(config, document)
    return CommitResult(
        replica_location=plan.replica_table.location,
        partitions_added=result.partitions_added,
        partitions_altered=result.partitions_altered,
    )
