"""The Spark copy job on a local SparkSession: balancing, copying, retrying, reporting."""

import json
import os
import random
import re
from collections import Counter

import pytest

from emr_jobs.copy_files import balance, copy_bins, copy_manifest, main
from ferry.copying.copier import CopyTask, Manifest, copy_file
from ferry.copying.copy_records import recorded_batches
from ferry.copying.manifest import write_manifest
from ferry.copying.spark_report import build_report
from ferry.copying.spark_tasks import copy_bin, task_threads

pytestmark = pytest.mark.spark

GIB = 1024**3
SIZES = [0, 1, 4096, 70_001, 300_000, 1024 * 1024 + 3, 0, 17]


def make_files(root, sizes=SIZES):
    """Random source files in nested folders; a manifest copying them below ``root/dst``."""
    tasks = []
    for index, size in enumerate(sizes):
        relative = f"day={index % 3}/part/{index}.bin"
        source = root / "src" / relative
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_bytes(os.urandom(size))
        # Spelled out, not Path.as_uri(): that would percent-encode the "=" of Hive folders.
        tasks.append(CopyTask(f"file://{source}", f"file://{root / 'dst' / relative}", size))
    return Manifest("20261121T083000-test", tuple(tasks))


def path_of(uri):
    return uri.removeprefix("file://")


def read(uri):
    with open(path_of(uri), "rb") as file:
        return file.read()


def test_a_huge_file_gets_a_bin_of_its_own_and_the_rest_are_even():
    rng = random.Random(7)
    tiny = [
        CopyTask(f"s3://src/t{i}", f"s3://dst/t{i}", rng.randint(1024, 1024 * 1024))
        for i in range(200)
    ]
    tasks = [CopyTask("s3://src/huge", "s3://dst/huge", GIB), *tiny]

    bins = balance(tasks, 4)

    assert len(bins) == 4
    assert [bin_tasks for bin_tasks in bins if tasks[0] in bin_tasks] == [(tasks[0],)]
    totals = [
        sum(task.size for task in bin_tasks) for bin_tasks in bins if tasks[0] not in bin_tasks
    ]
    assert max(totals) - min(totals) <= max(task.size for task in tiny)
    assert Counter(task for bin_tasks in bins for task in bin_tasks) == Counter(tasks)
    shuffled = tasks[:]
    rng.shuffle(shuffled)
    assert balance(shuffled, 4) == bins


def test_empty_files_spread_out_and_bins_never_outnumber_files():
    empty = [CopyTask(f"file:///s/{i}", f"file:///d/{i}", 0) for i in range(1000)]
    assert sorted(len(bin_tasks) for bin_tasks in balance(empty, 4)) == [250, 250, 250, 250]
    assert [len(bin_tasks) for bin_tasks in balance(empty[:3], 8)] == [1, 1, 1]
    assert balance([], 4) == []


def test_files_are_copied_byte_for_byte(spark, tmp_path):
    manifest = make_files(tmp_path)

    report = copy_manifest(spark, manifest, tasks=3, chunk_size=64 * 1024)

    for task in manifest.tasks:
        assert read(task.target) == read(task.source)
    assert report["eventId"] == manifest.event_id
    assert (report["files"], report["copied"], report["failed"]) == (len(SIZES), len(SIZES), [])
    assert report["bytes"] == sum(SIZES)
    assert report["tasks"] == 3


@pytest.mark.parametrize("threads", [1, 4])
def test_a_bin_copied_on_threads_reports_every_file_in_order(tmp_path, threads):
    manifest = make_files(tmp_path)
    missing = CopyTask(f"file://{tmp_path}/src/gone.bin", f"file://{tmp_path}/dst/gone.bin", 3)
    tasks = (*manifest.tasks[:2], missing, *manifest.tasks[2:])

    results = list(copy_bin(tasks, threads=threads, attempts=1))

    assert [result.source for result in results] == [task.source for task in tasks]
    assert [result.ok for result in results] == [task != missing for task in tasks]
    for task in manifest.tasks:
        assert read(task.target) == read(task.source)


def test_each_task_copies_many_small_files_at_once_and_few_large_ones():
    small = Manifest("e", tuple(CopyTask(f"s{i}", f"t{i}", 16 * 1024) for i in range(1000)))
    large = Manifest("e", tuple(CopyTask(f"s{i}", f"t{i}", GIB) for i in range(4)))
    chunk = 8 * 1024 * 1024

    assert task_threads(small, chunk) > task_threads(large, chunk) > 1
    assert task_threads(small, chunk, configured=3) == task_threads(large, chunk, 3) == 3


def test_a_transient_failure_is_retried_for_that_file_only(spark, tmp_path):
    manifest = make_files(tmp_path)
    flaky = manifest.tasks[3]
    # The marker lives on disk: the copy function runs in a Spark worker process.
    marker = tmp_path / "failed-once"

    def copy_failing_once(task, chunk_size):
        if task == flaky and not marker.exists():
            marker.touch()
            raise OSError("connection reset by peer")
        copy_file(task, chunk_size)

    bins = balance(manifest.tasks, 2)
    results = copy_bins(spark, bins, copy=copy_failing_once, backoff_seconds=0.01)

    assert marker.exists()
    assert {result.source: result.attempts for result in results} == {
        task.source: 2 if task == flaky else 1 for task in manifest.tasks
    }
    for task in manifest.tasks:
        assert read(task.target) == read(task.source)
    report = build_report(manifest, results, len(bins), 0.0)
    assert report["failed"] == [] and report["copied"] == len(SIZES)
    assert report["bytes"] == sum(SIZES)


