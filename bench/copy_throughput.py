"""Copy throughput of Ferry's copiers against the usual tools, measured in the same run.

Datasets: a few large files, and many small ones. Paths: file→file, file→S3 and S3→S3
(S3 is the local emulator). Each Ferry copier is timed beside its baseline on the same
data in the same process, and reported as a ratio (baseline seconds / Ferry seconds: above 1
means Ferry is faster), because absolute numbers on a shared 2-core machine are noise.

Baselines: ``cp -r`` for file→file; ``aws s3 cp --recursive`` against the same endpoint
for the S3 paths (for S3→S3 it copies server-side, like Ferry's S3 copier).

    make bench                      # or: .venv/bin/python bench/copy_throughput.py --repeat 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from emr_jobs.copy_files import CopyWithSettings, copy_manifest  # noqa: E402
from ferry import fs  # noqa: E402
from ferry.copier import CopyTask, InlineCopier, Manifest  # noqa: E402
from ferry.local import emulator, processes  # noqa: E402
from ferry.s3_copy import S3ServerSideCopier  # noqa: E402

MiB = 1024 * 1024


@dataclass(frozen=True)
class Dataset:
    name: str
    files: int
    size: int

    @property
    def total(self) -> int:
        return self.files * self.size


@dataclass(frozen=True)
class Row:
    dataset: str
    path: str
    copier: str
    baseline: str
    seconds: float
    baseline_seconds: float
    total: int

    @property
    def ratio(self) -> float:
        return self.baseline_seconds / self.seconds


def best_of(repeat: int, run: Callable[[int], None]) -> float:
    """The fastest of ``repeat`` runs; each run gets its own attempt number for fresh targets."""
    times = []
    for attempt in range(repeat):
        started = time.perf_counter()
        run(attempt)
        times.append(time.perf_counter() - started)
    return min(times)


def make_local(root: Path, dataset: Dataset) -> Path:
    folder = root / dataset.name
    block = os.urandom(min(dataset.size, 4 * MiB))
    for index in range(dataset.files):
        path = folder / f"dt={index % 10}" / f"part-{index:05d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as out:
            remaining = dataset.size
            while remaining:
                chunk = block[: min(len(block), remaining)]
                out.write(chunk)
                remaining -= len(chunk)
    return folder


def manifest_for(source_root: str, target_root: str) -> Manifest:
    tasks = [
        CopyTask(
            entry.uri,
            fs.join(target_root, fs.relative_path(entry.uri, source_root) or ""),
            entry.size,
        )
        for entry in fs.list_files(source_root)
    ]
    return Manifest("bench", tuple(tasks))


def aws_cli(endpoint: str, *args: str) -> None:
    aws = str(Path(sys.executable).with_name("aws"))
    subprocess.run([aws, "--endpoint-url", endpoint, "--only-show-errors", *args], check=True)


def bench_dataset(dataset: Dataset, work: Path, endpoint: str, s3, spark, args) -> list[Row]:
    """Every path and copier on one dataset, each beside its baseline."""
    print(f"dataset {dataset.name}: {dataset.files} files × {dataset.size // 1024} KiB", flush=True)
    inline = InlineCopier(threads=args.threads)
    server_side = S3ServerSideCopier(s3, threads=args.threads)
    source = make_local(work / "source", dataset)
    source_uri = fs.local_uri(source)
    bucket = f"bench-{dataset.name}"
    s3.create_bucket(Bucket=bucket)
    s3_source = f"s3://{bucket}/source"
    aws_cli(endpoint, "s3", "cp", "--recursive", str(source), s3_source)
    local_targets = work / "target" / dataset.name

    def local_target(label: str, attempt: int) -> str:
        return fs.local_uri(local_targets / f"{label}-{attempt}")

    def s3_target(label: str, attempt: int) -> str:
        return f"s3://{bucket}/{label}-{attempt}"

    def ferry_run(copy, source_root, target, label):
        return lambda attempt: copy(manifest_for(source_root, target(label, attempt)))

    def spark_copy(manifest: Manifest) -> None:
        report = copy_manifest(
            spark, manifest, tasks=4, copy=CopyWithSettings(fs.default().settings)
        )
        assert not report["failed"], report["failed"][:1]

    def with_spark(copiers, source_root, target, label):
        return copiers + (
            [("spark", ferry_run(spark_copy, source_root, target, label))] if spark else []
        )

    cases = [
        ("file→file", "cp -r", lambda a: shutil.copytree(source, local_targets / f"cp-{a}"),
         with_spark([("inline", ferry_run(inline.copy, source_uri, local_target, "inline"))], source_uri, local_target, "spark")),
        ("file→S3", "aws s3 cp", lambda a: aws_cli(endpoint, "s3", "cp", "--recursive", str(source), s3_target("cli", a)),
         with_spark([("inline", ferry_run(inline.copy, source_uri, s3_target, "inline"))], source_uri, s3_target, "spark")),
        ("S3→S3", "aws s3 cp", lambda a: aws_cli(endpoint, "s3", "cp", "--recursive", s3_source, s3_target("s3cli", a)),
         with_spark([("s3 server-side", ferry_run(server_side.copy, s3_source, s3_target, "server")),
                     ("inline", ferry_run(inline.copy, s3_source, s3_target, "s3inline"))], s3_source, s3_target, "s3spark")),
    ]  # fmt: skip
    rows = []
    for path, baseline_name, baseline, copiers in cases:
        baseline_seconds = best_of(args.repeat, baseline)
        for copier_name, run in copiers:
            seconds = best_of(args.repeat, run)
            row = Row(
                dataset.name,
                path,
                copier_name,
                baseline_name,
                seconds,
                baseline_seconds,
                dataset.total,
            )
            rows.append(row)
            print(
                f"  {path:<10} {copier_name:<15} {seconds:7.2f} s   {baseline_name:<10} {baseline_seconds:7.2f} s   ratio {row.ratio:5.2f}",
                flush=True,
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs per measurement (best kept)")
    parser.add_argument("--large-mib", type=int, default=32, help="size of each large file")
    parser.add_argument("--small-files", type=int, default=1000, help="number of small files")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark copy job")
    args = parser.parse_args(argv)

    datasets = [
        Dataset("large", 4, args.large_mib * MiB),
        Dataset("small", args.small_files, 16 * 1024),
    ]
    work = Path(tempfile.mkdtemp(prefix="ferry-bench-"))
    port = processes.free_port()
    emulator.start_emulator(work, port)
    endpoint = emulator.endpoint_url(port)
    os.environ.update({**emulator.EMULATOR_ENVIRONMENT, "AWS_ENDPOINT_URL": endpoint})
    fs.configure(fs.S3Settings.from_environment(os.environ))
    s3 = boto3.client("s3", endpoint_url=endpoint)
    spark = None
    if not args.no_spark:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2]")
            .appName("ferry-bench")
            .config("spark.ui.enabled", "false")
            .getOrCreate()
        )
    rows: list[Row] = []
    try:
        for dataset in datasets:
            rows += bench_dataset(dataset, work, endpoint, s3, spark, args)
    finally:
        if spark is not None:
            spark.stop()
        processes.stop_process(work, "aws")
        shutil.rmtree(work, ignore_errors=True)

    print(
        "\n| dataset | path | Ferry copier | MiB/s | baseline | MiB/s | ratio (baseline s / Ferry s) |"
    )
    print("| --- | --- | --- | ---: | --- | ---: | ---: |")
    for row in rows:
        print(
            f"| {row.dataset} | {row.path} | {row.copier} | {row.total / MiB / row.seconds:.0f} | "
            f"{row.baseline} | {row.total / MiB / row.baseline_seconds:.0f} | {row.ratio:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
