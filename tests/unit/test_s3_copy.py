"""The S3 server-side copier against moto in-process: bytes at the target, failures, retries."""

import gc
import os
import weakref

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.retries.standard import ExponentialBackoff
from moto import mock_aws

from ferry.copying.copier import CopyTask, Manifest
from ferry.copying.s3_copy import S3ServerSideCopier
from ferry.core.errors import CopyError, TargetNotWritableError, VerificationError
from ferry.storage.aws import AwsClients
from tests.helpers import in_process_aws

MiB = 1024 * 1024
BUCKETS = ("onprem-sales", "onprem-logs", "dr-sales", "dr-logs")


@pytest.fixture
def s3(monkeypatch, request):
    """A real boto3 S3 client on moto in-process, with the four buckets created.

    Parametrized ``ferry``, it is the client Ferry builds (``AwsClients``), with its retries.
    """
    in_process_aws(monkeypatch)
    with mock_aws():
        if getattr(request, "param", "client") == "ferry":
            client = AwsClients().client("s3", "us-east-1", connections=32)
        else:
            client = boto3.client(
                "s3", region_name="us-east-1", config=Config(max_pool_connections=32)
            )
        for bucket in BUCKETS:
            client.create_bucket(Bucket=bucket)
        yield client


def split(uri):
    bucket, _, key = uri.split("://", 1)[1].partition("/")
    return bucket, key


def put(s3, uri, data, **extra):
    bucket, key = split(uri)
    s3.put_object(Bucket=bucket, Key=key, Body=data, **extra)


def read(s3, uri):
    bucket, key = split(uri)
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def source_objects(s3, sizes, bucket="onprem-sales", scheme="s3", planned=True):
    """One source object per size; returns tasks into the matching dr- bucket's snapshot.

    ``planned``: each task carries the ETag a listing gave, as the manifest of a plan does.
    """
    tasks = []
    for index, size in enumerate(sizes):
        key = f"sales/orders/dt=2026-11-2{index % 3}/part-{index:05d}.parquet"
        etag = s3.put_object(Bucket=bucket, Key=key, Body=os.urandom(size))["ETag"]
        target = f"{scheme}://dr-{bucket.removeprefix('onprem-')}/replica/orders/e1/{key}"
        tasks.append(
            CopyTask(f"{scheme}://{bucket}/{key}", target, size, etag if planned else None)
        )
    return tasks


