"""The work bucket: manifests of files to copy and copy reports, never table data."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

MANIFEST_PREFIX = "manifests/"
MANIFEST_RETENTION_DAYS = 30


class WorkBucket(Construct):
    def __init__(self, scope: Construct, construct_id: str):
        super().__init__(scope, construct_id)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            # Manifests are evidence of what a replication copied: keep them a while, then go.
            lifecycle_rules=[
                s3.LifecycleRule(
                    prefix=MANIFEST_PREFIX, expiration=Duration.days(MANIFEST_RETENTION_DAYS)
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
