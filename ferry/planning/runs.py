"""Where one table replication leaves its documents under the work location, and the copier
it chose.

Large things never travel through the state machine's payloads: Plan writes the plan (with
its choice of copier, ``ferry.planning.plan_document``) and the manifest once under
``<work>/runs/<event-id>/``, and each later step reads only what it needs from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from ferry.config import CopierOptions, ReplicationMode
from ferry.copying.manifest import REWRITE_BATCH_BYTES
from ferry.storage import fs
from ferry.storage.s3 import MiB

if TYPE_CHECKING:
    # Only named here: the plan's model pulls in pyiceberg and sqlglot, which the states that
    # only need a run's locations or the copier's kind do not import.
    from ferry.planning.replication_plan import ReplicationPlan


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
