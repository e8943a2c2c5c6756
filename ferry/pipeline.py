"""The replication pipeline's steps, one function per state of the state machine.

Each Lambda handler in ``lambdas/`` calls exactly one of these. State payloads stay small:
the plan and the manifest of files travel as S3 objects under the work location
(``<work>/runs/<event-id>/``), and every state reads what it needs from there.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import TypeAdapter

from ferry import fs
from ferry.aws import AwsClients
from ferry.catalog.factory import open_catalog
from ferry.commit import commit
from ferry.config import CopierOptions, ReplicationMode, load_config_uri
from ferry.copier import CopyTask, Manifest, verify_all
from ferry.errors import CopyError, FerryError, describe_error
from ferry.event_id import new_event_id
from ferry.filters import Clock, utc_now
from ferry.notify import ReplicationEvent, notifier_for
from ferry.plan import ReplicationPlan, plan_replication
from ferry.replication import copy_snapshot, inline_copier, remove_snapshot
from ferry.s3_copy import S3ServerSideCopier

MIB = 1024 * 1024


class CopierKind(StrEnum):
    NONE = "none"  # nothing changed: skip to the end
    METADATA = "metadata"  # METADATA_MIRROR, or no files to copy
    INLINE = "inline"  # small: inside a Lambda
    S3 = "s3"  # S3 to S3: server-side copy
    SPARK = "spark"  # everything else: EMR Serverless


def choose_copier(plan: ReplicationPlan, options: CopierOptions) -> CopierKind:
    """The cheapest copier that fits the plan.

    S3 to S3 goes server-side whatever the size: no compute moves bytes, which beats even
    an inline copy. Otherwise small copies stay in the Lambda and large ones go to Spark.
    """
    if plan.unchanged:
        return CopierKind.NONE
    tasks = plan.manifest.tasks
    if plan.mode is ReplicationMode.METADATA_MIRROR or not tasks:
        return CopierKind.METADATA
    if all(
        fs.scheme_of(task.source) in fs.S3_SCHEMES and fs.scheme_of(task.target) in fs.S3_SCHEMES
        for task in tasks
    ):
        return CopierKind.S3
    if plan.manifest.total_bytes <= options.inline_threshold_mib * MIB:
        return CopierKind.INLINE
    return CopierKind.SPARK


@dataclass(frozen=True)
class PlanDocument:
    """What Plan leaves for the later states: the config's location, the plan, the copier."""

    config_uri: str
    copier: CopierKind
    started: datetime
    plan: ReplicationPlan


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
    def batches(self) -> str:
        return fs.join(self.root, "batches.json")

    @property
    def report(self) -> str:
        return fs.join(self.root, "copy-report.json")


