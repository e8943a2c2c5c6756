"""What one Spark task of the copy job (``emr_jobs/copy_files.py``) runs: a bin's files, each
copied and retried on its own, with one small result per file (a bin's rewrites are retried
the same way).

Here, in an importable module that the job's archive carries, not in the job's script: Spark
pickles the script's functions by value with the globals they use, and a worker imports these
by name instead. Spark's Python workers never run the job's ``main()``, so the copy function
(``CopyWithSettings``) carries the S3 settings and the roles the driver decided, and sets up
each worker's file systems on its first call.

A file is retried here only for what the SDK does not retry: its AWS requests already had
``ferry.storage.retry_policy``'s attempts (``copy_with_retries``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

from ferry.copying import concurrency
from ferry.copying.copier import copy_file, process_transfer
from ferry.copying.copy_tasks import CopyTask, Manifest
from ferry.core.errors import FerryError
from ferry.storage import file_systems, fs
from ferry.storage.retry_policy import answered_by_aws
from ferry.storage.s3 import MiB

#: Beside the manifest when a side is in another account
#: (``ferry.copying.side_credentials.SIDES_FILE``).
SIDES_FILE = "sides.json"
DEFAULT_ATTEMPTS = 3
DEFAULT_CHUNK_SIZE_MIB = 8
DEFAULT_BACKOFF_SECONDS = 0.5

CopyFunction = Callable[[CopyTask, int], None]


@dataclass(frozen=True)
class FileResult:
    """What happened to one file of the manifest."""

    source: str
    target: str
    size: int
    ok: bool
    attempts: int
    error: str | None = None


@dataclass(frozen=True)
class CopyWithSettings:
    """``copy_file`` on a Spark worker, with the S3 settings the driver decided.

    Spark's Python workers are processes of their own that never run ``main()``, so the copy
    function carries the settings and configures each worker's file systems with them (the
    first call does; later calls find them configured and keep their caches).
    """

    settings: file_systems.S3Settings
    #: Files a task copies at once: the parts of large S3 uploads share a pool of as many.
    threads: int = 1
    #: How files go to S3, chosen from the whole manifest (``ferry.copying.concurrency.uploads``).
    uploads: concurrency.Uploads | None = None
    #: Buckets of a side in another account, each with its role
    #: (``ferry.copying.side_credentials``), as JSON.
    roles: tuple[tuple[str, str], ...] = ()

    def __call__(self, task: CopyTask, chunk_size: int) -> None:
        fs.configure(self.settings)
        reach_with_roles(self.settings, self.roles)
        transfer = process_transfer(chunk_size, self.threads, self.uploads)
        copy_file(task, chunk_size, transfer=transfer)


def copy_with_settings(
    settings: file_systems.S3Settings,
    manifest: Manifest,
    chunk_size: int,
    threads: int | None = None,
    roles: tuple[tuple[str, str], ...] = (),
) -> CopyWithSettings:
    """The copy function for ``manifest``'s tasks: threads and uploads chosen from its sizes."""
    threads = task_threads(manifest, chunk_size, threads)
    sizes = [task.size for task in manifest.tasks]
    return CopyWithSettings(
        settings, threads, concurrency.uploads(sizes, threads, chunk_size), roles
    )


def task_threads(manifest: Manifest, chunk_size: int, configured: int | None = None) -> int:
    """Files each Spark task copies at once: ``configured``, else chosen from the sizes.

    Small files are bound by request latency, so a task overlaps many; large ones by
    bandwidth, which a few files (each in parallel parts) already fill.
    """
    return concurrency.copy_threads([task.size for task in manifest.tasks], chunk_size, configured)


#: The roles this process reaches buckets with, made once per process (driver or worker).
_ROLE_CLIENTS: dict[file_systems.S3Settings, Any] = {}
_REACHED: set[tuple[str, str]] = set()


