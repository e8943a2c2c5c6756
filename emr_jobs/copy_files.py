"""The Spark copier: copy every file of a manifest on a cluster (an EMR Serverless job run).

The driver reads the manifest, splits its files into bins of about equal bytes and hands each
Spark task exactly one bin. A task copies its files with ``ferry.copying.copier.copy_file`` (which
verifies every file at the target: to S3, one request per small file), ``threads`` at a time
(chosen from the manifest: many for small files, whose copies wait on requests, few for
large ones), retries a file that failed for a reason the SDK does not retry (its AWS
requests already had ``ferry.storage.retry_policy``'s attempts), and sends back one small record per
file; file contents never travel through Spark. A manifest's rewrites (an Iceberg table's manifests,
each rewritten for the replica with the position delete files it names) are spread over Spark
tasks the same way, and retried the same way. The driver writes a JSON report and exits
non-zero when any file was not copied or rewritten; otherwise it records every batch as done.

What one Spark task runs (a bin's copies, a bin's rewrites, each file retried on its own) is
``ferry.copying.spark_tasks``; this script is the driver: arguments, the manifest, the bins,
the report (``ferry.copying.spark_report``).

Run locally exactly as the local runtime does::

    PYTHONPATH=. PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[2]' \\
        emr_jobs/copy_files.py --manifest file:///tmp/ferry/manifest.json
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from ferry.copying.copier import copy_file
from ferry.copying.copy_records import write_copy_record
from ferry.copying.copy_tasks import CopyTask, Manifest
from ferry.copying.manifest import batch_rewrites, batch_tasks, batch_work, read_batches
from ferry.copying.spark_report import (
    REPORT_NAME,
    add_rewrites,
    build_report,
    default_report_uri,
    summary,
    write_report,
)
from ferry.copying.spark_tasks import (
    DEFAULT_ATTEMPTS,
    DEFAULT_BACKOFF_SECONDS,
    DEFAULT_CHUNK_SIZE_MIB,
    CopyFunction,
    FileResult,
    arm_faults,
    copy_bin,
    copy_with_retries,
    copy_with_settings,
    describe_error,
    reach_with_roles,
    roles_of,
    task_threads,
)
from ferry.iceberg.pipeline import ManifestRewriter
from ferry.storage import file_systems, fs
from ferry.storage.s3 import MiB

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

APP_NAME = "ferry-copy-files"
# What a file weighs at least when balancing: opening a file costs a request whatever its
# size, and with a weight of zero every empty file would land in the same (lightest) bin.
MINIMUM_WEIGHT = 1024


def balance(tasks: Sequence[CopyTask], bins: int) -> list[tuple[CopyTask, ...]]:
    """Split ``tasks`` into at most ``bins`` non-empty bins of about equal bytes.

    Greedy "largest first into the lightest bin": a file bigger than a fair share gets a bin
    of its own instead of making a straggler of a task that also holds many small files.
    Ties are broken by source and target, so the same tasks always give the same bins.
    """
    if bins < 1:
        raise ValueError(f"bins must be at least 1, not {bins}")
    count = min(bins, len(tasks))
    contents: list[list[CopyTask]] = [[] for _ in range(count)]
    # (bytes so far, bin index): among equally light bins the lowest index wins.
    lightest = [(0, index) for index in range(count)]
    for task in sorted(tasks, key=lambda task: (-_weight(task), task.source, task.target)):
        load, index = lightest[0]
        contents[index].append(task)
        heapq.heapreplace(lightest, (load + _weight(task), index))
    return [tuple(bin_tasks) for bin_tasks in contents]


def _weight(task: CopyTask) -> int:
    return max(task.size, MINIMUM_WEIGHT)


def copy_manifest(
    spark: SparkSession,
    manifest: Manifest,
    *,
    tasks: int | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    chunk_size: int = DEFAULT_CHUNK_SIZE_MIB * MiB,
    copy: CopyFunction = copy_file,
    backoff_seconds: float = DEFAULT_BACKOFF_SECONDS,
    threads: int | None = None,
) -> dict[str, Any]:
    """Copy every file of ``manifest`` with Spark and return the report.

    ``tasks`` (Spark tasks, one bin each) defaults to twice the default parallelism; there
    are never more of them than files. ``threads`` (files a task copies at once) defaults to
    what fits the manifest's sizes (``ferry.copying.concurrency``).
    """
    started = time.monotonic()
    bins = balance(manifest.tasks, tasks or spark.sparkContext.defaultParallelism * 2)
    results = copy_bins(
        spark,
        bins,
        attempts=attempts,
        chunk_size=chunk_size,
        copy=copy,
        backoff_seconds=backoff_seconds,
        threads=task_threads(manifest, chunk_size, threads),
    )
    return build_report(manifest, results, len(bins), time.monotonic() - started)


def copy_bins(
    spark: SparkSession,
    bins: Sequence[Sequence[CopyTask]],
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    chunk_size: int = DEFAULT_CHUNK_SIZE_MIB * MiB,
    copy: CopyFunction = copy_file,
    backoff_seconds: float = DEFAULT_BACKOFF_SECONDS,
    threads: int = 1,
) -> list[FileResult]:
    """Copy each bin in a Spark task of its own; the results of every file, in bin order."""
    if not bins:
        return []
    copy_one_bin = partial(
        copy_bin,
        attempts=attempts,
        chunk_size=chunk_size,
        copy=copy,
        backoff_seconds=backoff_seconds,
        threads=threads,
    )
    # One slice per bin, so each Spark task copies exactly one bin; only results come back.
    rdd = spark.sparkContext.parallelize(list(bins), numSlices=len(bins))
    return rdd.flatMap(copy_one_bin).collect()


#: A rewrite to run: its batch's shared context and its work item (``ferry.copying.manifest``).
RewriteItem = tuple[dict[str, Any], list[Any]]


def manifest_rewrites(batches: Sequence[dict[str, Any]]) -> list[RewriteItem]:
    """Every rewrite of the manifest's batches, with its context."""
    items: list[RewriteItem] = []
    for batch in batches:
        context, work = batch_rewrites(batch)
        items.extend((context, item) for item in work)
    return items


