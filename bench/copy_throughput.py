"""Copy throughput of Ferry's copiers against the best tools, measured in the same run.

Datasets: a few large files, and many small ones. Paths: file→file, file→S3 and S3→S3
(S3 is the local emulator). On each path every baseline tool and every Ferry copier copies
the same data to a fresh target (on S3, a bucket of its own, removed once measured), and
each Ferry copier is reported against the **best** baseline of its path (best baseline
seconds / Ferry seconds: above 1 means Ferry is faster), because absolute numbers on a
shared 2-core machine are noise. Each path is measured in rounds, every tool once per
round in an order that rotates: each tool keeps its fastest round, and the median of the
rounds' ratios (each round's best baseline over Ferry's run of that round) is printed
beside it. Drift during the benchmark falls on every tool alike.

Baselines: ``cp -r`` (file→file); ``aws s3 cp --recursive`` (AWS CLI, default 10 concurrent
requests) and ``s5cmd cp`` (default 256 workers) against the same endpoint, both copying
S3→S3 server-side; ``rclone copy`` where it is installed (skipped with a note otherwise),
also server-side for S3→S3.

Requests are counted at the emulator (``ferry.local.emulator_requests``), whoever sends them
(boto3, pyarrow, a Spark worker, a baseline tool): requests/object is every request of a
run (listing included) per file; for Ferry's copiers also the copy's own requests, without
the listing that planning does.

    make bench          # or: .venv/bin/python bench/copy_throughput.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from emr_jobs.copy_files import copy_manifest  # noqa: E402
from ferry.copying.concurrency import copy_threads  # noqa: E402
from ferry.copying.copier import CopyTask, InlineCopier, Manifest  # noqa: E402
from ferry.copying.s3_copy import S3ServerSideCopier  # noqa: E402
from ferry.copying.spark_tasks import copy_with_settings  # noqa: E402
from ferry.local import emulator, emulator_requests, processes  # noqa: E402
from ferry.storage import fs  # noqa: E402
from ferry.storage.aws import AwsClients  # noqa: E402
from ferry.storage.s3 import MiB  # noqa: E402

CHUNK = 8 * MiB
AWS_CLI = "aws s3 cp"


@dataclass(frozen=True)
class Dataset:
    name: str
    files: int
    size: int

    @property
    def total(self) -> int:
        return self.files * self.size


@dataclass
class Measure:
    """One tool or copier on one path: its best time and the requests of its last run."""

    dataset: Dataset
    path: str
    tool: str
    ferry: bool
    seconds: float = 0.0
    times: list[float] = field(default_factory=list)
    #: Ferry's copiers: each round's time from the end of Plan's listing (the Copy step).
    copy_times: list[float] = field(default_factory=list)
    requests: int = 0
    copy_requests: int | None = None
    by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def mib_per_second(self) -> float:
        return self.dataset.total / MiB / self.seconds

    def per_object(self, count: int | None) -> str:
        return "" if count is None else f"{count / self.dataset.files:.3f}"


class Requests:
    """The emulator's request counter (``GET /ferry-api/requests``)."""

    def __init__(self, endpoint: str):
        self.url = endpoint + emulator_requests.PATH

    def read(self) -> dict:
        with urllib.request.urlopen(self.url, timeout=10) as reply:
            return json.loads(reply.read())


def best_of_rounds(
    repeat: int,
    runs: list[tuple[Measure, Callable[[int], tuple[dict, float] | None]]],
    requests: Requests,
    clear: Callable[[], None] = lambda: None,
) -> list[Measure]:
    """Each measure's fastest of ``repeat`` rounds; every round runs each tool once.

    Rounds, not one tool's runs back to back: whatever drifts during a run of the benchmark
    (the emulator's state, the machine's other work) falls on every tool alike, and the
    order rotates from round to round so that no tool always goes first. A run gets its
    round (for a fresh target) and may return the counts read and the clock just before its
    copy began (after listing), to separate the copy's own requests and time; the requests
    of the last round are kept. ``clear`` runs once each run is measured (to remove its
    target).
    """
    times: dict[int, list[float]] = {index: [] for index in range(len(runs))}
    for attempt in range(repeat):
        order = list(range(len(runs)))
        shift = attempt % len(order)
        for index in order[shift:] + order[:shift]:
            measure, run = runs[index]
            before = requests.read()
            started = time.perf_counter()
            copy_started = run(attempt)
            ended = time.perf_counter()
            times[index].append(ended - started)
            after = requests.read()
            measure.requests = after["total"] - before["total"]
            measure.by_kind = {
                kind: count - before["byKind"].get(kind, 0)
                for kind, count in after["byKind"].items()
                if count - before["byKind"].get(kind, 0)
            }
            if measure.ferry and copy_started is not None:
                counted, copy_began = copy_started
                measure.copy_requests = after["total"] - counted["total"]
                measure.copy_times.append(ended - copy_began)
            clear()
    for index, (measure, _) in enumerate(runs):
        measure.times = times[index]
        measure.seconds = min(times[index])
    return [measure for measure, _ in runs]


