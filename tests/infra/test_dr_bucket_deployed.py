"""A DR bucket the DR stack creates (``infra/dr_buckets.py``), deployed with the stack into
the emulator's DR account (``ferry.local.accounts``): every request below is authorized by
the emulator under the deployed policies. The DR role writes the replica side; Ferry's role
of the primary account reads its objects, as failback's copy home does; no other role of
the primary account reads them, even one its own policy allows."""

from __future__ import annotations

import json

import boto3
import pytest
import yaml
from botocore.exceptions import ClientError

from ferry.local.accounts import deploy_dr_account, in_account
from infra.settings import load_settings

pytestmark = pytest.mark.infra

PRIMARY, DR, REGION = "123456789012", "210987654321", "us-east-1"


def admin(service: str, account: str):
    return in_account(boto3.client(service, region_name=REGION), account)


def role_session(name: str, policy: dict) -> boto3.session.Session:
    """A session of a new role ``name`` of the primary account, with ``policy`` its own."""
    iam = admin("iam", PRIMARY)
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{PRIMARY}:root"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))
    iam.put_role_policy(RoleName=name, PolicyName="own", PolicyDocument=json.dumps(policy))
    credentials = admin("sts", PRIMARY).assume_role(
        RoleArn=f"arn:aws:iam::{PRIMARY}:role/{name}", RoleSessionName="test"
    )["Credentials"]
    return boto3.session.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=REGION,
    )


@pytest.fixture
def dr_bucket(local_runtime, unique, tmp_path):
    """The DR stack of environment ``t<unique>``, its bucket created with the stack's key,
    deployed into the DR account; its outputs and the bucket's name."""
    environment, bucket = f"t{unique}", f"dr-made-{unique}"
    config = tmp_path / "sales-dr.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "source-catalog": {"name": "onprem", "hive-metastore-uris": "thrift://h:9083"},
                "replica-catalog": {
                    "name": "dr",
                    "glue": {"region": REGION, "catalog-id": DR},
                    "assume-role": {
                        "role-arn": f"arn:aws:iam::{DR}:role/ferry-dr-{unique}",
                        "external-id": f"ferry-{unique}",
                    },
                },
                "table-replications": [
                    {
                        "source-table": {"database-name": "sales", "table-name": "orders"},
                        "replica-table": {"table-location": f"s3://{bucket}/orders"},
                    }
                ],
            }
        )
    )
    settings = tmp_path / "settings.yml"
    settings.write_text(
        yaml.safe_dump(
            {
                "account": PRIMARY,
                "region": REGION,
                "replications": [
                    {"config": str(config), "read-locations": [f"s3://src-{unique}/sales/"]}
                ],
                "write-locations": [f"s3://unused-{unique}/warehouse/"],
                "dr-account": {
                    "account": DR,
                    "region": REGION,
                    "role-name": f"ferry-dr-{unique}",
                    "buckets": [{"name": bucket, "create": True, "kms": True}],
                    "external-id": f"ferry-{unique}",
                },
            }
        )
    )
    outputs = deploy_dr_account(
        load_settings(settings, environment), tmp_path / "out", local_runtime.endpoint
    )
    return {**outputs, "bucket": bucket, "environment": environment, "unique": unique}


def test_the_dr_role_writes_the_created_bucket_and_only_ferrys_primary_role_reads_it(dr_bucket):
    bucket, unique = dr_bucket["bucket"], dr_bucket["unique"]
    # The bucket is the stack's, encrypted with its key.
    [rule] = admin("s3", DR).get_bucket_encryption(Bucket=bucket)[
        "ServerSideEncryptionConfiguration"
    ]["Rules"]
    assert rule["ApplyServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms",
        "KMSMasterKeyID": dr_bucket["KeyArn"],
    }
    # Ferry's role of the primary account (Ferry-<env>-…) and another role, both allowed
    # by their own policies to assume the DR role, to read and write the bucket and to
    # decrypt with its key (across accounts, both sides' policies must allow a request).
    own = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": dr_bucket["RoleArn"]},
            {
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject"],
                "Resource": f"arn:aws:s3:::{bucket}/*",
            },
            {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": dr_bucket["KeyArn"]},
        ],
    }
    ferry = role_session(f"Ferry-{dr_bucket['environment']}-Operator", own)
    analytics = role_session(f"analytics-{unique}", own)

    # The DR role writes the replica side.
    credentials = ferry.client("sts").assume_role(
        RoleArn=dr_bucket["RoleArn"], RoleSessionName="dr", ExternalId=f"ferry-{unique}"
    )["Credentials"]
    dr_role = boto3.client(
        "s3",
        region_name=REGION,
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    dr_role.put_object(Bucket=bucket, Key="orders/e1/part-0", Body=b"replica bytes")

    # Failback's copy home reads it as Ferry's own role; nothing else of that role's.
    read = ferry.client("s3").get_object(Bucket=bucket, Key="orders/e1/part-0")
    assert read["Body"].read() == b"replica bytes"
    with pytest.raises(ClientError, match="AccessDenied"):
        ferry.client("s3").put_object(Bucket=bucket, Key="orders/e1/part-1", Body=b"x")
    # Another role of the primary account reads nothing.
    with pytest.raises(ClientError, match="AccessDenied"):
        analytics.client("s3").get_object(Bucket=bucket, Key="orders/e1/part-0")
