"""The work bucket (plans, manifests, copy reports, Spark logs: never table data) and the
bucket of its access logs."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.removal import KEEP

#: What the pipeline writes in the work bucket, and for how long it is kept.
RUNS_PREFIX = "runs/"  # runs/<event-id>/plan.json, manifest.json, copied/, copy-report.json
SPARK_LOGS_PREFIX = "spark-logs/"  # EMR Serverless job logs
CONFIGS_PREFIX = "configs/"  # configs uploaded by `ferry execute --state-machine-arn`
HOUSEKEEPING_PREFIX = "housekeeping/"  # housekeeping/<id>.json: what each housekeeping did
RUNS_RETENTION_DAYS = 30
SPARK_LOGS_RETENTION_DAYS = 30


class WorkBucket(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, key: kms.IKey, access_log_days: int):
        super().__init__(scope, construct_id)
        # Server access logs cannot be delivered to a bucket encrypted with a customer key:
        # the log bucket uses S3-managed keys.
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(access_log_days))],
            removal_policy=KEEP,
        )
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=key,
            bucket_key_enabled=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=False,  # runs are immutable and named by event; nothing is overwritten
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="work/",
            lifecycle_rules=[
                # A run's files are evidence of what it copied: kept a month, then gone.
                s3.LifecycleRule(
                    id="runs", prefix=RUNS_PREFIX, expiration=Duration.days(RUNS_RETENTION_DAYS)
                ),
                s3.LifecycleRule(
                    id="configs",
                    prefix=CONFIGS_PREFIX,
                    expiration=Duration.days(RUNS_RETENTION_DAYS),
                ),
                s3.LifecycleRule(
                    id="housekeeping",
                    prefix=HOUSEKEEPING_PREFIX,
                    expiration=Duration.days(RUNS_RETENTION_DAYS),
                ),
                s3.LifecycleRule(
                    id="spark-logs",
                    prefix=SPARK_LOGS_PREFIX,
                    expiration=Duration.days(SPARK_LOGS_RETENTION_DAYS),
                ),
                s3.LifecycleRule(
                    id="incomplete-uploads",
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                ),
            ],
            removal_policy=KEEP,
        )

    @property
    def work_uri(self) -> str:
        return f"s3://{self.bucket.bucket_name}"
