"""What Plan decided, and why, as ``ferry plan`` shows it and a dry run reports it."""

from __future__ import annotations

from typing import Any

from ferry.core.model import partition_name
from ferry.planning.grants_preview import grants_preview
from ferry.planning.replication_plan import ReplicationPlan
from ferry.planning.runs import CopierKind
from ferry.planning.statistics_records import statistics_counts


def preview_of(plan: ReplicationPlan, copier: CopierKind) -> dict[str, Any]:
    """The plan's counts and each partition's change, with the copier it would run."""
    return {
        "copier": copier.value,
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
        "iceberg": _iceberg(plan),
        "permissions": grants_preview(plan.grants),
        "statistics": statistics_counts(plan.statistics),
        "notices": list(plan.notices),
    }


def _iceberg(plan: ReplicationPlan) -> dict[str, Any] | None:
    """An Iceberg table's plan: the source snapshots the replica lacks, the metadata files
    a run would write, of which the manifests the copier rewrites (the files and bytes to
    copy are the plan's)."""
    run = plan.iceberg
    if run is None:
        return None
    return {
        "snapshotsToAdd": len(run.new_snapshot_ids),
        "snapshotIds": list(run.new_snapshot_ids),
        "metadataFiles": run.metadata_files,
        "manifestRewrites": plan.manifest.rewrites,
        "replicaMetadata": run.previous_metadata_location,
    }
