"""One request per object, counted at the emulator's server.

The emulator answers each request and closes its connection, so every request here also
proves that a connection closed by the server opens again. A streamed body's failure is
also checked where the client's own HTTP session sends it.
"""

from __future__ import annotations

import json
import os
import urllib.request
from hashlib import md5

import boto3
import pytest
from botocore.config import Config

from ferry.copying import concurrency
from ferry.copying.copier import CopyTask, InlineCopier, Manifest
from ferry.copying.s3_copy import S3ServerSideCopier
from ferry.core.errors import VerificationError
from ferry.local import emulator_requests
from ferry.storage import fs
from ferry.storage.aws import AwsClients
from ferry.storage.s3_objects import put_file

pytestmark = pytest.mark.integration

MiB = 1024 * 1024

KEYS = [
    f"sales/dt=2026-11-{day:02d}/part {index} ü+%.parquet"
    for day in (20, 21)
    for index in (0, 1, 2)
]


def served(endpoint: str) -> dict[str, int]:
    with urllib.request.urlopen(endpoint + emulator_requests.PATH, timeout=10) as reply:
        return json.loads(reply.read())["byKind"]


def sent_since(before: dict[str, int], endpoint: str) -> dict[str, int]:
    after = served(endpoint)
    return {kind: n - before.get(kind, 0) for kind, n in after.items() if n - before.get(kind, 0)}


def planned(root, data: dict[str, bytes], target: str) -> tuple[CopyTask, ...]:
    """``data`` written as local files under ``root``, listed as Plan lists them, into S3."""
    for key, body in data.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    return tuple(
        CopyTask(
            entry.uri,
            f"s3://{target}/e1/{fs.relative_path(entry.uri, fs.local_uri(root))}",
            entry.size,
            entry.marker,
        )
        for entry in fs.list_files(fs.local_uri(root))
    )


def test_server_side_copies_are_one_request_each(local_runtime, unique):
    s3 = boto3.client("s3", region_name="us-east-1")
    source, target = f"landing-{unique}", f"dr-{unique}"
    for bucket in (source, target):
        s3.create_bucket(Bucket=bucket)
    data = {key: os.urandom(100 + index) for index, key in enumerate(KEYS)}
    tasks = []
    for key, body in data.items():
        etag = s3.put_object(Bucket=source, Key=key, Body=body)["ETag"]
        tasks.append(CopyTask(f"s3://{source}/{key}", f"s3://{target}/e1/{key}", len(body), etag))
    client = AwsClients(local_runtime.endpoint).client("s3", "us-east-1", connections=8)
    before = served(local_runtime.endpoint)

    report = S3ServerSideCopier(client, threads=4).copy(Manifest("e1", tuple(tasks)))

    assert sent_since(before, local_runtime.endpoint) == {"PUT copy": len(KEYS)}
    assert report.files == len(KEYS)
    for key, body in data.items():
        assert s3.get_object(Bucket=target, Key=f"e1/{key}")["Body"].read() == body


def test_small_uploads_are_one_request_each(local_runtime, unique, tmp_path):
    s3 = boto3.client("s3", region_name="us-east-1")
    target = f"dr-{unique}"
    s3.create_bucket(Bucket=target)
    data = {key: os.urandom(50 + index) for index, key in enumerate(KEYS)}
    tasks = planned(tmp_path, data, target)
    fs.default().s3_client(target)  # the bucket's region is looked up once, before counting
    before = served(local_runtime.endpoint)

    InlineCopier(threads=4).copy(Manifest("e1", tasks))

    assert sent_since(before, local_runtime.endpoint) == {"PUT": len(KEYS)}
    for key, body in data.items():
        assert s3.get_object(Bucket=target, Key=f"e1/{key}")["Body"].read() == body


def test_large_local_files_stream_in_one_request_each(
    local_runtime, unique, tmp_path, monkeypatch
):
    # A memory bound of 16 MiB on 2 threads holds no file over 8 MiB whole; two such files
    # give each thread one, so each streams from disk in one PutObject.
    monkeypatch.setattr(concurrency, "IN_FLIGHT_BYTES", 16 * MiB)
    s3 = boto3.client("s3", region_name="us-east-1")
    target = f"dr-{unique}"
    s3.create_bucket(Bucket=target)
    data = {KEYS[0]: os.urandom(9 * MiB), KEYS[1]: os.urandom(9 * MiB + 5)}
    tasks = planned(tmp_path, data, target)
    fs.default().s3_client(target)  # the bucket's region is looked up once, before counting
    before = served(local_runtime.endpoint)
    advanced: list[int] = []

    InlineCopier(threads=2, chunk_size=5 * MiB).copy(Manifest("e1", tasks), advanced.append)

    assert sent_since(before, local_runtime.endpoint) == {"PUT": 2}
    assert sum(advanced) == sum(len(body) for body in data.values())
    for key, body in data.items():
        stored = s3.get_object(Bucket=target, Key=f"e1/{key}")
        assert stored["Body"].read() == body
        assert stored["ETag"].strip('"') == md5(body).hexdigest()


def test_a_streamed_body_that_ends_short_is_named_when_the_client_sends_it(
    local_runtime, unique, tmp_path
):
    # A client whose payload goes unsigned (as over HTTPS), so that
    # its HTTP session reads the body as it sends it: that session reports any failure of a
    # body as one to send (and retries it). The body's own error is what the copy raises.
    s3 = boto3.client("s3", region_name="us-east-1")
    target = f"dr-{unique}"
    s3.create_bucket(Bucket=target)
    data = os.urandom(3 * MiB)
    path = tmp_path / "streamed.bin"
    path.write_bytes(data)
    client = boto3.client(
        "s3",
        region_name="us-east-1",
        config=Config(
            s3={"payload_signing_enabled": False},
            request_checksum_calculation="when_required",
            retries={"total_max_attempts": 2},
        ),
    )
    sent = []
    client.meta.events.register("before-send.s3.PutObject", lambda **_: sent.append(1))

    with open(path, "rb") as handle:
        os.truncate(path, 2 * MiB)
        with pytest.raises(VerificationError, match=f"ended after {2 * MiB} of the {3 * MiB}"):
            put_file(client, f"s3://{target}/e1/streamed.bin", handle, 3 * MiB, md5(data))

    assert sent == [1, 1]  # sent, and retried by the client, before it gave up
    assert "Contents" not in s3.list_objects_v2(Bucket=target)
