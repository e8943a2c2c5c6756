"""The DR account's buckets: the policies the replica side needs, on the buckets the DR
stack creates, and as statements to merge for the buckets it does not own.

Two kinds of principal use a DR bucket (``dr-account.buckets``):

- the DR role (``infra/dr_account.py``) reads, writes, lists and deletes the replica side's
  objects: the same actions its own policy grants;
- the primary account's Ferry roles (``aws:PrincipalArn`` ``Ferry-<env>-*``) read objects:
  failback copies DR's files home with an S3 server-side copy signed with Ferry's own role,
  and across accounts the bucket's policy must allow what the role's policy does. They list
  nothing: listings go through the DR role.

A bucket with ``create: true`` is the stack's: versioning off as the work bucket's (a
replication writes each snapshot to a new folder and never overwrites an object), public
access blocked, TLS only, its access logs in a log bucket of the stack, and, with ``kms``,
SSE-KMS with the stack's rotated key, whose policy leaves administration to the account and
lets the DR role and the primary Ferry roles use it through S3 only (``kms:ViaService``).

A bucket of the account's own gets no policy resource: one would replace the policy its
operator keeps. The stack outputs, per such bucket, the statements to merge into it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.access import S3_READ, S3_WRITE
from infra.removal import KEEP

#: Object actions of the replica side: read (compare, verify), write (new snapshots), delete
#: (a failed copy's objects, retired snapshots).
S3_OBJECTS = (*S3_READ, *S3_WRITE, "s3:DeleteObject")
#: Bucket actions: listing (plans, verification), and the bucket's region (HeadBucket asks
#: ``s3:ListBucket``).
S3_BUCKETS = ("s3:ListBucket", "s3:GetBucketLocation")
#: What S3 does with a bucket's KMS key for the DR role (SSE-KMS): write and read.
KMS_THROUGH_S3 = ("kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey")
#: What the primary Ferry roles read: objects, decrypted by S3 for them.
PRIMARY_READ = ("s3:GetObject",)
PRIMARY_KMS = ("kms:Decrypt",)


def primary_role_pattern(account: str, environment: str) -> str:
    """The ARNs of an environment's roles in its account: the CDK names each role after its
    stack (``Ferry-<environment>-<construct>-<suffix>``)."""
    return f"arn:aws:iam::{account}:role/Ferry-{environment}-*"


def _primary_roles(primary_account: str, environment: str) -> dict[str, Any]:
    """The principal and condition of the primary account's Ferry roles."""
    return {
        "Principal": {"AWS": f"arn:aws:iam::{primary_account}:root"},
        "Condition": {
            "ArnLike": {"aws:PrincipalArn": primary_role_pattern(primary_account, environment)}
        },
    }


def bucket_statements(
    bucket: str, dr_role_arn: str, primary_account: str, environment: str
) -> list[dict[str, Any]]:
    """The statements of a DR bucket's policy that the replica side needs: the DR role's
    objects and listing, the primary Ferry roles' reads."""
    objects, whole = f"arn:aws:s3:::{bucket}/*", f"arn:aws:s3:::{bucket}"
    primary = _primary_roles(primary_account, environment)
    return [
        {
            "Sid": "FerryDrRoleObjects",
            "Effect": "Allow",
            "Principal": {"AWS": dr_role_arn},
            "Action": list(S3_OBJECTS),
            "Resource": objects,
        },
        {
            "Sid": "FerryDrRoleBucket",
            "Effect": "Allow",
            "Principal": {"AWS": dr_role_arn},
            "Action": list(S3_BUCKETS),
            "Resource": whole,
        },
        {
            "Sid": "FerryPrimaryRolesRead",
            "Effect": "Allow",
            "Principal": primary["Principal"],
            "Action": list(PRIMARY_READ),
            "Resource": objects,
            "Condition": primary["Condition"],
        },
    ]