def requests_sent(s3):
    """Every HTTP request the client sends from now on, by method (``PUT copy``: a copy)."""
    sent = []

    def record(request, **_):
        sent.append(request.method + (" copy" if "x-amz-copy-source" in request.headers else ""))

    s3.meta.events.register("before-send.s3", record)
    return sent


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def keys(s3, bucket="dr-sales"):
    return [item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


class _Raw:
    def __init__(self, body):
        self.body = body

    def stream(self, **_):
        yield self.body


def throttle(times):
    """A before-send hook that answers like a throttled S3 ``times`` times (503 SlowDown)."""
    calls = []

    def hook(request, **_):
        calls.append(1)
        if len(calls) <= times:
            body = (
                b"<Error><Code>SlowDown</Code>"
                b"<Message>Please reduce your request rate.</Message></Error>"
            )
            return AWSResponse(request.url, 503, {}, _Raw(body))
        return None

    hook.calls = calls
    return hook


@pytest.mark.parametrize("s3", ["client", "ferry"], indirect=True)
def test_a_batch_across_buckets_is_copied_byte_for_byte(s3):
    tasks = source_objects(s3, [0, 1, 4096, 70_001], "onprem-sales")
    tasks += source_objects(s3, [MiB + 5, 17], "onprem-logs", scheme="s3a")
    # Hive escapes partition values in paths; '%3A', '?' and '#' are part of the key.
    odd = "s3n://onprem-logs/logs/ts=2026-11-21 08%3A30/x?y#z.txt"
    put(s3, odd, b"odd key")
    tasks.append(CopyTask(odd, "s3n://dr-logs/replica/e1/ts=2026-11-21 08%3A30/x?y#z.txt", 7))
    manifest = Manifest("e1", tuple(tasks))
    advanced = []

    report = S3ServerSideCopier(s3, threads=3).copy(manifest, advanced.append)

    assert report.files == 7 and report.bytes == manifest.total_bytes == MiB + 74_127
    assert sum(advanced) == manifest.total_bytes
    for task in tasks:
        assert read(s3, task.target) == read(s3, task.source)


def test_a_large_object_is_copied_in_parts_with_its_metadata(s3):
    source = "s3://onprem-sales/big/part-00000.parquet"
    data = os.urandom(13 * MiB)
    put(s3, source, data, ContentType="application/x-parquet", Metadata={"writer": "hive"})
    target = "s3://dr-sales/replica/e1/big/part-00000.parquet"
    advanced = []

    copier = S3ServerSideCopier(s3, multipart_threshold=6 * MiB, part_size=5 * MiB)
    copier.copy(Manifest("e1", (CopyTask(source, target, len(data)),)), advanced.append)

    head = s3.head_object(Bucket="dr-sales", Key="replica/e1/big/part-00000.parquet")
    assert head["ETag"].strip('"').endswith("-3")
    assert head["ContentType"] == "application/x-parquet" and head["Metadata"] == {"writer": "hive"}
    assert read(s3, target) == data
    assert sorted(advanced) == [3 * MiB, 5 * MiB, 5 * MiB]


@pytest.mark.parametrize("s3", ["client", "ferry"], indirect=True)
def test_a_missing_source_is_named_and_the_rest_of_the_batch_is_copied(s3):
    tasks = source_objects(s3, [10, 20, 30])
    missing = CopyTask("s3://onprem-sales/sales/gone.parquet", "s3://dr-sales/e1/gone.parquet", 5)
    manifest = Manifest("e1", (tasks[0], missing, *tasks[1:]))

    with pytest.raises(
        CopyError, match="cannot read source file s3://onprem-sales/sales/gone.parquet"
    ):
        S3ServerSideCopier(s3, threads=2).copy(manifest)

    for task in tasks:
        assert read(s3, task.target) == read(s3, task.source)


@pytest.mark.parametrize("s3", ["client", "ferry"], indirect=True)
@pytest.mark.parametrize("size", [10, 7 * MiB], ids=["copy-object", "multipart"])
def test_a_missing_target_bucket_is_not_writable(s3, size):
    put(s3, "s3://onprem-sales/a.bin", os.urandom(size))
    task = CopyTask("s3://onprem-sales/a.bin", "s3://no-such-bucket/e1/a.bin", size)
    copier = S3ServerSideCopier(s3, multipart_threshold=6 * MiB, part_size=5 * MiB)

    with pytest.raises(
        TargetNotWritableError, match="cannot write s3://no-such-bucket/e1/a.bin: NoSuchBucket"
    ):
        copier.copy(Manifest("e1", (task,)))


def test_a_failed_multipart_copy_leaves_no_upload_behind(s3):
    source = "s3://onprem-sales/big.bin"
    put(s3, source, os.urandom(11 * MiB))
    other_client = boto3.client("s3", region_name="us-east-1")

    def source_vanishes(**_):
        other_client.delete_object(Bucket="onprem-sales", Key="big.bin")

    s3.meta.events.register("before-call.s3.UploadPartCopy", source_vanishes)
    copier = S3ServerSideCopier(s3, multipart_threshold=6 * MiB, part_size=5 * MiB)

    with pytest.raises(CopyError, match="cannot read source file s3://onprem-sales/big.bin"):
        copier.copy(Manifest("e1", (CopyTask(source, "s3://dr-sales/e1/big.bin", 11 * MiB),)))

    assert "Uploads" not in s3.list_multipart_uploads(Bucket="dr-sales")
    assert "Contents" not in s3.list_objects_v2(Bucket="dr-sales")


@pytest.mark.parametrize("s3", ["ferry"], indirect=True)
def test_a_throttled_copy_is_retried(s3, monkeypatch):
    # By the client (ferry.storage.aws: botocore's standard retries), not by the copier.
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda *_: 0)  # no waiting here
    tasks = source_objects(s3, [100, 200])
    hook = throttle(times=1)
    s3.meta.events.register("before-send.s3.CopyObject", hook)

    S3ServerSideCopier(s3).copy(Manifest("e1", tuple(tasks)))

    for task in tasks:
        assert read(s3, task.target) == read(s3, task.source)
    assert len(hook.calls) == 3  # two objects, one of them twice


