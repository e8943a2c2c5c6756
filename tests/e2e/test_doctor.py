"""``ferry doctor`` against the local runtime: every check that can be made there passes once
the deployment is as it should be, and a check that fails says what to do."""

from __future__ import annotations

import json

import boto3
import pytest

from ferry.commands.doctor import run_doctor
from ferry.config.text import SECRET_PLACEHOLDER

pytestmark = pytest.mark.e2e

LANDING = "ferry-demo-landing"  # the trigger bucket of the local environment's config


def findings(capsys) -> dict[str, dict]:
    return {f["check"]: f for f in json.loads(capsys.readouterr().out)}


@pytest.fixture
def landing_bucket(pipeline):
    s3 = boto3.client("s3")
    if LANDING not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        s3.create_bucket(Bucket=LANDING)
    s3.put_bucket_notification_configuration(Bucket=LANDING, NotificationConfiguration={})
    yield s3


def test_every_check_the_local_runtime_can_make_passes_once_the_deployment_is_complete(
    pipeline, local_runtime, landing_bucket, capsys
):
    home = local_runtime.state_dir
    # The trigger bucket does not send its events to EventBridge yet: that check fails.
    assert run_doctor("local", home=home, as_json=True) == 1
    found = findings(capsys)
    bucket = found[f"trigger bucket {LANDING}"]
    assert bucket["status"] == "failed"
    assert "put-bucket-notification-configuration --bucket ferry-demo-landing" in bucket["fix"]
    assert [c for c, f in found.items() if f["status"] == "failed"] == [f"trigger bucket {LANDING}"]

    landing_bucket.put_bucket_notification_configuration(
        Bucket=LANDING, NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    assert run_doctor("local", home=home) == 0
    lines = capsys.readouterr().out.splitlines()
    by_check = {line.split(":", 1)[0][2:]: line for line in lines if line[:1] in "✓✗–"}
    assert by_check["bootstrap us-east-1"].startswith("✓")
    assert by_check["account"].startswith("✓")
    assert by_check["stack"].startswith("✓")
    assert by_check["secret ferry/local/config-variables"].startswith("✓")
    # The metastores answered the deployed Plan function, from its own process and role.
    assert by_check["catalogs of landing-dr.yml"].startswith("✓")
    assert "answered ferry-local-plan" in by_check["catalogs of landing-dr.yml"]
    assert by_check["spark application"].startswith("✓")
    assert by_check["spark job's code"].startswith("✓")
    assert by_check["network"].startswith("–")
    assert lines[-1].endswith(", 0 failed")


def test_a_secret_still_holding_its_placeholder_fails_its_check_and_names_the_value(
    pipeline, local_runtime, landing_bucket, capsys
):
    secrets = boto3.client("secretsmanager")
    arn = pipeline.config_secret_arn
    before = secrets.get_secret_value(SecretId=arn)["SecretString"]
    values = json.loads(before)
    secrets.put_secret_value(
        SecretId=arn,
        SecretString=json.dumps({**values, "SOURCE_METASTORE_URIS": SECRET_PLACEHOLDER}),
    )
    try:
        assert run_doctor("local", home=local_runtime.state_dir, as_json=True) == 1
    finally:
        secrets.put_secret_value(SecretId=arn, SecretString=before)
    secret = findings(capsys)["secret ferry/local/config-variables"]
    assert secret["status"] == "failed"
    assert secret["detail"].startswith("SOURCE_METASTORE_URIS not set")
    assert "put-secret-value --secret-id" in secret["fix"] and "REPLICA" not in secret["fix"]


def test_an_unknown_environment_is_one_line_and_exit_2(capsys):
    from ferry.commands.cli import main

    assert main(["doctor", "--environment", "prd"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("ferry: error: no settings for environment 'prd'")
    assert len(error.strip().splitlines()) == 1


def test_a_hive_source_with_catalog_events_must_write_its_notification_log(
    pipeline, local_runtime, sample, write_config, unique
):
    """The deployed CatalogPoller, in its check mode, reads where the metastore's log is and
    where the poller stands: the local source metastore writes one, the replica's does not,
    and a log below the poller's position was started anew."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from ferry.commands.doctor_checks import FAILED, OK, Doctor
    from ferry.commands.doctor_findings import Deployment
    from ferry.config import load_config
    from ferry.feeds import FeedState
    from ferry.feeds.feed_checks import LISTENER
    from ferry.local import deploy
    from ferry.storage.aws import AwsClients

    def config(name: str, source_uri: str):
        path = write_config(
            {
                "source-catalog": {"name": name, "hive-metastore-uris": source_uri},
                "replica-catalog": {"name": "dr", "hive-metastore-uris": local_runtime.replica_uri},
                "triggers": {"catalog-events": {}},
                "table-replications": [
                    {
                        "source-table": {"database-name": sample.database, "table-name": "orders"},
                        "replication-mode": "METADATA_MIRROR",
                        "replica-table": {"database-name": f"{sample.database}_dr"},
                    }
                ],
            },
            name=f"{name}-{unique}.yml",
        )
        return path, deploy.upload_config(boto3.client("s3"), pipeline.work_uri, path)

    written, written_uri = config("onprem", local_runtime.source_uri)
    unwritten, unwritten_uri = config("nolog", local_runtime.replica_uri)
    settings = SimpleNamespace(
        name="local",
        region="us-east-1",
        configs={written: load_config(written), unwritten: load_config(unwritten)},
    )
    outputs = {
        **pipeline.outputs,
        "ConfigUri" + written.stem.title().replace("-", ""): written_uri,
        "ConfigUri" + unwritten.stem.title().replace("-", ""): unwritten_uri,
    }
    doctor = Doctor(settings, AwsClients(), local=Deployment(outputs, "local"))

    def checks() -> dict[str, object]:
        return {f.check: f for f in doctor.notification_logs(doctor.local)}

    found = checks()
    ok = found[f"notification log of {written.name}"]
    assert ok.status == OK, ok
    assert "not polled yet" in ok.detail and "answered ferry-local-catalog-poller" in ok.detail
    failed = found[f"notification log of {unwritten.name}"]
    assert failed.status == FAILED
    assert failed.detail.startswith(f"nolog ({local_runtime.replica_uri}) writes no notification log")
    assert "hive.metastore.transactional.event.listeners" in failed.detail
    assert LISTENER in failed.detail
    assert len(failed.line().splitlines()) == 1

    # The poller read further than the log now reaches: the log was started anew.
    state = FeedState(boto3.client("dynamodb"), pipeline.state_table)
    state.advance(written_uri, None, 10**9, datetime.now(UTC))
    behind = checks()[f"notification log of {written.name}"]
    assert behind.status == FAILED
    assert "below event 1000000000 the poller read" in behind.detail


def test_a_fresh_runtime_passes_the_doctor_and_stderr_stays_empty(pipeline, local_runtime):
    """Right after `ferry local up` the demo has not run: its landing bucket (the local
    environment's trigger bucket) does not exist yet, which is said, not failed; and the CDK's
    Node.js runtime prints no banner of its own."""
    import os
    import subprocess
    import sys

    s3 = boto3.client("s3")
    existed = LANDING in {b["Name"] for b in s3.list_buckets()["Buckets"]}
    if existed:  # another test's: a fresh runtime has none
        notifications = s3.get_bucket_notification_configuration(Bucket=LANDING)
        notifications.pop("ResponseMetadata", None)
        s3.delete_bucket(Bucket=LANDING)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("JSII_SILENCE")}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ferry.commands.cli", "doctor", "--environment", "local",
             "--home", str(local_runtime.state_dir)],
            capture_output=True, text=True, timeout=300, env=environment,
        )  # fmt: skip
    finally:
        if existed:
            s3.create_bucket(Bucket=LANDING)
            s3.put_bucket_notification_configuration(
                Bucket=LANDING, NotificationConfiguration=notifications
            )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert f"– trigger bucket {LANDING}: does not exist yet: `ferry demo` creates it" in done.stdout
    assert lines[-1].endswith(", 0 failed")


def test_a_trigger_bucket_that_does_not_exist_fails_its_check_naming_the_config(
    local_runtime, write_config, unique
):
    """On AWS a trigger bucket that does not exist is a mistake: its triggers never fire."""
    from types import SimpleNamespace

    from ferry.commands.doctor_checks import FAILED, Doctor
    from ferry.config import load_config
    from ferry.storage.aws import AwsClients

    bucket = f"ferry-no-landing-{unique}"
    path = write_config(
        {
            "source-catalog": {"name": "landing", "glue": {"region": "us-east-1"}},
            "replica-catalog": {"name": "west", "glue": {"region": "us-west-2"}},
            "triggers": {"s3": [{"bucket": bucket, "prefix": "warehouse/"}]},
            "table-replications": [
                {
                    "source-table": {"database-name": "landing", "table-name": "orders"},
                    "replica-table": {"database-name": "landing_dr"},
                    "replication-mode": "METADATA_MIRROR",
                }
            ],
        },
        name=f"landing-{unique}.yml",
    )
    settings = SimpleNamespace(name="prod", region="us-east-1", configs={path: load_config(path)})
    [finding] = Doctor(settings, AwsClients()).trigger_buckets()
    assert finding.status == FAILED
    assert finding.detail == f"does not exist in us-east-1: the triggers of {path.name} never fire"
    assert finding.fix == (
        f"create the bucket in us-east-1, or correct triggers.s3 (bucket, region) in {path.name}"
    )
    assert len(finding.line().splitlines()) == 1