def median_ratio(measure: Measure, baselines: list[Measure], copy_only: bool = False) -> float:
    """The median over rounds of the best baseline's time in a round over ``measure``'s.

    Each round's tools ran one after another, so a round's ratio compares runs made under
    the same conditions; the median of rounds is not moved by one slow or fast round.
    ``copy_only``: Ferry's time from the end of Plan's listing (the Copy step alone).
    """
    ratios = sorted(
        min(b.times[attempt] for b in baselines) / seconds
        for attempt, seconds in enumerate(measure.copy_times if copy_only else measure.times)
    )
    middle = len(ratios) // 2
    return ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2


class Targets:
    """A bucket of its own for every run's S3 target, removed once the run is measured.

    moto lists a bucket by going through every key in it, whatever the prefix asked for.
    With every run's copy left in the source's bucket, each listing of the source cost
    more than the one before (3 pages over 100,000 keys by the last S3→S3 round of 3,000
    files), which weighed on a tool that lists before copying (Ferry's Plan) more than on
    one that copies while it lists (s5cmd). On S3 a listing costs the same whatever else
    the bucket holds. A bucket is made ready before each run, outside its timing.
    """

    def __init__(self, s3, prefix: str):
        self.s3 = s3
        self.prefix = prefix
        self.made = 0
        self.used: list[str] = []
        self.ready = self._make()

    def uri(self, label: str, attempt: int) -> str:
        self.used.append(self.ready)
        return f"s3://{self.ready}/{label}-{attempt}"

    def clear(self) -> None:
        """Empty and remove the buckets runs used; make the next one ready."""
        for bucket in self.used:
            for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
                if keys:
                    self.s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})
            self.s3.delete_bucket(Bucket=bucket)
        if self.used:
            self.used.clear()
            self.ready = self._make()

    def _make(self) -> str:
        self.made += 1
        bucket = f"{self.prefix}-target-{self.made}"
        self.s3.create_bucket(Bucket=bucket)
        return bucket


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
    """What Plan writes: every file below the source with its size and change marker."""
    tasks = [
        CopyTask(
            entry.uri,
            fs.join(target_root, fs.relative_path(entry.uri, source_root) or ""),
            entry.size,
            entry.marker,
        )
        for entry in fs.list_files(source_root)
    ]
    return Manifest("bench", tuple(tasks))


def tool(name: str) -> str | None:
    """A baseline's program: beside this interpreter (a wheel's), else on the PATH."""
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else shutil.which(name)


def run_quietly(command: list[str], env: dict[str, str] | None = None) -> None:
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])}…: {result.stderr.strip()[:500]}")