class Pipeline:
    """The steps, with their collaborators injected (AWS clients, clock)."""

    def __init__(self, work_uri: str, aws: AwsClients | None = None, clock: Clock = utc_now):
        self.work_uri = work_uri.rstrip("/")
        self.aws = aws or AwsClients()
        self.clock = clock

    # -- Resolve tables -----------------------------------------------------------------

    def resolve_tables(
        self, config_uri: str, tables: list[str] | None, max_concurrency: int
    ) -> dict[str, Any]:
        """Validate the config; one Map item per table, each with its event id."""
        config = load_config_uri(config_uri)
        items = []
        for replication in config.select(tables or []):
            started = self.clock()
            items.append(
                {
                    "configUri": config_uri,
                    "sourceTable": replication.source_table.qualified_name,
                    "eventId": new_event_id(lambda s=started: s),
                    "startTime": started.isoformat(),
                }
            )
        return {"tables": items, "maxConcurrency": max_concurrency}

    # -- Plan -----------------------------------------------------------------------------

    def plan_table(
        self, config_uri: str, source_table: str, event_id: str, start_time: str
    ) -> dict[str, Any]:
        config = load_config_uri(config_uri)
        [replication] = config.select([source_table])
        started = datetime.fromisoformat(start_time)
        notifier_for(config.sns_event_listener, self.aws).publish(
            ReplicationEvent(
                type="START",
                event_id=event_id,
                source_table=source_table,
                replica_table=replication.replica_qualified_name,
                replica_catalog_uris=config.replica_catalog.description,
                start_time=started,
            )
        )
        options = config.copier_options_for(replication)
        with (
            open_catalog(config.source_catalog, self.aws) as source,
            open_catalog(config.replica_catalog, self.aws) as replica,
        ):
            plan = plan_replication(
                replication, source, replica, event_id, self.clock, options.threads
            )
        copier = choose_copier(plan, options)
        where = RunLocations.for_event(self.work_uri, event_id)
        fs.write_bytes(
            where.plan, _PLAN_DOCUMENT.dump_json(PlanDocument(config_uri, copier, started, plan))
        )
        fs.write_bytes(where.manifest, plan.manifest.to_json().encode())
        tasks, size = plan.manifest.tasks, options.s3_batch_files
        batches = [
            {
                "eventId": event_id,
                "copierOptions": options.model_dump(by_alias=True),
                "tasks": [asdict(task) for task in tasks[start : start + size]],
            }
            for start in range(0, len(tasks), size)
        ]
        fs.write_bytes(where.batches, json.dumps(batches).encode())
        bucket, _, key = where.batches.split("://", 1)[1].partition("/")
        return {
            "eventId": event_id,
            "planUri": where.plan,
            "manifestUri": where.manifest,
            "batchesBucket": bucket,
            "batchesKey": key,
            "reportUri": where.report,
            "copier": copier.value,
            "files": len(plan.manifest.tasks),
            "bytes": plan.manifest.total_bytes,
            "partitions": len(plan.replica_partitions),
            "sourceTable": source_table,
            "replicaTable": replication.replica_qualified_name,
        }

    # -- copies -----------------------------------------------------------------------------

    def inline_copy(self, plan_uri: str) -> dict[str, Any]:
        document = read_plan(plan_uri)
        options = load_config_uri(document.config_uri).copier_options_for(document.plan.replication)
        copy_snapshot(document.plan, inline_copier(options))
        manifest = document.plan.manifest
        return {"files": len(manifest.tasks), "bytes": manifest.total_bytes}

    def s3_copy_batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Server-side copy of one batch of the manifest (one item of the S3 copy Map)."""
        options = CopierOptions.model_validate(batch.get("copierOptions", {}))
        manifest = Manifest(batch["eventId"], tuple(CopyTask(**task) for task in batch["tasks"]))
        copier = S3ServerSideCopier(
            self.aws.client("s3"),
            threads=options.threads,
            multipart_threshold=options.multipart_threshold_mib * MIB,
            part_size=options.part_size_mib * MIB,
        )
        report = copier.copy(manifest)
        return {"files": report.files, "bytes": report.bytes}

    # -- Commit -------------------------------------------------------------------------------

    def commit_table(self, plan_uri: str) -> dict[str, Any]:
        """Verify every file at the target (for copies made elsewhere), then commit."""
        document = read_plan(plan_uri)
        plan = document.plan
        config = load_config_uri(document.config_uri)
        if document.copier in (CopierKind.S3, CopierKind.SPARK):
            threads = config.copier_options_for(plan.replication).threads
            verify_all(plan.manifest.tasks, threads=threads)
        with open_catalog(config.replica_catalog, self.aws) as replica:
            commit(plan, replica)
        return {
            "replicaLocation": plan.replica_table.location,
            "partitions": len(plan.replica_partitions),
        }

    # -- Notify success / Abort ----------------------------------------------------------------

    def notify_success(self, plan_uri: str) -> dict[str, Any]:
        document = read_plan(plan_uri)
        plan = document.plan
        config = load_config_uri(document.config_uri)
        unchanged = document.copier is CopierKind.NONE
        finished = self.clock()
        notifier_for(config.sns_event_listener, self.aws).publish(
            ReplicationEvent(
                type="SUCCESS",
                event_id=plan.event_id,
                source_table=plan.source_table.qualified_name,
                replica_table=plan.replication.replica_qualified_name,
                replica_catalog_uris=config.replica_catalog.description,
                start_time=document.started,
                end_time=finished,
                replica_table_location=plan.replica_table.location,
                partition_keys=plan.source_table.partition_keys,
                modified_partitions=[]
                if unchanged
                else [list(p.values) for p in plan.replica_partitions],
                bytes_replicated=0 if unchanged else plan.manifest.total_bytes,
            )
        )
        return {
            "status": "UNCHANGED" if unchanged else "SUCCEEDED",
            "sourceTable": plan.source_table.qualified_name,
            "replicaTable": plan.replication.replica_qualified_name,
            "eventId": plan.event_id,
            "files": 0 if unchanged else len(plan.manifest.tasks),
            "bytes": 0 if unchanged else plan.manifest.total_bytes,
            "partitions": 0 if unchanged else len(plan.replica_partitions),
            "durationSeconds": (finished - document.started).total_seconds(),
        }

    def abort_table(
        self,
        config_uri: str,
        source_table: str,
        event_id: str,
        start_time: str,
        error: dict[str, Any],
        plan: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A table failed: remove its partial snapshot, tell consumers, name the error."""
        name, message = describe_error(error)
        document = read_plan(plan["planUri"]) if plan else None
        if document is not None:
            remove_snapshot(document.plan)
            if document.copier is CopierKind.SPARK:
                name, message = _spark_failure(plan["reportUri"], name, message)
        replica_table = None
        try:
            config = load_config_uri(config_uri)
            [replication] = config.select([source_table])
            replica_table = replication.replica_qualified_name
            notifier_for(config.sns_event_listener, self.aws).publish(
                ReplicationEvent(
                    type="FAILURE",
                    event_id=event_id,
                    source_table=source_table,
                    replica_table=replica_table,
                    replica_catalog_uris=config.replica_catalog.description,
                    start_time=datetime.fromisoformat(start_time),
                    end_time=self.clock(),
                    replica_table_location=(
                        document.plan.replica_table.location
                        if document
                        else replication.replica_table.table_location
                    ),
                    partition_keys=document.plan.source_table.partition_keys if document else (),
                    error_message=message,
                )
            )
        except FerryError:
            pass  # the config itself is what failed; there is no one to tell
        return {
            "status": "FAILED",
            "sourceTable": source_table,
            "replicaTable": replica_table,
            "eventId": event_id,
            "error": name,
            "cause": message,
        }

    # -- Summarize ---------------------------------------------------------------------------

    @staticmethod
    def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
        failed = [r for r in results if r.get("status") == "FAILED"]
        first = failed[0] if failed else {}
        return {
            "succeeded": sum(1 for r in results if r.get("status") == "SUCCEEDED"),
            "unchanged": sum(1 for r in results if r.get("status") == "UNCHANGED"),
            "failed": len(failed),
            "error": first.get("error"),
            "cause": (
                f"{first.get('sourceTable')}: {first.get('cause')}"
                + (f" (and {len(failed) - 1} more failed tables)" if len(failed) > 1 else "")
                if failed
                else None
            ),
        }


def read_plan(plan_uri: str) -> PlanDocument:
    return _PLAN_DOCUMENT.validate_json(fs.read_bytes(plan_uri))


def _spark_failure(report_uri: str, name: str, message: str) -> tuple[str, str]:
    """The copy job's own report names the files it could not copy; prefer it."""
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
