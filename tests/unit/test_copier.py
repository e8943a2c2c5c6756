"""The inline copier: streaming, one request per small object to S3, verification, failure."""

import hashlib
import os
import threading
from dataclasses import replace
from typing import NamedTuple

import boto3
import pytest
from moto import mock_aws

from ferry.copying import concurrency
from ferry.copying.copier import CopyTask, InlineCopier, Manifest, verify_all
from ferry.copying.manifest import batch_tasks, read_batches, read_manifest, write_manifest
from ferry.core import faults
from ferry.core.errors import (
    CopyError,
    ReplicationInterruptedError,
    TargetNotWritableError,
    VerificationError,
)
from ferry.storage import file_systems, fs
from ferry.storage.s3_objects import put_file
from tests.helpers import in_process_aws


def make_files(root, sizes):
    tasks = []
    for index, size in enumerate(sizes):
        source = root / "src" / f"d{index % 3}" / f"f{index}.bin"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_bytes(os.urandom(size))
        tasks.append(
            CopyTask(
                source.as_uri(), (root / "dst" / f"d{index % 3}" / f"f{index}.bin").as_uri(), size
            )
        )
    return Manifest("e1", tuple(tasks))


def test_files_are_copied_byte_for_byte_in_small_chunks(tmp_path):
    manifest = make_files(tmp_path, [0, 1, 4096, 70_001, 3 * 1024 * 1024 + 5])
    advanced = []
    report = InlineCopier(threads=3, chunk_size=64 * 1024).copy(manifest, advanced.append)
    assert report.files == 5 and report.bytes == manifest.total_bytes
    assert sum(advanced) == manifest.total_bytes
    assert max(advanced) <= 64 * 1024  # streamed, never a whole file at once
    for task in manifest.tasks:
        assert (tmp_path / "dst" / task.target.split("/dst/")[1]).read_bytes() == (
            tmp_path / "src" / task.source.split("/src/")[1]
        ).read_bytes()
    verify_all(manifest.tasks)


def test_a_missing_source_file_is_a_copy_error(tmp_path):
    manifest = make_files(tmp_path, [10, 20])
    os.remove(manifest.tasks[1].source.removeprefix("file://"))
    with pytest.raises(CopyError, match="cannot read source file .*f1.bin"):
        InlineCopier(threads=2).copy(manifest)


def test_an_unwritable_target_is_named(tmp_path):
    manifest = make_files(tmp_path, [10])
    (tmp_path / "dst").write_text("a file where a folder should be")
    with pytest.raises(TargetNotWritableError, match="cannot write .*dst/d0/f0.bin"):
        InlineCopier().copy(manifest)


def test_a_size_mismatch_fails_verification(tmp_path):
    manifest = make_files(tmp_path, [10])
    task = manifest.tasks[0]
    InlineCopier().copy(manifest)
    with pytest.raises(VerificationError, match="expected 11 bytes, found 10 bytes"):
        verify_all([CopyTask(task.source, task.target, 11)])


def test_manifest_round_trips_through_json(tmp_path):
    manifest = make_files(tmp_path, [1, 2, 3, 4, 5])
    uri = (tmp_path / "run" / "manifest.json").as_uri()
    write_manifest(uri, manifest, batch_files=2)
    assert read_manifest(uri) == manifest
    assert [len(batch_tasks(b)) for b in read_batches(uri)] == [2, 2, 1]


# -- to S3: one request per small file, verified by what S3 answers -------------------------

MiB = 1024 * 1024


@pytest.fixture
def s3(monkeypatch):
    """moto in-process, two buckets, and Ferry's file systems pointed at it."""
    in_process_aws(monkeypatch)
    with mock_aws():
        previous = fs.set_default(file_systems.FileSystems(file_systems.S3Settings(region="us-east-1")))
        try:
            client = boto3.client("s3", region_name="us-east-1")
            for bucket in ("onprem-sales", "dr-sales"):
                client.create_bucket(Bucket=bucket)
            yield client
        finally:
            fs.set_default(previous)


def requests_sent(bucket="dr-sales"):
    """Every HTTP request Ferry's S3 client for ``bucket``'s region sends from now on."""
    sent = []
    client = fs.default().s3_client(bucket)  # the copier's client: cached by region and pool
    for known in ("onprem-sales", "dr-sales"):
        fs.default().region_of(known)  # looked up once per bucket and process, not per object

    def record(request, **_):
        kind = request.method + (" copy" if "x-amz-copy-source" in request.headers else "")
        sent.append(kind)

    client.meta.events.register("before-send.s3", record)
    return sent