@pytest.mark.parametrize("s3", ["ferry"], indirect=True)
def test_throttling_that_outlasts_the_attempts_fails_the_copy(s3, monkeypatch):
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda *_: 0)  # no waiting here
    tasks = source_objects(s3, [100])
    s3.meta.events.register("before-send.s3.CopyObject", throttle(times=99))

    with pytest.raises(CopyError, match=f"copying {tasks[0].source} to .* failed: SlowDown"):
        S3ServerSideCopier(s3).copy(Manifest("e1", tuple(tasks)))


@pytest.mark.parametrize("s3", ["client", "ferry"], indirect=True)
def test_a_planned_small_object_costs_exactly_one_copy_request(s3):
    tasks = source_objects(s3, [0, 1, 4096, 70_001])
    sent = requests_sent(s3)
    through_client = []
    s3.meta.events.register("before-call.s3.CopyObject", lambda **_: through_client.append(1))

    S3ServerSideCopier(s3).copy(Manifest("e1", tuple(tasks)))

    assert sent == ["PUT copy"] * 4  # no HEAD of the source, none of the target
    assert len(through_client) == 4
    for task in tasks:
        assert read(s3, task.target) == read(s3, task.source)


@pytest.mark.parametrize("s3", ["client", "ferry"], indirect=True)
def test_a_source_replaced_after_planning_is_refused_and_its_copy_removed(s3):
    # S3 refuses the pinned CopyObject (412). moto ignores CopySourceIfMatch and copies the
    # new version: the copy's ETag, which is not the planned one, gives it away.
    tasks = source_objects(s3, [100, 200])
    put(s3, tasks[1].source, os.urandom(200))  # same size, other bytes

    with pytest.raises(
        VerificationError, match=f"{tasks[1].source}: the source changed since it was planned"
    ):
        S3ServerSideCopier(s3, threads=1).copy(Manifest("e1", tuple(tasks)))

    assert keys(s3) == [tasks[0].target.split("/", 3)[3]]
    assert read(s3, tasks[0].target) == read(s3, tasks[0].source)


@pytest.mark.parametrize("s3", ["client", "ferry"], indirect=True)
def test_a_source_deleted_after_planning_is_named(s3):
    (task,) = source_objects(s3, [100])
    bucket, key = split(task.source)
    s3.delete_object(Bucket=bucket, Key=key)

    with pytest.raises(CopyError, match=f"cannot read source file {task.source}: NoSuchKey"):
        S3ServerSideCopier(s3).copy(Manifest("e1", (task,)))
    assert keys(s3) == []


@pytest.mark.parametrize("s3", ["client", "ferry"], indirect=True)
def test_a_source_uploaded_in_parts_is_one_copy_pinned_to_its_planned_etag(s3):
    # Its ETag (ending in -2) is not the MD5 a whole copy gets, so the ETags cannot be
    # compared: the pin, which S3 enforces (moto does not), is the proof. What can be
    # checked here is that the one request carries it.
    bucket, key = "onprem-sales", "big/part-00000.parquet"
    data = os.urandom(6 * MiB)
    upload = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts = [
        {"PartNumber": n, "ETag": s3.upload_part(
            Bucket=bucket, Key=key, UploadId=upload, PartNumber=n, Body=chunk
        )["ETag"]}
        for n, chunk in enumerate([data[: 5 * MiB], data[5 * MiB :]], start=1)
    ]  # fmt: skip
    etag = s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": parts}
    )["ETag"]
    assert etag.strip('"').endswith("-2")
    task = CopyTask(f"s3://{bucket}/{key}", "s3://dr-sales/e1/big.parquet", len(data), etag)
    pins = []
    s3.meta.events.register(
        "before-send.s3.CopyObject",
        lambda request, **_: pins.append(_text(request.headers["x-amz-copy-source-if-match"])),
    )
    sent = requests_sent(s3)

    S3ServerSideCopier(s3).copy(Manifest("e1", (task,)))

    assert sent == ["PUT copy"] and pins == [etag]
    assert read(s3, task.target) == data


