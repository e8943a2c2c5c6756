"""Ferry's AWS sessions: timestamps read as botocore reads them, at a fraction of the cost."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime, timedelta

import botocore.utils
import pytest
from moto import mock_aws

from ferry.storage import aws, file_systems
from ferry.storage.aws import AwsClients, parse_timestamp
from tests.helpers import in_process_aws


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-21T20:41:17.000Z",  # a listed object's LastModified
        "2026-11-21T20:41:17.123456Z",
        "2026-11-21T20:41:17+02:00",
        "2026-11-21T20:41:17",  # no zone: botocore's reading
        "Sat, 21 Nov 2026 20:41:17 GMT",  # an HTTP header's date
        1763757677,  # epoch seconds (JSON protocols: Glue, Step Functions)
        1763757677.25,
        "1763757677",
    ],
)
def test_a_timestamp_reads_as_botocores_parser_reads_it(value):
    ours, botocores = parse_timestamp(value), botocore.utils.parse_timestamp(value)

    assert ours == botocores
    assert ours.utcoffset() == botocores.utcoffset()


def test_a_timestamp_botocore_refuses_is_refused():
    with pytest.raises(ValueError):
        parse_timestamp("not a time")


def test_listed_objects_carry_their_last_modified_time(monkeypatch):
    in_process_aws(monkeypatch)
    parsed = []

    def counted(value):
        parsed.append(value)
        return parse_timestamp(value)

    # Ferry's sessions read timestamps with ferry.storage.aws.parse_timestamp (not dateutil's parser).
    monkeypatch.setattr(aws, "parse_timestamp", counted)
    with mock_aws():
        s3 = AwsClients().client("s3", "us-east-1")
        s3.create_bucket(Bucket="landing")
        for key in ("orders/dt=1/a", "orders/dt=2/b"):
            s3.put_object(Bucket="landing", Key=key, Body=b"x")
        listed = s3.list_objects_v2(Bucket="landing")["Contents"]
        heads = {
            item["Key"]: s3.head_object(Bucket="landing", Key=item["Key"])["LastModified"]
            for item in listed
        }
        entries = file_systems.FileSystems(file_systems.S3Settings(region="us-east-1")).list_files(
            "s3://landing/orders"
        )

    listed_times = {item["LastModified"].isoformat() for item in listed}
    assert len(parsed) >= 2 * len(listed)  # both listings' LastModified went through it
    assert {parse_timestamp(value).isoformat() for value in parsed} >= listed_times
    now = datetime.now(UTC)
    for item in listed:
        assert item["LastModified"] == heads[item["Key"]]  # ISO 8601 and HTTP date agree
        assert item["LastModified"].tzinfo is not None
        assert now - timedelta(minutes=5) < item["LastModified"] <= now
    assert {entry.uri: entry.mtime_ns for entry in entries} == {
        f"s3://landing/{key}": int(modified.timestamp() * 1e9) for key, modified in heads.items()
    }


def test_both_copiers_send_what_one_s3_client_configuration_sends(monkeypatch):
    # The server-side copier's client (AwsClients) and the inline copier's (the file
    # systems') send the same requests: the Content-MD5 the copier computed and no other
    # checksum, and no "100 Continue" wait for a small body.
    in_process_aws(monkeypatch)
    with mock_aws():
        server_side = AwsClients().client("s3", "us-east-1", connections=8)
        server_side.create_bucket(Bucket="dr-sales")
        inline = file_systems.FileSystems(file_systems.S3Settings(region="us-east-1")).s3_client("dr-sales", 8)
        headers = []
        for client in (server_side, inline):
            client.meta.events.register(
                "before-send.s3.PutObject",
                lambda request, **_: headers.append({k.lower() for k in request.headers}),
            )
            client.put_object(
                Bucket="dr-sales",
                Key="e1/part-0.parquet",
                Body=b"x" * 100,
                ContentMD5=base64.b64encode(hashlib.md5(b"x" * 100).digest()).decode(),
            )

    assert headers[0] == headers[1]
    assert "content-md5" in headers[0] and "expect" not in headers[0]
    assert not {name for name in headers[0] if "checksum" in name}


def test_the_s3_settings_of_clients_built_for_an_endpoint_carry_their_credentials(monkeypatch):
    """What ``--home`` selects (an endpoint, the emulator's keys) is what pyarrow is given;
    credentials the SDK's own chain finds are left to pyarrow's chain."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-the-shell")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "shell-secret")
    session = aws.new_session(
        aws_access_key_id="testing", aws_secret_access_key="secret", region_name="us-east-1"
    )
    local = AwsClients("http://127.0.0.1:5999", session=session)
    settings = file_systems.S3Settings.of_clients(local)
    assert (settings.endpoint, settings.region) == ("http://127.0.0.1:5999", "us-east-1")
    assert settings.credentials == ("testing", "secret", None)
    assert "secret" not in repr(settings)
    assert file_systems.S3Settings.of_clients(AwsClients()).credentials is None
    # The S3 clients of the file systems sign with those credentials, not the shell's.
    client = file_systems.FileSystems(settings).s3_client("any-bucket-name")
    assert client.meta.endpoint_url == "http://127.0.0.1:5999"
    assert client._request_signer._credentials.get_frozen_credentials().access_key == "testing"
