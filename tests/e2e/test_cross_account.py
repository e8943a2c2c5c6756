"""The replica side in another AWS account, reached through a role Ferry assumes there.

Two accounts of the emulator: the primary (``123456789012``), where Ferry runs as a role
of its environment (``Ferry-<env>-Operator``), and the DR account (``210987654321``), with
the DR stack of ``infra/dr_account.py`` synthesized and deployed there
(``ferry.local.accounts``: its role, trust and permissions) and the replica's bucket and
Glue catalog. Every request of either role is authorized by the emulator under that account's
policies (``ferry.local.authorization``): the operator's identity policy and the DR role's
trust for ``sts:AssumeRole``, then the DR role's own policies for Glue and S3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from datetime import UTC, datetime, timedelta

import boto3
import pytest
import yaml

from ferry.config import AssumeRole, CatalogConfig
from ferry.config.catalogs import GlueSettings
from ferry.local import accounts as accounts_of_emulator
from ferry.local.accounts import deploy_dr_account
from ferry.storage import file_systems, fs
from ferry.storage.aws import AwsClients
from ferry.storage.aws_roles import credentials_of
from infra.dr_account import trust_statement
from infra.settings import load_settings

pytestmark = pytest.mark.e2e

PRIMARY = "123456789012"
DR = "210987654321"
REGION = "us-east-1"


def in_account(service: str, account: str):
    """A client of the emulator's administrator of ``account`` (not a role: served as moto
    serves it)."""
    return accounts_of_emulator.in_account(boto3.client(service, region_name=REGION), account)


def denials(local_runtime) -> list[dict]:
    with urllib.request.urlopen(f"{local_runtime.endpoint}/ferry-api/denials") as reply:
        return json.loads(reply.read())


def deploy_dr_stack(local_runtime, tmp_path, environment: str, role_name: str, names) -> str:
    """The DR stack of an environment named ``environment`` (``infra/dr_account.py``),
    synthesized and deployed into the DR account of the emulator; its role's ARN."""
    config = tmp_path / f"{environment}.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "source-catalog": {"name": "onprem", "hive-metastore-uris": "thrift://h:9083"},
                "replica-catalog": {
                    "name": "dr",
                    "glue": {"region": REGION, "catalog-id": DR},
                    "assume-role": {
                        "role-arn": f"arn:aws:iam::{DR}:role/{role_name}",
                        "external-id": names["external_id"],
                    },
                },
                "table-replications": [
                    {
                        "source-table": {"database-name": "sales", "table-name": "orders"},
                        "replica-table": {
                            "database-name": names["database"],
                            "table-location": f"s3://{names['bucket']}/orders",
                        },
                    }
                ],
            }
        )
    )
    settings_file = tmp_path / f"{environment}-settings.yml"
    settings_file.write_text(
        yaml.safe_dump(
            {
                "account": PRIMARY,
                "region": REGION,
                "replications": [
                    {"config": str(config), "read-locations": [names["read_location"]]}
                ],
                "write-locations": [f"s3://unused-{names['bucket']}/warehouse/"],
                "dr-account": {
                    "account": DR,
                    "region": REGION,
                    "role-name": role_name,
                    "buckets": [names["bucket"]],
                    "glue-databases": [names["database"]],
                    "external-id": names["external_id"],
                },
            }
        )
    )
    settings = load_settings(settings_file, environment)
    outputs = deploy_dr_account(settings, tmp_path / f"{environment}.out", local_runtime.endpoint)
    return outputs["RoleArn"]