def key_statements(
    region: str, dr_role_arn: str, primary_account: str, environment: str
) -> list[dict[str, Any]]:
    """The statements of the DR buckets' key beside the account's administration: the DR
    role and the primary Ferry roles, through S3 only. In a key policy "*" is the key."""
    through_s3 = {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}}
    primary = _primary_roles(primary_account, environment)
    return [
        {
            "Sid": "FerryDrRoleThroughS3",
            "Effect": "Allow",
            "Principal": {"AWS": dr_role_arn},
            "Action": list(KMS_THROUGH_S3),
            "Resource": "*",
            "Condition": through_s3,
        },
        {
            "Sid": "FerryPrimaryRolesThroughS3",
            "Effect": "Allow",
            "Principal": primary["Principal"],
            "Action": list(PRIMARY_KMS),
            "Resource": "*",
            "Condition": {**primary["Condition"], **through_s3},
        },
    ]


def output_id(bucket: str, taken: set[str]) -> str:
    """The stack output of an existing bucket's statements: ``PolicyFor`` and the bucket's
    name in CamelCase (outputs are alphanumeric), numbered when two names spell the same."""
    camel = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^a-z0-9]+", bucket))
    candidate, number = f"PolicyFor{camel}", 2
    while candidate in taken:
        candidate, number = f"PolicyFor{camel}{number}", number + 1
    taken.add(candidate)
    return candidate


class DrBuckets(Construct):
    """The DR buckets of one environment: created ones with their policies (and key), and an
    output of the statements to merge for each existing one."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: Any, role: iam.IRole):
        super().__init__(scope, construct_id)
        dr = settings.dr_account
        stack = cdk.Stack.of(self)
        created = [bucket for bucket in dr.buckets if bucket.create]
        # The literal ARN the settings name (the output's statements must be plain JSON); the
        # policies wait for the role, since S3 and KMS refuse a principal that does not exist.
        role_arn = dr.role_arn
        self.key: kms.Key | None = None
        if any(bucket.kms for bucket in created):
            self.key = kms.Key(
                self,
                "Key",
                alias=f"alias/ferry-{settings.name}-dr",
                description=f"Ferry {settings.name}: the DR buckets the DR stack creates",
                enable_key_rotation=True,
                removal_policy=KEEP,
            )
            for statement in key_statements(dr.region, role_arn, settings.account, settings.name):
                self.key.add_to_resource_policy(iam.PolicyStatement.from_json(statement))
            self.key.node.add_dependency(role)
            cdk.CfnOutput(stack, "KeyArn", value=self.key.key_arn)
        self.buckets: dict[str, s3.Bucket] = {}
        if created:
            # Server access logs cannot be delivered to a bucket encrypted with a customer key:
            # the log bucket uses S3-managed keys.
            self.access_logs = s3.Bucket(
                self,
                "AccessLogs",
                encryption=s3.BucketEncryption.S3_MANAGED,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                enforce_ssl=True,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
                lifecycle_rules=[
                    s3.LifecycleRule(expiration=Duration.days(settings.log_retention_days))
                ],
                removal_policy=KEEP,
            )
        for bucket in created:
            made = s3.Bucket(
                self,
                bucket.name,
                bucket_name=bucket.name,
                encryption=s3.BucketEncryption.KMS
                if bucket.kms
                else s3.BucketEncryption.S3_MANAGED,
                encryption_key=self.key if bucket.kms else None,
                bucket_key_enabled=True if bucket.kms else None,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                enforce_ssl=True,
                versioned=False,  # snapshots go to new folders; nothing is overwritten
                server_access_logs_bucket=self.access_logs,
                server_access_logs_prefix=f"{bucket.name}/",
                lifecycle_rules=[
                    s3.LifecycleRule(
                        id="incomplete-uploads",
                        abort_incomplete_multipart_upload_after=Duration.days(1),
                    )
                ],
                removal_policy=KEEP,
            )
            for statement in bucket_statements(
                bucket.name, role_arn, settings.account, settings.name
            ):
                made.add_to_resource_policy(iam.PolicyStatement.from_json(statement))
            assert made.policy is not None  # enforce_ssl made it
            made.policy.node.add_dependency(role)
            self.buckets[bucket.name] = made
        taken: set[str] = set()
        for bucket in dr.buckets:
            if bucket.create:
                continue
            statements = bucket_statements(bucket.name, role_arn, settings.account, settings.name)
            cdk.CfnOutput(
                stack,
                output_id(bucket.name, taken),
                description=f"Statements to merge into the policy of the bucket {bucket.name}",
                value=json.dumps(statements, separators=(",", ":")),
            )
