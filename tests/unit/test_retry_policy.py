"""One retry policy on every path: the attempts of one throttled call, counted at the wire.

Each path sends to a local endpoint that throttles everything (``tests/throttling.py``) and
counts what arrives: the Lambda functions' and the inline copier's S3 requests (boto3), the
small JSON documents (plans, manifests, copy records: pyarrow's S3 file system), the Spark
job's reads and writes, DynamoDB's batch writes. A second retry layer anywhere (a loop
around a call, another library's defaults) changes a count here.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import botocore.retries.standard
import pytest
from botocore.exceptions import ClientError

from emr_jobs.copy_files import main
from ferry.config import load_config
from ferry.copying.copier import CopyTask, InlineCopier, Manifest
from ferry.copying.manifest import write_manifest
from ferry.copying.spark_tasks import copy_bin, copy_with_settings
from ferry.core.errors import FerryError, StateStoreError
from ferry.replicas.ledger.dynamodb import DynamoDbStateStore
from ferry.replicas.ledger.records import LedgerEntry
from ferry.storage import aws, file_systems, fs, retry_policy
from ferry.storage.aws import AwsClients
from ferry.storage.s3 import MiB
from tests.throttling import REGION, throttling_endpoint

#: The effective attempts of one throttled AWS request, on every path: the first and five
#: retries (``ferry.storage.retry_policy``).
ATTEMPTS = 6
CREDENTIALS = ("testing", "testing", None)


def test_the_policy_states_the_attempts_this_file_counts():
    assert retry_policy.ATTEMPTS == ATTEMPTS
    assert retry_policy.MODE == "standard"


CIRCUS_TRAIN_RETRIES = """
source-catalog:
  name: on-premises-cluster
  hive-metastore-uris: thrift://metastore.domain:9083
replica-catalog:
  name: aws-data-warehouse
  hive-metastore-uris: thrift://emr-master.compute.amazonaws.com:9083
copier-options:
  upload-retry-count: 3
  s3s3-retry-max-copy-attempts: 3