def planned(root, sizes):
    """Local source files, listed as Plan lists them (size and change marker), into S3."""
    manifest = make_files(root, sizes)
    listed = {entry.uri: entry for entry in fs.list_files(fs.local_uri(root / "src"))}
    return Manifest(
        "e1",
        tuple(
            CopyTask(
                task.source,
                "s3://dr-sales/e1/" + task.target.split("/dst/")[1],
                task.size,
                listed[fs.local_uri(task.source.removeprefix("file://"))].marker,
            )
            for task in manifest.tasks
        ),
    )


def s3_bytes(s3, uri):
    bucket, key = uri.removeprefix("s3://").split("/", 1)
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def s3_keys(s3, bucket="dr-sales"):
    return [item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


def local_bytes(task):
    with open(task.source.removeprefix("file://"), "rb") as handle:
        return handle.read()


def test_small_files_reach_s3_with_one_request_each(tmp_path, s3):
    manifest = planned(tmp_path, [0, 1, 4096, 70_001, 3 * MiB])
    sent = requests_sent()
    advanced = []

    report = InlineCopier(chunk_size=4 * MiB).copy(manifest, advanced.append)

    assert report.files == 5 and sum(advanced) == manifest.total_bytes
    for task in manifest.tasks:
        assert s3_bytes(s3, task.target) == local_bytes(task)
    assert sent == ["PUT"] * 5  # one PutObject each: no HEAD, no multipart upload


def test_small_uploads_are_one_request_each_and_a_refused_one_is_named(tmp_path, s3):
    manifest = planned(tmp_path, [10, 20, 30])
    sent = requests_sent()

    InlineCopier().copy(manifest)

    assert sent == ["PUT"] * 3
    for task in manifest.tasks:
        assert s3_bytes(s3, task.target) == local_bytes(task)

    [task] = planned(tmp_path / "again", [10]).tasks
    missing = replace(task, target=task.target.replace("dr-sales", "dr-missing"))
    with pytest.raises(TargetNotWritableError, match=r"cannot write s3://dr-missing/.*bucket"):
        InlineCopier().copy(Manifest("e1", (missing,)))


def test_a_large_file_goes_up_in_parts_checked_one_by_one(tmp_path, s3, monkeypatch):
    monkeypatch.setattr(concurrency, "ALWAYS_STREAMED", 8 * MiB)  # parts above 8 MiB, not 64
    manifest = planned(tmp_path, [13 * MiB])
    sent = requests_sent()

    # 32 threads may hold 8 MiB each (ferry.copying.concurrency): 13 MiB goes in parts of 5 MiB.
    InlineCopier(threads=32, chunk_size=5 * MiB).copy(manifest)

    [task] = manifest.tasks
    assert s3_bytes(s3, task.target) == local_bytes(task)
    head = s3.head_object(Bucket="dr-sales", Key=task.target.split("/", 3)[3])
    assert head["ETag"].strip('"').endswith("-3")
    # Create, three parts, complete: the completed ETag is checked, no HEAD needed.
    assert sorted(sent) == ["POST", "POST", "PUT", "PUT", "PUT"]


@pytest.mark.parametrize("action", ["corrupt", "truncate"], ids=["corrupted", "short"])
def test_a_corrupted_or_short_body_is_caught_and_nothing_stays(tmp_path, s3, action):
    # S3 itself refuses such a body (its MD5 is not the Content-MD5 sent); moto stores it,
    # and the ETag it answers with gives it away.
    manifest = planned(tmp_path, [100, 200, 300])

    with faults.armed(faults.Fault("copy.body", action=action, skip=1)):
        with pytest.raises(VerificationError, match="the bytes sent have MD5"):
            InlineCopier(threads=1).copy(manifest)

    assert manifest.tasks[1].target.split("/", 3)[3] not in s3_keys(s3)


@pytest.mark.parametrize("action", ["corrupt", "truncate"], ids=["corrupted", "short"])
def test_a_corrupted_or_short_part_fails_the_upload_and_leaves_nothing(
    tmp_path, s3, monkeypatch, action
):
    monkeypatch.setattr(concurrency, "ALWAYS_STREAMED", 8 * MiB)  # parts above 8 MiB, not 64
    manifest = planned(tmp_path, [12 * MiB])

    with faults.armed(faults.Fault("copy.body", action=action, skip=1)):
        with pytest.raises(VerificationError, match="part [0-9] was stored with ETag"):
            InlineCopier(threads=32, chunk_size=5 * MiB).copy(manifest)

    assert s3_keys(s3) == []
    assert "Uploads" not in s3.list_multipart_uploads(Bucket="dr-sales")


def test_a_source_rewritten_after_planning_is_refused(tmp_path, s3):
    manifest = planned(tmp_path, [100, 200])
    changed = manifest.tasks[1]
    path = changed.source.removeprefix("file://")
    with open(path, "r+b") as handle:  # same size, other bytes, a later modification time
        handle.write(b"x" * 200)
    os.utime(path, ns=(int(changed.marker) + 10**9, int(changed.marker) + 10**9))

    with pytest.raises(VerificationError, match=f"{changed.source}: the source changed since"):
        InlineCopier(threads=1).copy(manifest)

    assert changed.target.split("/", 3)[3] not in s3_keys(s3)


def test_a_source_cut_short_after_planning_is_refused(tmp_path, s3):
    manifest = planned(tmp_path, [100, 6 * MiB])
    for task in manifest.tasks:
        os.truncate(task.source.removeprefix("file://"), task.size - 1)

    for task in manifest.tasks:
        with pytest.raises(VerificationError, match=f"expected {task.size} bytes, read"):
            InlineCopier(threads=32, chunk_size=5 * MiB).copy(Manifest("e1", (task,)))

    assert s3_keys(s3) == []
    assert "Uploads" not in s3.list_multipart_uploads(Bucket="dr-sales")


# -- large local files: one streamed PutObject each, up to 64 MiB or as many as the threads ---


@pytest.fixture
def streamed(monkeypatch):
    """A copier whose memory bound (16 MiB on 2 threads) holds no file over 8 MiB whole,
    and which streams a file alone up to 10 MiB (64 MiB in use)."""
    monkeypatch.setattr(concurrency, "IN_FLIGHT_BYTES", 16 * MiB)
    monkeypatch.setattr(concurrency, "ALWAYS_STREAMED", 10 * MiB)
    return InlineCopier(threads=2, chunk_size=5 * MiB)


def test_large_files_enough_for_every_thread_stream_in_one_request_each(tmp_path, s3, streamed):
    manifest = planned(tmp_path, [9 * MiB, 9 * MiB + 3])
    sent = requests_sent()
    advanced = []

    streamed.copy(manifest, advanced.append)

    assert sent == ["PUT", "PUT"]  # no multipart upload, no HEAD
    assert sum(advanced) == manifest.total_bytes
    for task in manifest.tasks:
        data = local_bytes(task)
        assert s3_bytes(s3, task.target) == data
        head = s3.head_object(Bucket="dr-sales", Key=task.target.split("/", 3)[3])
        assert head["ETag"].strip('"') == hashlib.md5(data).hexdigest()  # one part


def test_a_file_alone_streams_in_one_request_up_to_the_size_s3a_sends_in_one(
    tmp_path, s3, streamed
):
    manifest = planned(tmp_path, [9 * MiB])
    sent = requests_sent()

    streamed.copy(manifest)

    [task] = manifest.tasks
    assert s3_bytes(s3, task.target) == local_bytes(task)
    assert sent == ["PUT"]  # not held whole (over 8 MiB), not in parts either


def test_fewer_larger_files_than_threads_go_in_parts(tmp_path, s3, streamed):
    manifest = planned(tmp_path, [11 * MiB])
    sent = requests_sent()

    streamed.copy(manifest)

    [task] = manifest.tasks
    assert s3_bytes(s3, task.target) == local_bytes(task)
    # Create, a part per thread, complete: one file keeps both threads busy.
    assert sorted(sent) == ["POST", "POST", "PUT", "PUT"]


@pytest.mark.parametrize(
    "action, caught",
    [
        ("corrupt", "the bytes sent have MD5"),
        ("truncate", f"the body ended after {9 * MiB - 1} of the {9 * MiB} bytes declared"),
    ],
    ids=["corrupted", "short"],
)
def test_a_corrupted_or_short_streamed_body_is_caught_and_nothing_stays(
    tmp_path, s3, streamed, action, caught
):
    manifest = planned(tmp_path, [9 * MiB, 9 * MiB])

    with faults.armed(faults.Fault("copy.body", action=action, times=99)):
        with pytest.raises(VerificationError, match=caught):
            streamed.copy(manifest)

    assert s3_keys(s3) == []


def test_a_streamed_source_rewritten_after_planning_is_refused_before_it_is_sent(
    tmp_path, s3, streamed
):
    manifest = planned(tmp_path, [9 * MiB, 9 * MiB])
    changed = manifest.tasks[1]
    path = changed.source.removeprefix("file://")
    os.utime(path, ns=(int(changed.marker) + 10**9, int(changed.marker) + 10**9))
    sent = requests_sent()

    with pytest.raises(VerificationError, match=f"{changed.source}: the source changed since"):
        streamed.copy(Manifest("e1", (changed, changed)))

    assert sent == [] and s3_keys(s3) == []


def stream(tmp_path, data, size=None):
    """``put_file`` of ``data`` (through a file) as declared ``size`` bytes, to dr-sales."""
    path = tmp_path / "streamed.bin"
    path.write_bytes(data)
    digest = hashlib.md5(data)
    client = fs.default().s3_client("dr-sales")
    uri = "s3://dr-sales/e1/streamed.bin"

    def put(before_sending=None, progress=None, cancelled=None):
        with open(path, "rb") as handle:
            if before_sending is not None:
                before_sending(path)
            put_file(
                client,
                uri,
                handle,
                size or len(data),
                digest,
                progress=progress,
                cancelled=cancelled,
            )

    return put


def test_a_source_that_shrinks_while_it_is_streamed_is_caught_and_nothing_is_stored(tmp_path, s3):
    put = stream(tmp_path, os.urandom(3 * MiB))

    with pytest.raises(VerificationError, match=f"ended after {2 * MiB} of the {3 * MiB} bytes"):
        put(before_sending=lambda path: os.truncate(path, 2 * MiB))

    assert s3_keys(s3) == []


def test_a_source_rewritten_while_it_is_streamed_is_caught_by_its_md5(tmp_path, s3):
    # S3 refuses the body (BadDigest: not the Content-MD5 sent); moto stores it, and its
    # ETag gives it away (the copier then removes it, as for any upload found wrong).
    put = stream(tmp_path, os.urandom(3 * MiB))

    with pytest.raises(VerificationError, match="the object was stored with ETag"):
        put(before_sending=lambda path: path.write_bytes(os.urandom(3 * MiB)))


def test_a_stopped_copy_stops_a_streamed_body_and_nothing_is_stored(tmp_path, s3):
    put = stream(tmp_path, os.urandom(3 * MiB))
    stopped = threading.Event()
    stopped.set()

    with pytest.raises(ReplicationInterruptedError, match="copying to s3://dr-sales/e1/"):
        put(cancelled=stopped)

    assert s3_keys(s3) == []


class Answer(NamedTuple):
    """An HTTP answer as a botocore ``before-send`` hook gives one (a store's refusal)."""

    status_code: int
    headers: dict
    content: bytes


def test_a_streamed_body_refused_once_goes_again_whole(tmp_path, s3):
    data = os.urandom(3 * MiB)
    put = stream(tmp_path, data)
    client = fs.default().s3_client("dr-sales")
    answers = []

    def refuse_once(request, **_):
        if answers:
            return None  # the store answers
        request.body.read(MiB)  # a megabyte went before the answer came
        answers.append(503)
        return Answer(503, {}, b"")

    client.meta.events.register_first("before-send.s3.PutObject", refuse_once)
    through_client = []
    client.meta.events.register("before-call.s3.PutObject", lambda **_: through_client.append(1))
    advanced = []

    put(progress=advanced.append)

    assert answers == [503] and through_client == [1]
    assert s3_bytes(s3, "s3://dr-sales/e1/streamed.bin") == data  # from the first byte
    assert sum(advanced) == len(data)  # each byte counted once


def test_large_local_files_stream_up_to_64_mib_and_up_to_256_mib_when_enough_for_every_thread():
    from ferry.copying.concurrency import uploads

    def how(size, sizes, threads=8):
        chosen = uploads(sizes, threads, 8 * MiB)  # 8 threads hold 32 MiB each
        return (
            "whole" if size <= chosen.whole else "streamed" if size <= chosen.streamed else "parts"
        )

    # Alone, or with too few others to give every thread one: streamed up to 64 MiB.
    assert how(32 * MiB, [32 * MiB]) == "whole"
    assert how(64 * MiB, [64 * MiB]) == "streamed"
    assert how(64 * MiB + 1, [64 * MiB + 1]) == "parts"
    assert how(100 * MiB, [100 * MiB] * 7 + [MiB] * 100) == "parts"
    # As many as the threads: streamed up to 256 MiB; files held whole do not count.
    assert how(100 * MiB, [100 * MiB] * 8) == "streamed"
    assert how(256 * MiB, [256 * MiB] * 8) == "streamed"
    assert how(256 * MiB + 1, [256 * MiB + 1] * 8) == "parts"
    assert how(100 * MiB, [100 * MiB] + [32 * MiB] * 7) == "parts"


def test_s3_to_s3_inline_reads_the_planned_version_only(s3):
    etags = {}
    for name in ("a", "b"):
        etags[name] = s3.put_object(Bucket="onprem-sales", Key=f"t/{name}", Body=name * 50)["ETag"]
    tasks = [
        CopyTask(f"s3://onprem-sales/t/{name}", f"s3://dr-sales/e1/{name}", 50, etags[name])
        for name in ("a", "b")
    ]
    sent = requests_sent()

    InlineCopier().copy(Manifest("e1", (tasks[0],)))

    assert s3_bytes(s3, tasks[0].target) == b"a" * 50
    assert sorted(sent) == ["GET", "PUT"]  # a pinned GetObject, a PutObject: nothing else
    s3.put_object(Bucket="onprem-sales", Key="t/b", Body=b"B" * 50)  # replaced since planning
    with pytest.raises(VerificationError, match="the source changed since it was planned"):
        InlineCopier().copy(Manifest("e1", (tasks[1],)))
    assert s3_keys(s3) == ["e1/a"]


def test_parts_keep_every_thread_busy_within_s3s_limits_and_the_memory_bound():
    from ferry.copying.concurrency import IN_FLIGHT_BYTES, uploads

    def part_size(size, threads, chunk, sizes=None):
        return uploads(sizes or [size], threads, chunk).part_size(size, chunk)

    # One file of 64 MiB (from S3: a local one streams) on 8 threads: a part per thread.
    assert part_size(64 * MiB, 8, 8 * MiB) == 8 * MiB
    # Four of them: each has two threads to itself, so two parts each.
    assert part_size(64 * MiB, 8, 8 * MiB, [64 * MiB] * 4) == 32 * MiB
    # 1 GiB on 8 threads: one part per thread, as long as 8 of them fit in memory.
    assert part_size(1024 * MiB, 8, 8 * MiB) == IN_FLIGHT_BYTES // 8
    # 1 TiB: never more than 10,000 parts, whatever the memory bound says.
    assert part_size(1024**4, 8, 8 * MiB) * 10_000 >= 1024**4
    # Never under S3's 5 MiB, whatever the chunk size.
    assert part_size(6 * MiB, 8, 1 * MiB) == 5 * MiB
    # Sent whole: the chunk size with many threads, a thread's share of the bound with few.
    assert uploads([], 32, 8 * MiB).whole == 8 * MiB
    assert uploads([], 8, 8 * MiB).whole == IN_FLIGHT_BYTES // 8


def test_a_local_file_appears_at_its_target_only_whole(tmp_path):
    # A resumed run reuses a file at its target with the planned size: a copy stopped
    # part-way must never leave one there, even one that happens to have that size.
    source = tmp_path / "src" / "big.bin"
    source.parent.mkdir()
    source.write_bytes(os.urandom(4 * 64 * 1024))
    target = tmp_path / "dst" / "big.bin"
    task = CopyTask(fs.local_uri(source), fs.local_uri(target), source.stat().st_size)
    copier = InlineCopier(threads=1, chunk_size=64 * 1024)
    with faults.armed(faults.Fault("copy.file", error="CopyError", skip=2)):
        with pytest.raises(faults.InjectedFault):
            copier.copy(Manifest("ferry-e1", (task,)))
    assert not target.exists()
    assert list(target.parent.iterdir()) == [], "the partial file was removed"
    copier.copy(Manifest("ferry-e1", (task,)))
    assert target.read_bytes() == source.read_bytes()
    assert sorted(p.name for p in target.parent.iterdir()) == ["big.bin"]