def test_a_source_replaced_during_the_copy_fails_without_retry(s3):
    # moto does not enforce CopySourceIfMatch; this is the answer S3 gives when the source's
    # ETag no longer matches the one planned.
    tasks = source_objects(s3, [100])
    calls = []

    def precondition_failed(**_):
        calls.append(1)
        raise ClientError(
            {
                "Error": {
                    "Code": "PreconditionFailed",
                    "Message": "At least one of the pre-conditions you specified did not hold",
                },
                "ResponseMetadata": {"HTTPStatusCode": 412},
            },
            "CopyObject",
        )

    s3.meta.events.register("before-call.s3.CopyObject", precondition_failed)

    with pytest.raises(
        VerificationError, match=f"source file {tasks[0].source} changed since it was planned"
    ):
        S3ServerSideCopier(s3).copy(Manifest("e1", tuple(tasks)))
    assert len(calls) == 1


def test_a_source_whose_size_changed_since_listing_is_not_copied(s3):
    # A manifest without ETags (an older Ferry's): the source is read with a HEAD first.
    (task,) = source_objects(s3, [10], planned=False)

    with pytest.raises(
        VerificationError,
        match=f"{task.source}: expected 11 bytes, found 10 bytes \\(the source changed",
    ):
        S3ServerSideCopier(s3).copy(Manifest("e1", (CopyTask(task.source, task.target, 11),)))
    bucket, key = task.target.removeprefix("s3://").split("/", 1)
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket, Prefix=key)


@pytest.mark.parametrize(
    "source, target",
    [
        ("file:///data/sales/a.parquet", "s3://dr-sales/e1/a.parquet"),
        ("s3://onprem-sales/a.parquet", "hdfs://namenode/replica/a.parquet"),
    ],
)
def test_a_non_s3_uri_is_refused_before_anything_is_copied(s3, source, target):
    (good,) = source_objects(s3, [10])
    refused = source if not source.startswith("s3") else target

    with pytest.raises(CopyError, match=f"{refused} is not an S3 URI"):
        S3ServerSideCopier(s3).copy(Manifest("e1", (good, CopyTask(source, target, 10))))

    assert "Contents" not in s3.list_objects_v2(Bucket="dr-sales")


def test_a_client_no_longer_used_is_let_go(monkeypatch):
    in_process_aws(monkeypatch)
    # As each Copy batch invocation of a warm Lambda builds its own clients.
    dropped = [
        weakref.ref(AwsClients("http://127.0.0.1:9").client("s3", "us-east-1", 8)) for _ in range(3)
    ]
    gc.collect()
    assert [client() for client in dropped] == [None] * 3  # gone, their pools with them


def test_copiers_running_at_once_in_one_process_share_its_objects_in_flight(s3):
    # Three batches of one process, as `ferry replicate` runs the S3 copy Map: each copier
    # has threads enough for 48 objects at once; together they stay within the process's
    # bound (the pool of the client they share).
    import threading

    from ferry.copying import concurrency

    lock, in_flight, most = threading.Lock(), [0], [0]
    full, hold = threading.Event(), threading.Event()

    def sending(**_):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
            if in_flight[0] >= concurrency.PROCESS_OBJECTS:
                full.set()
        # The first copies wait for the bound to be reached, then a while longer, so that
        # any copy past the bound would be seen in flight beside them.
        assert full.wait(30), f"only {most[0]} copies were ever in flight at once"
        hold.wait(0.05)

    def answered(**_):
        with lock:
            in_flight[0] -= 1

    s3.meta.events.register("before-send.s3.CopyObject", sending)
    s3.meta.events.register("after-call.s3.CopyObject", answered)
    sources = source_objects(s3, [16] * 100)
    batches = [
        tuple(CopyTask(t.source, f"{t.target}-{n}", t.size, t.marker) for t in sources)
        for n in range(3)
    ]
    copiers = [
        threading.Thread(target=S3ServerSideCopier(s3, threads=48).copy, args=(Manifest("e1", b),))
        for b in batches
    ]
    for copier in copiers:
        copier.start()
    for copier in copiers:
        copier.join()
    assert len(keys(s3)) == 300
    assert most[0] == concurrency.PROCESS_OBJECTS == 64