table-replications:
  - source-table: {database-name: db, table-name: orders}
    replica-table: {database-name: db, table-name: orders, table-location: s3://bucket/orders}
"""


def test_circus_train_retry_keys_are_told_the_policys_real_attempts(tmp_path):
    path = tmp_path / "circus-train.yml"
    path.write_text(CIRCUS_TRAIN_RETRIES)
    warnings = {warning.key: warning.message for warning in load_config(path, environ={}).warnings}
    for key in ("copier-options.upload-retry-count", "copier-options.s3s3-retry-max-copy-attempts"):
        assert f"at most {ATTEMPTS} times in all" in warnings[key]
        assert "3 times" not in warnings[key]


@pytest.fixture
def no_backoff(monkeypatch):
    """botocore's pauses between attempts (seconds each) left out; the attempts are not."""
    monkeypatch.setattr(botocore.retries.standard.ExponentialBackoff, "delay_amount", lambda *_: 0)


@pytest.fixture
def throttled(no_backoff):
    """The process's file systems on a throttling S3 endpoint (restored afterwards)."""
    with throttling_endpoint() as endpoint:
        settings = file_systems.S3Settings(endpoint.url, REGION, CREDENTIALS)
        previous = fs.set_default(file_systems.FileSystems(settings))
        try:
            yield endpoint
        finally:
            fs.set_default(previous)


def test_an_inline_copys_throttled_read_is_sent_six_times(throttled, tmp_path):
    task = CopyTask("s3://landing/orders/part-0", f"file://{tmp_path}/e1/part-0", 10)
    with pytest.raises(FerryError, match="SlowDown"):
        InlineCopier(threads=1, chunk_size=MiB).copy(Manifest("e1", (task,)))
    assert throttled.count("GET", "/landing/orders/part-0") == ATTEMPTS


def test_an_inline_copys_throttled_write_is_sent_six_times(throttled, tmp_path):
    source = tmp_path / "part-0"
    source.write_bytes(b"x" * 10)
    task = CopyTask(f"file://{source}", "s3://dr-sales/orders/e1/part-0", 10)
    with pytest.raises(FerryError, match="SlowDown"):
        InlineCopier(threads=1, chunk_size=MiB).copy(Manifest("e1", (task,)))
    assert throttled.count("PUT", "/dr-sales/orders/e1/part-0") == ATTEMPTS


def test_a_bucket_reached_with_a_role_keeps_its_credentials_and_the_same_attempts(
    throttled, tmp_path
):
    # A side in another account: the role's clients (AwsClients.assuming gives them; here
    # clients of another session), with the role's credentials and the same policy.
    role = AwsClients(
        throttled.url,
        aws.new_session(aws_access_key_id="ROLE", aws_secret_access_key="role-secret"),
    )
    fs.reach_bucket_with("dr-sales", role)
    source = tmp_path / "part-0"
    source.write_bytes(b"x" * 10)
    task = CopyTask(f"file://{source}", "s3://dr-sales/orders/e1/part-0", 10)
    with pytest.raises(FerryError, match="SlowDown"):
        InlineCopier(threads=1, chunk_size=MiB).copy(Manifest("e1", (task,)))
    assert throttled.count("PUT", "/dr-sales/orders/e1/part-0") == ATTEMPTS
    assert throttled.signed_with[("PUT", "/dr-sales/orders/e1/part-0")] == {"ROLE"}
    assert fs.default().s3_client("dr-sales") is role.client("s3", REGION, file_systems.LISTING_CONNECTIONS)


def test_copy_threads_asking_for_a_buckets_client_together_share_one(throttled):
    # The inline copier's threads ask for their bucket's client at once: one is made (a
    # boto3 session is not safe to make clients from on several threads together).
    files = file_systems.FileSystems(fs.default().settings)
    start = threading.Barrier(16)

    def ask(_):
        start.wait()
        return files.s3_client("dr-sales", 100)  # a pool the region look-up did not make

    with ThreadPoolExecutor(16) as pool:
        clients = list(pool.map(ask, range(16)))
    assert len({id(client) for client in clients}) == 1
    assert throttled.count("HEAD", "/dr-sales") == 1  # its region, looked up once


def test_the_file_systems_use_the_edges_own_clients(monkeypatch):
    """An edge that built its clients (the Lambda runtime, ``ferry execute``) hands them to
    the file systems: one S3 client per region in the process, not one each."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    edge = AwsClients("http://127.0.0.1:1", aws.new_session(region_name=REGION))
    previous = fs.default()
    try:
        files = fs.configure(file_systems.S3Settings.of_clients(edge), edge)
        assert files.aws is edge
        assert fs.configure(file_systems.S3Settings.of_clients(edge), edge) is files  # caches kept
    finally:
        fs.set_default(previous)


def test_a_throttled_document_read_through_pyarrow_is_sent_six_times(throttled):
    # pyarrow's own default is three attempts: the file systems give it the policy's.
    with pytest.raises(OSError, match="HTTP status 503"):
        fs.read_bytes("s3://work/runs/e1/manifest.json")
    assert throttled.count("HEAD", "/work/runs/e1/manifest.json") == ATTEMPTS


def test_a_throttled_document_write_through_pyarrow_is_sent_six_times(throttled):
    with pytest.raises(OSError, match="SLOW_DOWN"):
        fs.write_bytes("s3://work/runs/e1/copied/0.json", b"{}")
    assert throttled.count("PUT", "/work/runs/e1/copied/0.json") == ATTEMPTS


def test_a_spark_tasks_throttled_file_fails_after_the_sdks_attempts_only(throttled, tmp_path):
    """The job copies a file again after a failure the SDK does not retry, never after an
    AWS request's failure: its attempts would multiply the SDK's."""
    settings = fs.default().settings
    reads = CopyTask("s3://landing/orders/part-0", f"file://{tmp_path}/e1/part-0", 10)
    source = tmp_path / "part-1"
    source.write_bytes(b"y" * 10)
    writes = CopyTask(f"file://{source}", "s3://dr-sales/orders/e1/part-1", 10)
    manifest = Manifest("e1", (reads, writes))
    copy = copy_with_settings(settings, manifest, MiB, threads=1)

    results = list(copy_bin(manifest.tasks, copy=copy, chunk_size=MiB, backoff_seconds=0))

    assert [(result.ok, result.attempts) for result in results] == [(False, 1), (False, 1)]
    assert all("SlowDown" in (result.error or "") for result in results)
    assert throttled.count("GET", "/landing/orders/part-0") == ATTEMPTS
    assert throttled.count("PUT", "/dr-sales/orders/e1/part-1") == ATTEMPTS


def test_a_spark_task_still_copies_a_file_again_after_a_failure_the_sdk_does_not_retry(
    tmp_path,
):
    source = tmp_path / "part-0"
    source.write_bytes(b"z" * 10)
    task = CopyTask(f"file://{source}", f"file://{tmp_path}/e1/part-0", 10)
    failures = [OSError("connection reset by peer")]

    def copy(task, chunk_size):
        if failures:
            raise failures.pop()
        (tmp_path / "e1").mkdir()
        (tmp_path / "e1" / "part-0").write_bytes(source.read_bytes())

    [result] = copy_bin([task], copy=copy, backoff_seconds=0)
    assert (result.ok, result.attempts) == (True, 2)


def _ledger(endpoint) -> DynamoDbStateStore:
    session = aws.new_session(
        aws_access_key_id=CREDENTIALS[0], aws_secret_access_key=CREDENTIALS[1]
    )
    client = AwsClients(endpoint.url, session).client("dynamodb", REGION)
    return DynamoDbStateStore(client, "ferry-state")


ENTRY = LedgerEntry(
    replica="dr.orders",
    path="s3://dr-sales/orders/e0",
    event_id="e1",
    replica_table="dr.orders",
    recorded_at=datetime(2026, 11, 26, tzinfo=UTC),
)


def test_a_throttled_dynamodb_batch_write_is_sent_six_times(no_backoff):
    with throttling_endpoint() as endpoint:
        with pytest.raises(ClientError, match="ThrottlingException"):
            _ledger(endpoint).record([ENTRY])
    assert endpoint.count("POST", "BatchWriteItem") == ATTEMPTS


def test_items_dynamodb_leaves_unprocessed_are_sent_again_a_bounded_number_of_times(
    no_backoff,
):
    with throttling_endpoint(unprocessed=True) as endpoint:
        with pytest.raises(StateStoreError) as raised:
            _ledger(endpoint).record([ENTRY])
    assert str(raised.value) == (
        "DynamoDB table ferry-state: 1 ledger entries stayed unprocessed after 8 retries "
        "(throttled)"
    )
    assert endpoint.count("POST", "BatchWriteItem") == retry_policy.UNPROCESSED_RETRIES + 1 == 9


@pytest.mark.spark
def test_the_spark_jobs_throttled_read_is_sent_six_times_in_all(spark, tmp_path, monkeypatch):
    """The job as EMR Serverless runs it (``main``, the copy on a Spark worker): a throttled
    file fails after the SDK's attempts, once, whatever ``--retries`` allows."""
    with throttling_endpoint() as endpoint:
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint.url)
        monkeypatch.setenv("AWS_REGION", REGION)
        task = CopyTask("s3://landing/orders/part-0", f"file://{tmp_path}/e1/part-0", 10)
        manifest_uri = f"file://{tmp_path}/run/manifest.json"
        write_manifest(manifest_uri, Manifest("e1", (task,)))
        previous = fs.default()
        try:
            with pytest.raises(SystemExit):
                main(["--manifest", manifest_uri, "--retries", "3"])
        finally:
            fs.set_default(previous)
        report = json.loads((tmp_path / "run" / "copy-report.json").read_text())
        assert [failure["attempts"] for failure in report["failed"]] == [1]
        assert endpoint.count("GET", "/landing/orders/part-0") == ATTEMPTS
