"""What every copier is given and what it reports: copy tasks, a manifest, a copy report.

The manifest is the contract between planning and copying: a list of (source, target, size,
change marker) that any copier can execute — inline (``ferry.copying.copier``), S3 server-side
(``ferry.copying.s3_copy``) or Spark (``emr_jobs/copy_files.py``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CopyTask:
    """One file to copy: where from, where to, its size and change marker when planned."""

    source: str
    target: str
    size: int
    #: The source's change marker as planning listed it: the ETag on S3, the modification
    #: time (ns) on a local file system. None: only the size is checked.
    marker: str | None = None


@dataclass(frozen=True)
class Manifest:
    """Files for a copier to copy, for one event (a batch, or a whole manifest read back)."""

    event_id: str
    tasks: tuple[CopyTask, ...]

    @property
    def total_bytes(self) -> int:
        return sum(task.size for task in self.tasks)


@dataclass(frozen=True)
class CopyReport:
    files: int
    bytes: int