@pytest.fixture
def accounts(local_runtime, unique, tmp_path):
    """The DR account's bucket, and its role as the DR stack of environment ``t<unique>``
    deploys it; the primary account's operator role, one of that environment's roles
    (``Ferry-t<unique>-…``); and a DR role of another environment's stack, which trusts
    only that environment's roles."""
    environment = f"t{unique}"
    operator_name = f"Ferry-{environment}-Operator"
    operator_arn = f"arn:aws:iam::{PRIMARY}:role/{operator_name}"
    names = {
        "bucket": f"dr-account-{unique}",
        "database": f"sales_{unique}_dr",
        "external_id": f"ferry-{unique}",
        "read_location": f"s3://primary-{unique}/sales/",
    }
    in_account("s3", DR).create_bucket(Bucket=names["bucket"])
    good = deploy_dr_stack(local_runtime, tmp_path, environment, f"ferry-dr-{unique}", names)
    other = deploy_dr_stack(
        local_runtime, tmp_path, f"o{unique}", f"ferry-dr-other-{unique}", names
    )
    iam = in_account("iam", PRIMARY)
    iam.create_role(
        RoleName=operator_name,
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": f"arn:aws:iam::{PRIMARY}:root"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
    )
    # What the primary stack grants its roles (infra/access.py): exactly the configured roles.
    iam.put_role_policy(
        RoleName=operator_name,
        PolicyName="assume-dr",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": [good, other]}
                ],
            }
        ),
    )
    credentials = in_account("sts", PRIMARY).assume_role(
        RoleArn=operator_arn, RoleSessionName="operator"
    )["Credentials"]
    return {
        **names,
        "good": good,
        "other": other,
        "operator": operator_arn,
        "environment": {
            "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
            "AWS_SESSION_TOKEN": credentials["SessionToken"],
        },
    }


