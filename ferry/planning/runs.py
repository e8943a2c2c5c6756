"""What one table replication leaves under the work location, and the copier it chose.

Large things never travel through the state machine's payloads: Plan writes the plan (with
its choice of copier) and the manifest once under ``<work>/runs/<event-id>/``, and each later
step reads only what it needs from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import TypeAdapter

from ferry.config import CopierOptions, ReplicationMode
from ferry.copying.manifest import REWRITE_BATCH_BYTES
from ferry.planning.replication_plan import ReplicationPlan
from ferry.storage import fs
from ferry.storage.s3 import MiB


class CopierKind(StrEnum):
    NONE = "none"  # nothing changed: skip to the end
    METADATA = "metadata"  # METADATA_MIRROR, or no files to copy
    INLINE = "inline"  # small: in the step's own process
    S3 = "s3"  # S3 to S3: server-side copy
    SPARK = "spark"  # everything else: the Spark job (EMR Serverless, or spark-submit)


def choose_copier(plan: ReplicationPlan, options: CopierOptions) -> CopierKind:
    """The cheapest copier that fits the plan.

    S3 to S3 goes server-side whatever the size: no compute moves bytes, which beats even
    an inline copy. Otherwise small copies (and few manifest rewrites) stay in the step and
    large ones go to Spark.
    """
    if plan.unchanged:
        return CopierKind.NONE
    manifest = plan.manifest
    if plan.mode is ReplicationMode.METADATA_MIRROR or not manifest.work:
        return CopierKind.METADATA
    s3 = set(fs.S3_SCHEMES)
    if set(manifest.source_schemes) <= s3 and set(manifest.target_schemes) <= s3:
        return CopierKind.S3
    # Rewrites (an Iceberg table's manifests) cost CPU: inline only as many as one batch
    # holds, which fits a Lambda's time; more go where they are spread over many workers.
    if (
        manifest.bytes <= options.inline_threshold_mib * MiB
        and manifest.rewrite_bytes <= REWRITE_BATCH_BYTES
    ):
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
    #: When Plan read the source (before it read anything): the replica holds every change
    #: the source made before then once this run succeeds (``ferry.planning.source_versions``).
    source_read_at: datetime | None = None
    #: The replica is adopted (``TableItem.adopt``): Commit claims it as Plan took it.
    adopt: bool = False


_PLAN_DOCUMENT = TypeAdapter(PlanDocument)


def write_plan(uri: str, document: PlanDocument) -> None:
    fs.write_bytes(uri, _PLAN_DOCUMENT.dump_json(document))


def read_plan(plan_uri: str) -> PlanDocument:
    return _PLAN_DOCUMENT.validate_json(fs.read_bytes(plan_uri))


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