def rewrite_bin(
    items: Sequence[RewriteItem],
    *,
    settings: file_systems.S3Settings | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    backoff_seconds: float = DEFAULT_BACKOFF_SECONDS,
    roles: tuple[tuple[str, str], ...] = (),
) -> Iterator[FileResult]:
    """Run one bin's rewrites (inside a Spark task), each retried on its own like a copy;
    one result per rewrite, in the bin's order. The bin's manifests share the rewrites of the
    position delete files they name."""
    if settings is not None:
        fs.configure(settings)
        reach_with_roles(settings, roles)
    arm_faults()
    rewriters: dict[str, ManifestRewriter] = {}
    for context, item in items:
        key = json.dumps(context, sort_keys=True)
        if key not in rewriters:
            rewriters[key] = ManifestRewriter(context)
        rewriter = rewriters[key]
        source, target = item[0], item[1]
        yield copy_with_retries(
            CopyTask(source, target, int(item[-1])),
            attempts=attempts,
            copy=lambda _task, _chunk, rewriter=rewriter, item=item: rewriter(item),
            backoff_seconds=backoff_seconds,
        )


def rewrite_manifests(
    spark: SparkSession,
    items: Sequence[RewriteItem],
    *,
    tasks: int | None = None,
    settings: file_systems.S3Settings | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    backoff_seconds: float = DEFAULT_BACKOFF_SECONDS,
    roles: tuple[tuple[str, str], ...] = (),
) -> list[FileResult]:
    """Run every rewrite, spread over Spark tasks (round robin: manifests weigh alike)."""
    if not items:
        return []
    count = min(len(items), tasks or spark.sparkContext.defaultParallelism * 2)
    bins = [list(items[index::count]) for index in range(count)]
    run_bin = partial(
        rewrite_bin,
        settings=settings,
        attempts=attempts,
        backoff_seconds=backoff_seconds,
        roles=roles,
    )
    rdd = spark.sparkContext.parallelize(bins, numSlices=len(bins))
    return rdd.flatMap(run_bin).collect()