class Baselines:
    """The tools people copy with, each pointed at the emulator."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.aws = tool("aws")
        self.s5cmd = tool("s5cmd")
        self.rclone = tool("rclone")
        self.rclone_env = {
            # rclone refuses a custom CA bundle on a plain-HTTP endpoint.
            **{key: value for key, value in os.environ.items() if key != "AWS_CA_BUNDLE"},
            "RCLONE_CONFIG_EMULATOR_TYPE": "s3",
            "RCLONE_CONFIG_EMULATOR_PROVIDER": "Other",
            "RCLONE_CONFIG_EMULATOR_ENDPOINT": endpoint,
            "RCLONE_CONFIG_EMULATOR_ACCESS_KEY_ID": os.environ["AWS_ACCESS_KEY_ID"],
            "RCLONE_CONFIG_EMULATOR_SECRET_ACCESS_KEY": os.environ["AWS_SECRET_ACCESS_KEY"],
            "RCLONE_CONFIG_EMULATOR_REGION": os.environ["AWS_DEFAULT_REGION"],
            "RCLONE_CONFIG_EMULATOR_FORCE_PATH_STYLE": "true",
        }

    def notes(self) -> list[str]:
        missing = {"aws": self.aws, "s5cmd": self.s5cmd, "rclone": self.rclone}
        return [f"{name} not found: not measured" for name, path in missing.items() if not path]

    def aws_cp(self, source: str, target: str) -> None:
        run_quietly(
            [self.aws, "--endpoint-url", self.endpoint, "--only-show-errors", "s3", "cp",
             "--recursive", source, target]
        )  # fmt: skip

    def s5cmd_cp(self, source: str, target: str) -> None:
        # s5cmd's wildcard is recursive: 'dir/*' is every file below dir, paths kept.
        run_quietly(
            [self.s5cmd, "--endpoint-url", self.endpoint, "cp", f"{source.rstrip('/')}/*",
             f"{target.rstrip('/')}/"]
        )  # fmt: skip

    def rclone_copy(self, source: str, target: str) -> None:
        # 32 transfers and checkers: rclone's defaults (4 and 8) are for slow links; nothing
        # is at the fresh target, so no destination check either.
        run_quietly(
            [self.rclone, "copy", _rclone_path(source), _rclone_path(target),
             "--transfers", "32", "--checkers", "32", "--no-check-dest",
             "--s3-no-check-bucket"],
            env=self.rclone_env,
        )  # fmt: skip


def _rclone_path(location: str) -> str:
    if location.startswith("s3://"):
        return "emulator:" + location.removeprefix("s3://")
    return location.removeprefix("file://")


def bench_dataset(dataset: Dataset, work: Path, s3, spark, args, base: Baselines, requests):
    """Every path with its baselines and Ferry's copiers, on one dataset."""
    print(f"dataset {dataset.name}: {dataset.files} files × {dataset.size // 1024} KiB", flush=True)
    inline = InlineCopier(threads=args.threads, chunk_size=CHUNK)
    aws = AwsClients(base.endpoint)
    source = make_local(work / "source", dataset)
    source_uri = fs.local_uri(source)
    bucket = f"bench-{dataset.name}"
    s3.create_bucket(Bucket=bucket)
    s3_source = f"s3://{bucket}/source"
    base.aws_cp(str(source), s3_source)
    local_targets = work / "target" / dataset.name

    def local_target(label: str, attempt: int) -> str:
        return fs.local_uri(local_targets / f"{label}-{attempt}")

    targets = Targets(s3, bucket)
    s3_target = targets.uri

    def ferry_run(copy, source_root, target, label):
        def run(attempt):
            manifest = manifest_for(source_root, target(label, attempt))  # Plan's listing
            counted = requests.read()
            began = time.perf_counter()
            copy(manifest)
            return counted, began

        return run

    def server_side(manifest: Manifest) -> None:
        # As the Copy batch step builds it: threads from the manifest, a pool to match, the
        # client from the clients a warm function keeps (``lambdas/runtime.steps``).
        threads = copy_threads([t.size for t in manifest.tasks], 5 * 1024 * MiB, args.threads)
        client = aws.client("s3", "us-east-1", connections=2 * threads)
        S3ServerSideCopier(client, threads=threads).copy(manifest)

    def spark_copy(manifest: Manifest) -> None:
        copy = copy_with_settings(fs.default().settings, manifest, CHUNK, args.threads)
        report = copy_manifest(
            spark, manifest, tasks=4, chunk_size=CHUNK, threads=copy.threads, copy=copy
        )
        assert not report["failed"], report["failed"][:1]

    def ferry_copiers(source_root, target, prefix: str, copiers: dict[str, Callable]):
        return [
            (name, ferry_run(copy, source_root, target, f"{prefix}-{name.replace(' ', '-')}"))
            for name, copy in copiers.items()
        ]

    def baseline(function, source, target, label):
        return lambda attempt: function(source, target(label, attempt))

    spark_copier = {"spark": spark_copy} if spark else {}
    cases = [
        ("file→file",
         [("cp -r", lambda a: shutil.copytree(source, local_targets / f"cp-{a}"))]
         + ([("rclone", baseline(base.rclone_copy, str(source), local_target, "rclone"))]
            if base.rclone else []),
         ferry_copiers(source_uri, local_target, "ff", {"inline": inline.copy, **spark_copier})),
        ("file→S3",
         [(AWS_CLI, baseline(base.aws_cp, str(source), s3_target, "cli"))]
         + ([("s5cmd", baseline(base.s5cmd_cp, str(source), s3_target, "s5"))]
            if base.s5cmd else [])
         + ([("rclone", baseline(base.rclone_copy, str(source), s3_target, "rc"))]
            if base.rclone else []),
         ferry_copiers(source_uri, s3_target, "fs", {"inline": inline.copy, **spark_copier})),
        ("S3→S3",
         [(AWS_CLI, baseline(base.aws_cp, s3_source, s3_target, "s3cli"))]
         + ([("s5cmd", baseline(base.s5cmd_cp, s3_source, s3_target, "s3s5"))]
            if base.s5cmd else [])
         + ([("rclone", baseline(base.rclone_copy, s3_source, s3_target, "s3rc"))]
            if base.rclone else []),
         ferry_copiers(s3_source, s3_target, "ss",
                       {"s3 server-side": server_side, "inline": inline.copy, **spark_copier})),
    ]  # fmt: skip
    measures = []
    for path, baselines, copiers in cases:
        if args.path and _path_option(path) not in args.path:
            continue
        runs = [(Measure(dataset, path, name, False), run) for name, run in baselines] + [
            (Measure(dataset, path, name, True), run) for name, run in copiers
        ]
        measured = best_of_rounds(args.repeat, runs, requests, clear=targets.clear)
        baselines = [m for m in measured if not m.ferry]
        best = min(baselines, key=_seconds)
        for measure in measured:
            _print(measure, best if measure.ferry else None)
            if measure.ferry:
                print(
                    f"  {'':<26} median of {len(measure.times)} rounds' ratios to the round's "
                    f"best baseline: {median_ratio(measure, baselines):.2f}; the Copy step "
                    f"alone (after Plan's listing): {min(measure.copy_times):.2f} s, ratio "
                    f"{best.seconds / min(measure.copy_times):.2f}, median "
                    f"{median_ratio(measure, baselines, copy_only=True):.2f}",
                    flush=True,
                )
        measures += measured
    return measures