def replicate(local_runtime, sample, accounts, write_config, tmp_path, role_arn):
    document = {
        "source-catalog": {"name": "onprem", "hive-metastore-uris": local_runtime.source_uri},
        "replica-catalog": {
            "name": "dr",
            "glue": {"region": REGION, "catalog-id": DR},
            "assume-role": {"role-arn": role_arn, "external-id": accounts["external_id"]},
        },
        "table-replications": [
            {
                "source-table": {"database-name": sample.database, "table-name": "orders"},
                "replica-table": {
                    "database-name": accounts["database"],
                    "table-location": f"s3://{accounts['bucket']}/orders",
                },
            }
        ],
    }
    return subprocess.run(
        [
            sys.executable, "-m", "ferry.commands.cli", "replicate", str(write_config(document)),
            "--home", str(tmp_path / "home"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **accounts["environment"]},
    )  # fmt: skip


def dr_objects(bucket: str) -> dict[str, int]:
    listed = in_account("s3", DR).list_objects_v2(Bucket=bucket).get("Contents", [])
    return {item["Key"]: item["Size"] for item in listed}


def test_the_replica_lands_in_the_dr_accounts_bucket_and_catalog_through_the_role(
    local_runtime, sample, accounts, write_config, tmp_path, source_catalog
):
    seen = len(denials(local_runtime))
    result = replicate(local_runtime, sample, accounts, write_config, tmp_path, accounts["good"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0].startswith(f"✓ {sample.database}.orders → ")

    # The replica is in the DR account's catalog, pointing at the DR account's bucket...
    glue = in_account("glue", DR)
    table = glue.get_table(DatabaseName=accounts["database"], Name="orders")["Table"]
    location = table["StorageDescriptor"]["Location"]
    assert location.startswith(f"s3://{accounts['bucket']}/orders/")
    partitions = glue.get_partitions(DatabaseName=accounts["database"], TableName="orders")
    assert len(partitions["Partitions"]) == 3
    # ... with every file of the source, byte for byte in size.
    source = sample.orders
    source_sizes = sorted(
        size
        for partition in source_catalog.list_partitions(source)
        for size in _sizes(partition.location)
    )
    assert sorted(dr_objects(accounts["bucket"]).values()) == source_sizes
    # Nothing went to the primary account's catalog, and nothing was refused on the way.
    primary = in_account("glue", PRIMARY)
    with pytest.raises(primary.exceptions.EntityNotFoundException):
        primary.get_database(Name=accounts["database"])
    assert denials(local_runtime)[seen:] == []


def test_a_role_whose_trust_does_not_name_ferrys_role_is_one_line_and_nothing_is_written(
    local_runtime, sample, accounts, write_config, tmp_path
):
    seen = len(denials(local_runtime))
    result = replicate(local_runtime, sample, accounts, write_config, tmp_path, accounts["other"])
    assert result.returncode != 0
    [line] = [line for line in result.stdout.splitlines() if accounts["other"] in line]
    assert f"Ferry may not assume {accounts['other']}" in line
    assert "AccessDenied" in line
    assert result.stderr == ""
    assert dr_objects(accounts["bucket"]) == {}
    glue = in_account("glue", DR)
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_database(Name=accounts["database"])
    refused = [d for d in denials(local_runtime)[seen:] if d["action"] == "sts:AssumeRole"]
    assert refused and refused[0]["caller"].startswith(
        accounts["operator"].replace(":iam::", ":sts::").replace(":role/", ":assumed-role/")
    )


def _sizes(location: str) -> list[int]:
    from ferry.storage import fs

    return [entry.size for entry in fs.list_files(location)]


def test_a_copy_that_outlives_one_sessions_credentials_keeps_working(local_runtime, accounts):
    """The role's credentials expire mid-copy (a clock the test moves): the next requests,
    boto3's and pyarrow's, sign with renewed ones, and every object lands."""
    now = [datetime.now(UTC)]
    operator = boto3.session.Session(
        aws_access_key_id=accounts["environment"]["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=accounts["environment"]["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=accounts["environment"]["AWS_SESSION_TOKEN"],
        region_name=REGION,
    )
    aws = AwsClients(session=operator, clock=lambda: now[0])
    role = AssumeRole(
        role_arn=accounts["good"],
        external_id=accounts["external_id"],
        session_duration=timedelta(minutes=15),  # STS's shortest
    )
    dr = aws.for_side(CatalogConfig(name="dr", glue=GlueSettings(catalog_id=DR), assume_role=role))
    files = file_systems.FileSystems(file_systems.S3Settings(endpoint=local_runtime.endpoint, region=REGION))
    bucket = accounts["bucket"]
    files.reach_bucket_with(bucket, dr)
    signed_with: list[str] = []
    client = files.s3_client(bucket)
    client.meta.events.register(
        "before-send.s3",
        lambda request, **_: signed_with.append(
            request.headers["Authorization"].decode().split("Credential=")[1].split("/")[0]
        ),
    )

    def copy_part(number: int) -> None:
        files.write_bytes(f"s3://{bucket}/copy/streamed-{number}", b"x" * (1000 + number))
        client.put_object(Bucket=bucket, Key=f"copy/put-{number}", Body=b"y" * number)

    copy_part(1)
    streamed_before = files.s3(bucket)
    credentials = credentials_of(dr.session)
    first_key = credentials.get_frozen_credentials().access_key
    now[0] += timedelta(minutes=20)  # the first credentials expired five minutes ago
    copy_part(2)
    assert credentials.sessions == 2
    renewed = credentials.get_frozen_credentials().access_key
    assert renewed != first_key
    assert signed_with == [first_key, renewed]
    assert files.s3(bucket) is not streamed_before  # pyarrow's file system was made again
    assert dr.client("glue", REGION).get_databases(CatalogId=DR) is not None
    assert dr_objects(bucket) == {
        "copy/streamed-1": 1001,
        "copy/put-1": 1,
        "copy/streamed-2": 1002,
        "copy/put-2": 2,
    }


@pytest.fixture
def reader_role(accounts, unique):
    """A DR role, trusted like the DR role, that may only read the DR bucket."""
    name = f"ferry-dr-reader-{unique}"
    dr_iam = in_account("iam", DR)
    dr_iam.create_role(
        RoleName=name,
        AssumeRolePolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [trust_statement(PRIMARY, ["*"])]}
        ),
    )
    bucket = accounts["bucket"]
    dr_iam.put_role_policy(
        RoleName=name,
        PolicyName="read-only",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": ["s3:GetObject", "s3:ListBucket"],
                        "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
                    }
                ],
            }
        ),
    )
    return f"arn:aws:iam::{DR}:role/{name}"