def read_manifest(uri: str) -> tuple[Manifest, list[dict[str, Any]]]:
    """The manifest at ``uri`` (any scheme ``ferry.storage.fs`` resolves): the files to copy, and
    its batches. A resumed run's files that its failed attempt already copied whole, from the
    same source version, are not copied again (``ferry.copying.manifest.batch_work``)."""
    batches = read_batches(uri)
    event_id = batches[0]["eventId"] if batches else ""
    tasks = tuple(task for batch in batches for task in batch_work(batch)[1])
    return Manifest(event_id, tasks), batches


def record_batches(manifest_uri: str, batches: Sequence[dict[str, Any]]) -> None:
    """Every file was copied and verified and every rewrite written: record each batch as
    done, for Commit."""
    for batch in batches:
        tasks = batch_tasks(batch)
        rewrites = len(batch_rewrites(batch)[1])
        write_copy_record(
            manifest_uri, batch, len(tasks), sum(task.size for task in tasks), rewrites
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, read the manifest, copy, write the report; exit 1 if a file failed."""
    arguments = _parser().parse_args(argv)
    # Where S3 is gets decided here, once, for the driver and (through the copy function)
    # for the workers: the standard AWS variables, as boto3 reads them.
    settings = file_systems.S3Settings.from_environment(os.environ)
    fs.configure(settings)
    report_uri = arguments.report or default_report_uri(arguments.manifest)
    try:
        manifest, batches = read_manifest(arguments.manifest)
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"{APP_NAME}: cannot read manifest {arguments.manifest}: {describe_error(error)}")

    # Python workers must run this interpreter (and see what it has installed).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession  # here: the functions above run without pyspark

    spark = SparkSession.builder.appName(APP_NAME).getOrCreate()
    chunk_size = arguments.chunk_size_mib * MiB
    # A side in another account: its buckets are reached with its role, here and on workers.
    roles = roles_of(arguments.manifest)
    reach_with_roles(settings, roles)
    copy = copy_with_settings(settings, manifest, chunk_size, arguments.threads, roles)
    report = copy_manifest(
        spark,
        manifest,
        tasks=arguments.tasks,
        attempts=arguments.retries,
        chunk_size=chunk_size,
        copy=copy,
        threads=copy.threads,
    )
    rewrites = manifest_rewrites(batches)
    if rewrites:
        results = rewrite_manifests(
            spark,
            rewrites,
            tasks=arguments.tasks,
            settings=settings,
            attempts=arguments.retries,
            roles=roles,
        )
        report = add_rewrites(report, results)
    write_report(report, report_uri)
    print(summary(report, report_uri))
    if report["failed"]:
        sys.exit(1)
    record_batches(arguments.manifest, batches)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=APP_NAME, description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", required=True, help="URI of the manifest JSON")
    parser.add_argument("--report", help=f"URI of the report (default: {REPORT_NAME} beside it)")
    parser.add_argument(
        "--retries",
        type=_positive,
        default=DEFAULT_ATTEMPTS,
        help=(
            f"attempts per file in total (default {DEFAULT_ATTEMPTS}); a failed AWS request "
            "fails its file at once, after the SDK's own attempts"
        ),
    )
    parser.add_argument(
        "--tasks", type=_positive, help="Spark tasks (default: twice the default parallelism)"
    )
    parser.add_argument(
        "--threads",
        type=_positive,
        help="files each task copies at once (default: chosen from the manifest's sizes)",
    )
    parser.add_argument(
        "--chunk-size-mib",
        type=_positive,
        default=DEFAULT_CHUNK_SIZE_MIB,
        help=f"read and write size (default {DEFAULT_CHUNK_SIZE_MIB})",
    )
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


if __name__ == "__main__":
    sys.exit(main())