def _path_option(path: str) -> str:
    return path.replace("→", "-").lower()


def _seconds(measure: Measure) -> float:
    return measure.seconds


def _print(measure: Measure, best: Measure | None = None) -> None:
    line = (
        f"  {measure.path:<10} {measure.tool:<15} {measure.seconds:7.2f} s  "
        f"{measure.per_object(measure.requests):>6} req/obj"
    )
    if measure.copy_requests is not None:
        line += f" ({measure.per_object(measure.copy_requests)} copying)"
    if best is not None:
        line += f"   best baseline {best.tool} {best.seconds:.2f} s: ratio {best.seconds / measure.seconds:.2f}"
    print(line + f"   {measure.by_kind}", flush=True)


def table(measures: list[Measure]) -> str:
    """The results as the Markdown table docs/PERFORMANCE.md shows."""
    lines = [
        "| dataset | path | tool | MiB/s | requests/object | copy requests/object | "
        "ratio to best baseline | median of rounds | ratio to the AWS CLI |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for measure in measures:
        group = [
            m
            for m in measures
            if m.dataset == measure.dataset and m.path == measure.path and not m.ferry
        ]
        best = min(group, key=_seconds)
        name = f"Ferry {measure.tool}" if measure.ferry else measure.tool
        if not measure.ferry and measure is best:
            name += " (best)"
        ratio = f"{best.seconds / measure.seconds:.2f}" if measure.ferry else ""
        median = f"{median_ratio(measure, group):.2f}" if measure.ferry else ""
        cli = next((m for m in group if m.tool == AWS_CLI), None)
        to_cli = f"{cli.seconds / measure.seconds:.2f}×" if measure.ferry and cli else ""
        lines.append(
            f"| {measure.dataset.name} | {measure.path} | {name} | "
            f"{measure.mib_per_second:.0f} | {measure.per_object(measure.requests)} | "
            f"{measure.per_object(measure.copy_requests)} | {ratio} | {median} | {to_cli} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat", type=int, default=3, help="rounds per path (each tool's best kept; median)"
    )
    parser.add_argument("--large-mib", type=int, default=32, help="size of each large file")
    parser.add_argument("--large-files", type=int, default=4, help="number of large files")
    parser.add_argument("--small-files", type=int, default=1000, help="number of small files")
    parser.add_argument("--small-kib", type=int, default=16, help="size of each small file")
    parser.add_argument(
        "--threads", type=int, help="Ferry's threads (default: chosen from the manifest)"
    )
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark copy job")
    parser.add_argument("--only", choices=["large", "small"], help="measure one dataset only")
    parser.add_argument(
        "--path",
        action="append",
        choices=["file-file", "file-s3", "s3-s3"],
        help="measure this path only (repeatable; default: all)",
    )
    args = parser.parse_args(argv)

    datasets = [
        Dataset("large", args.large_files, args.large_mib * MiB),
        Dataset("small", args.small_files, args.small_kib * 1024),
    ]
    datasets = [d for d in datasets if args.only in (None, d.name)]
    work = Path(tempfile.mkdtemp(prefix="ferry-bench-"))
    port = processes.free_port()
    emulator.start_emulator(work, port)
    endpoint = emulator.endpoint_url(port)
    os.environ.update({**emulator.EMULATOR_ENVIRONMENT, "AWS_ENDPOINT_URL": endpoint})
    fs.configure(fs.S3Settings.from_environment(os.environ))
    s3 = boto3.client("s3", endpoint_url=endpoint)
    base = Baselines(endpoint)
    for note in base.notes():
        print(f"note: {note}", flush=True)
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
    measures: list[Measure] = []
    try:
        for dataset in datasets:
            measures += bench_dataset(dataset, work, s3, spark, args, base, Requests(endpoint))
    finally:
        if spark is not None:
            spark.stop()
        processes.stop_process(work, "aws")
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(table(measures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