def spark_copy(tmp_path, bucket: str, role: AssumeRole, name: str) -> tuple[int, dict]:
    """The Spark job on a manifest of two local files into the DR bucket, with the role
    written beside the manifest as Plan writes it; its exit code and report."""
    from emr_jobs.copy_files import main
    from ferry.copying.copier import CopyTask, Manifest
    from ferry.copying.manifest import write_manifest
    from ferry.copying.side_credentials import SIDES_FILE

    run = tmp_path / name
    tasks = []
    for number in (1, 2):
        source = run / "source" / f"part-{number}"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_bytes(b"z" * (100 * number))
        tasks.append(CopyTask(source.as_uri(), f"s3://{bucket}/{name}/part-{number}", 100 * number))
    manifest = run / "manifest.json"
    write_manifest(manifest.as_uri(), Manifest(f"event-{name}", tuple(tasks)))
    (run / SIDES_FILE).write_text(json.dumps({bucket: role.model_dump(mode="json", by_alias=True)}))
    try:
        code = main(["--manifest", manifest.as_uri(), "--retries", "1"])
    except SystemExit as exit_:
        code = exit_.code
    return code, json.loads((run / "copy-report.json").read_text())


def test_the_spark_copy_writes_the_dr_bucket_with_the_role_written_beside_the_manifest(
    local_runtime, accounts, reader_role, spark, tmp_path
):
    bucket = accounts["bucket"]
    good = AssumeRole(role_arn=accounts["good"], external_id=accounts["external_id"])
    code, report = spark_copy(tmp_path, bucket, good, "spark")
    assert (code, report["failed"]) == (0, [])
    assert dr_objects(bucket) == {"spark/part-1": 100, "spark/part-2": 200}

    # The same job with a role that may not write: its writes are refused, as the role's.
    seen = len(denials(local_runtime))
    code, report = spark_copy(tmp_path, bucket, AssumeRole(role_arn=reader_role), "refused")
    assert code == 1 and len(report["failed"]) == 2
    refused = {d["caller"] for d in denials(local_runtime)[seen:] if d["action"] == "s3:PutObject"}
    assert refused and all(":assumed-role/ferry-dr-reader-" in caller for caller in refused)
    assert "refused/part-1" not in dr_objects(bucket)


def test_an_s3_copy_into_the_dr_bucket_reads_the_source_as_the_role_its_policy_allows(
    local_runtime, accounts, tmp_path, unique
):
    """S3 copies into the bucket the request goes to: the DR role writes, and reads the
    primary account's source, which only that bucket's policy can allow (cross-account)."""
    from ferry.copying.copier import CopyTask, Manifest
    from ferry.copying.manifest import read_batches, write_manifest
    from ferry.copying.side_credentials import SIDES_FILE
    from ferry.core.errors import CopyError
    from ferry.statemachine.replication_payloads import CopyBatchInput
    from ferry.states import s3_copy_batch
    from ferry.states.context import StateContext

    source_bucket = f"primary-{unique}"  # the environment's read location
    primary_s3 = in_account("s3", PRIMARY)
    primary_s3.create_bucket(Bucket=source_bucket)
    primary_s3.put_object(Bucket=source_bucket, Key="sales/part-0", Body=b"s" * 300)
    manifest = tmp_path / "run" / "manifest.json"
    manifest.parent.mkdir()
    target = f"s3://{accounts['bucket']}/server-side/part-0"
    write_manifest(
        manifest.as_uri(),
        Manifest("event-s3", (CopyTask(f"s3://{source_bucket}/sales/part-0", target, 300),)),
    )
    role = AssumeRole(role_arn=accounts["good"], external_id=accounts["external_id"])
    (manifest.parent / SIDES_FILE).write_text(
        json.dumps({accounts["bucket"]: role.model_dump(mode="json", by_alias=True)})
    )
    operator = boto3.session.Session(
        aws_access_key_id=accounts["environment"]["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=accounts["environment"]["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=accounts["environment"]["AWS_SESSION_TOKEN"],
        region_name=REGION,
    )
    context = StateContext(fs.local_uri(tmp_path / "work"), AwsClients(session=operator))
    payload = CopyBatchInput(
        event_id="event-s3",
        manifest_uri=manifest.as_uri(),
        batch=read_batches(manifest.as_uri())[0],
    )

    # The DR stack lets the role read the source (the replication's read-locations);
    # across accounts, the source bucket's policy must allow it too.
    seen = len(denials(local_runtime))
    with pytest.raises(CopyError, match="cannot read source file .*: 403"):
        s3_copy_batch.run(context, payload)  # the source bucket's policy does not name the DR role
    refused = [d for d in denials(local_runtime)[seen:] if d["action"] == "s3:GetObject"]
    assert refused and ":assumed-role/ferry-dr-" in refused[0]["caller"]
    assert "server-side/part-0" not in dr_objects(accounts["bucket"])

    primary_s3.put_bucket_policy(
        Bucket=source_bucket,
        Policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": accounts["good"]},
                        "Action": "s3:GetObject",
                        "Resource": f"arn:aws:s3:::{source_bucket}/sales/*",
                    }
                ],
            }
        ),
    )
    result = s3_copy_batch.run(context, payload)
    assert (result.files, result.bytes) == (1, 300)
    assert dr_objects(accounts["bucket"])["server-side/part-0"] == 300