def reach_with_roles(settings: file_systems.S3Settings, roles: tuple[tuple[str, str], ...]) -> None:
    """Reach each bucket of a side in another account with its role, as the steps do
    (``ferry.copying.side_credentials``): the clients of the role assumed with this process's
    credentials (the job role's), renewed before they expire. Once per process and bucket."""
    if not roles or all(role in _REACHED for role in roles):
        return
    from ferry.storage.aws import AwsClients
    from ferry.storage.aws_roles import RoleSession

    aws = _ROLE_CLIENTS.setdefault(settings, AwsClients(settings.endpoint))
    for bucket, role in roles:
        fs.reach_bucket_with(bucket, aws.assuming(RoleSession.from_json(json.loads(role))))
    _REACHED.update(roles)


def roles_of(manifest_uri: str) -> tuple[tuple[str, str], ...]:
    """The roles Plan wrote beside the manifest (``ferry.copying.side_credentials.write_sides``: the
    job reads no config, its environment has no YAML), as JSON by bucket: what the copy function
    carries to the workers."""
    try:
        written = json.loads(fs.read_bytes(fs.join(manifest_uri.rsplit("/", 1)[0], SIDES_FILE)))
    except FileNotFoundError:
        return ()
    return tuple(
        (bucket, json.dumps(role, sort_keys=True)) for bucket, role in sorted(written.items())
    )


def copy_with_retries(
    task: CopyTask,
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    chunk_size: int = DEFAULT_CHUNK_SIZE_MIB * MiB,
    copy: CopyFunction = copy_file,
    backoff_seconds: float = DEFAULT_BACKOFF_SECONDS,
) -> FileResult:
    """Copy one file, trying up to ``attempts`` times with a doubling pause in between.

    A failed AWS request is not sent again from here: the SDK already made the retry policy's
    attempts (``ferry.storage.retry_policy.answered_by_aws``), so the file fails at once. What the
    SDK does not retry (a body cut off part-way, a check of the bytes, a local file) is.

    Never raises: the outcome, with the last error's text, is in the result.
    """
    error_text = None
    for attempt in range(1, attempts + 1):
        if attempt > 1:
            time.sleep(backoff_seconds * 2 ** (attempt - 2))
        try:
            copy(task, chunk_size)
        # Any error, not only CopyError: one bad file belongs in the report. Letting it fail
        # the Spark task would rerun the whole bin, then fail the job with no report at all.
        except Exception as error:
            error_text = describe_error(error)
            if answered_by_aws(error):
                return FileResult(task.source, task.target, task.size, False, attempt, error_text)
        else:
            return FileResult(task.source, task.target, task.size, True, attempt)
    return FileResult(task.source, task.target, task.size, False, attempts, error_text)


def copy_bin(
    tasks: Sequence[CopyTask],
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    chunk_size: int = DEFAULT_CHUNK_SIZE_MIB * MiB,
    copy: CopyFunction = copy_file,
    backoff_seconds: float = DEFAULT_BACKOFF_SECONDS,
    threads: int = 1,
) -> Iterator[FileResult]:
    """Copy one bin's files, ``threads`` at a time (this runs inside a Spark task).

    One result per file, in the bin's order.
    """
    arm_faults()
    copy_one = partial(
        copy_with_retries,
        attempts=attempts,
        chunk_size=chunk_size,
        copy=copy,
        backoff_seconds=backoff_seconds,
    )
    if threads <= 1 or len(tasks) <= 1:
        yield from map(copy_one, tasks)
        return
    with ThreadPoolExecutor(min(threads, len(tasks)), thread_name_prefix="ferry-copy") as pool:
        yield from pool.map(copy_one, tasks)


def arm_faults() -> None:
    """Fail points for failure drills, from ``FERRY_FAULTS`` (in each Python worker too)."""
    text = os.environ.get("FERRY_FAULTS")
    if text:
        from ferry.core import faults

        faults.arm(*faults.parse(text))


def describe_error(error: BaseException) -> str:
    """One line for a report: Ferry's errors as they are, anything else with its type."""
    # Ferry's errors are one line that names the file; anything else gets its type too.
    first_line = str(error).splitlines()[0] if str(error) else ""
    if isinstance(error, FerryError):
        return first_line
    return f"{type(error).__name__}: {first_line}" if first_line else type(error).__name__