def test_a_missing_source_fails_that_file_and_the_job(spark, tmp_path):
    manifest = make_files(tmp_path)
    missing = manifest.tasks[2]
    os.remove(path_of(missing.source))
    manifest_file = tmp_path / "run" / "manifest.json"
    write_manifest(f"file://{manifest_file}", manifest, batch_files=2)
    report_file = tmp_path / "reports" / "nested" / "report.json"

    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "--manifest",
                f"file://{manifest_file}",
                "--report",
                f"file://{report_file}",
                "--retries",
                "2",
            ]
        )

    assert exit_info.value.code not in (0, None)
    report = json.loads(report_file.read_text())
    assert [(failure["source"], failure["attempts"]) for failure in report["failed"]] == [
        (missing.source, 2)
    ]
    assert missing.source in report["failed"][0]["error"]
    assert report["copied"] == len(SIZES) - 1
    assert report["bytes"] == sum(SIZES) - missing.size
    for task in manifest.tasks:
        if task != missing:
            assert read(task.target) == read(task.source)
    assert not os.path.exists(path_of(missing.target))
    # A job with a failed file records no batch as copied: Commit will not run.
    assert recorded_batches(f"file://{manifest_file}") == set()


def test_main_copies_a_manifest_and_reports_beside_it(spark, tmp_path, capsys):
    manifest = make_files(tmp_path)
    manifest_file = tmp_path / "run" / "manifest.json"
    write_manifest(f"file://{manifest_file}", manifest, batch_files=2)

    assert (
        main(["--manifest", f"file://{manifest_file}", "--tasks", "50", "--chunk-size-mib", "1"])
        == 0
    )

    for task in manifest.tasks:
        assert read(task.target) == read(task.source)
    report = json.loads((tmp_path / "run" / "copy-report.json").read_text())
    assert report["files"] == report["copied"] == len(SIZES)
    assert report["bytes"] == sum(SIZES) and report["failed"] == []
    assert report["tasks"] == len(SIZES)  # never more tasks than files
    assert report["durationSeconds"] >= 0
    assert f"copied {len(SIZES)} of {len(SIZES)} files" in capsys.readouterr().out
    batches = (len(SIZES) + 1) // 2
    assert recorded_batches(f"file://{manifest_file}") == set(range(batches))


def test_an_unreadable_manifest_is_one_clear_line(tmp_path):
    missing = f"file://{tmp_path}/nowhere/manifest.json"
    with pytest.raises(SystemExit, match=re.escape(f"cannot read manifest {missing}")):
        main(["--manifest", missing])


def test_a_rewrite_that_fails_is_reported_like_a_copy_and_no_batch_is_recorded(spark, tmp_path):
    """A manifest's rewrites (an Iceberg table's manifests) run as Spark tasks after the
    copies; one whose source manifest is gone fails after its retries, named in the report,
    and the job records no batch, so Commit will not run."""
    manifest = make_files(tmp_path, [5, 7])
    manifest_file = tmp_path / "run" / "manifest.json"
    write_manifest(f"file://{manifest_file}", manifest, batch_files=1)
    batches = json.loads(manifest_file.read_text())
    missing = f"file://{tmp_path}/src/metadata/gone-m0.avro"
    batches[1]["rewrites"] = {
        "context": {
            "mover": {"source": f"file://{tmp_path}/src", "replica": f"file://{tmp_path}/dst"},
            "formatVersion": 2,
            "metadata": f"file://{tmp_path}/src/metadata/00001.metadata.json",
        },
        "items": [[missing, f"file://{tmp_path}/dst/metadata/gone-m0-ferry.avro", 0, 1, 0, 99]],
    }
    manifest_file.write_text(json.dumps(batches))

    with pytest.raises(SystemExit) as exit_info:
        main(["--manifest", f"file://{manifest_file}", "--retries", "2"])

    assert exit_info.value.code not in (0, None)
    report = json.loads((tmp_path / "run" / "copy-report.json").read_text())
    assert report["copied"] == 2 and (report["rewrites"], report["rewritten"]) == (1, 0)
    assert [(failure["source"], failure["attempts"]) for failure in report["failed"]] == [
        (missing, 2)
    ]
    assert "gone-m0.avro" in report["failed"][0]["error"]
    assert recorded_batches(f"file://{manifest_file}") == set()


def test_the_job_leaves_out_a_resumed_runs_files_already_copied_whole(tmp_path):
    # The failed attempt copied a whole and b part-way (b's target is short): a resumed run's
    # manifest lists a as reusable; the job copies b and c only.
    from emr_jobs.copy_files import read_manifest
    from ferry.copying.manifest import CopyRoot, ManifestWriter
    from ferry.storage import fs

    source, target = tmp_path / "src", tmp_path / "dst" / "ferry-e1"
    source.mkdir()
    target.mkdir(parents=True)
    for name in "abc":
        (source / name).write_bytes(os.urandom(100))
    (target / "a").write_bytes((source / "a").read_bytes())
    (target / "b").write_bytes(b"short")
    entries = fs.list_files(fs.local_uri(source))
    root = CopyRoot(fs.local_uri(source), fs.local_uri(target))
    attempt = {
        fs.join(root.target, entry.uri.rsplit("/", 1)[1]): (entry.uri, entry.size, entry.marker)
        for entry in entries
        if not entry.uri.endswith("/c")
    }
    uri = fs.local_uri(tmp_path / "manifest.json")
    writer = ManifestWriter(uri, "ferry-e1", 1000, reusable=attempt)
    writer.add(root, entries)
    writer.close()
    manifest, _ = read_manifest(uri)
    assert sorted(task.target.rsplit("/", 1)[1] for task in manifest.tasks) == ["b", "c"]