def deployed_run(run, local_runtime, sample, names, role):
    return run(
        {
            "source-catalog": {"name": "onprem", "hive-metastore-uris": local_runtime.source_uri},
            "replica-catalog": {
                "name": "dr",
                "glue": {"region": REGION, "catalog-id": DR},
                "assume-role": {"role-arn": role, "external-id": names["external_id"]},
            },
            "table-replications": [
                {
                    "source-table": {"database-name": sample.database, "table-name": "orders"},
                    "replica-table": {
                        "database-name": names["database"],
                        "table-location": f"s3://{names['bucket']}/orders",
                    },
                }
            ],
        }
    )


def test_the_deployed_pipeline_refuses_a_dr_role_of_another_environment_and_writes_nothing(
    run, local_runtime, sample, unique, tmp_path
):
    names = {
        "bucket": f"dracct-{unique}",
        "database": f"sales_{unique}_dr",
        "external_id": f"ferry-{unique}",
        "read_location": f"s3://src-{unique}/sales/",
    }
    in_account("s3", DR).create_bucket(Bucket=names["bucket"])
    # The DR stack of environment "prod": it trusts Ferry-prod-* only.
    role = deploy_dr_stack(local_runtime, tmp_path, "prod", f"ferry-dr-{unique}", names)
    outcome = deployed_run(run, local_runtime, sample, names, role)
    assert outcome.status == "FAILED"
    assert f"Ferry may not assume {role}" in json.dumps(outcome.cause)
    assert dr_objects(names["bucket"]) == {}
    glue = in_account("glue", DR)
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_database(Name=names["database"])


def test_the_deployed_pipeline_replicates_into_the_dr_account_through_the_role(
    run, local_runtime, sample, unique, tmp_path, source_catalog
):
    """The state machine of the local environment: its functions, each under its own role,
    assume the DR role of the local environment's DR stack (trusting ``Ferry-local-*``)."""
    names = {
        # Not a write location of the local environment (s3://dr-*/): only the role writes it.
        "bucket": f"dracct-{unique}",
        "database": f"sales_{unique}_dr",
        "external_id": f"ferry-{unique}",
        "read_location": f"s3://src-{unique}/sales/",
    }
    in_account("s3", DR).create_bucket(Bucket=names["bucket"])
    role = deploy_dr_stack(local_runtime, tmp_path, "local", f"ferry-dr-{unique}", names)
    seen = len(denials(local_runtime))
    outcome = deployed_run(run, local_runtime, sample, names, role)
    assert outcome.status == "SUCCEEDED", (outcome, denials(local_runtime)[seen:])
    glue = in_account("glue", DR)
    table = glue.get_table(DatabaseName=names["database"], Name="orders")["Table"]
    assert table["StorageDescriptor"]["Location"].startswith(f"s3://{names['bucket']}/orders/")
    sizes = sorted(
        entry.size
        for partition in source_catalog.list_partitions(sample.orders)
        for entry in fs.list_files(partition.location)
    )
    assert sorted(dr_objects(names["bucket"]).values()) == sizes
    assert [d for d in denials(local_runtime)[seen:] if "ferry-dr-" in d["resource"]] == []
