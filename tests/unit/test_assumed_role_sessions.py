"""A role of another account (``ferry.storage.aws_roles``), assumed through moto's STS in-process:
one ``AssumeRole`` per session, renewed only when the session nears its end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from moto import mock_aws

from ferry.config import AssumeRole, CatalogConfig
from ferry.storage.aws import AwsClients
from ferry.storage.aws_roles import RoleSession, credentials_of
from tests.helpers import in_process_aws

ROLE = "arn:aws:iam::210987654321:role/ferry-dr"


@pytest.fixture
def clock(monkeypatch):
    in_process_aws(monkeypatch)
    now = [datetime.now(UTC)]
    with mock_aws():
        yield now


@pytest.mark.parametrize("minutes", [15, 60])
def test_a_session_is_assumed_once_and_renewed_only_near_its_end(clock, minutes):
    aws = AwsClients(clock=lambda: clock[0])
    role = AssumeRole(role_arn=ROLE, session_duration=timedelta(minutes=minutes))
    side = aws.assuming(role)
    credentials = credentials_of(side.session)
    for _ in range(5):  # requests in the session's first minutes: its first credentials
        side.client("s3", "us-east-1").list_buckets()
        clock[0] += timedelta(seconds=30)
    assert credentials.sessions == 1
    # A sixth of the session before it ends (STS's shortest: botocore's own 15-minute
    # margin would have asked again at every request), new credentials are asked for.
    clock[0] += timedelta(minutes=minutes) - timedelta(minutes=minutes / 6 + 2.5)
    side.client("s3", "us-east-1").list_buckets()
    assert credentials.sessions == 2


def test_a_side_without_a_role_keeps_the_clients_own_credentials_and_a_role_its_session(clock):
    aws = AwsClients()
    plain = CatalogConfig(name="dr", hive_metastore_uris="thrift://h:9083")
    assert aws.for_side(plain) is aws
    role = AssumeRole(role_arn=ROLE, external_id="ferry-dr")
    side = aws.for_side(plain.model_copy(update={"assume_role": role}))
    assert side is aws.assuming(role) and side is not aws
    assert side.session.get_credentials().get_frozen_credentials().access_key.startswith("ASIA")


def test_the_spark_jobs_reading_of_a_role_asks_sts_what_the_configs_does():
    written = AssumeRole(
        role_arn=ROLE, external_id="ferry-dr", session_duration="PT30M", session_name="copy"
    )
    read = RoleSession.from_json(written.model_dump(mode="json", by_alias=True))
    assert read.parameters() == written.parameters()
    assert read.session_duration == written.session_duration
