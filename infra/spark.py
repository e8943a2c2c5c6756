"""The EMR Serverless application of the Spark copy, its job role and its code.

The application starts on the first job and stops after the settings' idle timeout; its
capacity is capped by the environment's settings. The job role may read the source data,
write below the write locations, and read and write its run's files in the work bucket.
"""

from __future__ import annotations

from aws_cdk import aws_emrserverless as emr
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra import bundling
from infra.access import DataAccess, allow_prefix, trusted_service
from infra.assets import SparkJobAssets
from infra.encryption import Encryption
from infra.settings import EnvironmentSettings
from infra.storage import RUNS_PREFIX, SPARK_LOGS_PREFIX, WorkBucket


class SparkCopy(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        encryption: Encryption,
        work: WorkBucket,
        access: DataAccess,
    ):
        super().__init__(scope, construct_id)
        capacity = settings.spark
        network = settings.network
        self.application = emr.CfnApplication(
            self,
            "Application",
            name=f"ferry-{settings.name}-copy",
            release_label=bundling.EMR_RELEASE_LABEL,
            type="SPARK",
            architecture="X86_64",
            auto_start_configuration=emr.CfnApplication.AutoStartConfigurationProperty(
                enabled=True
            ),
            auto_stop_configuration=emr.CfnApplication.AutoStopConfigurationProperty(
                enabled=True, idle_timeout_minutes=capacity.idle_timeout_minutes
            ),
            maximum_capacity=emr.CfnApplication.MaximumAllowedResourcesProperty(
                cpu=f"{capacity.maximum_vcpu} vCPU",
                memory=f"{capacity.maximum_memory_gb} GB",
                disk=f"{capacity.maximum_disk_gb} GB",
            ),
            network_configuration=(
                emr.CfnApplication.NetworkConfigurationProperty(
                    subnet_ids=network.subnet_ids, security_group_ids=network.security_group_ids
                )
                if network
                else None
            ),
            monitoring_configuration=emr.CfnApplication.MonitoringConfigurationProperty(
                s3_monitoring_configuration=emr.CfnApplication.S3MonitoringConfigurationProperty(
                    log_uri=f"{work.work_uri}/{SPARK_LOGS_PREFIX}",
                    encryption_key_arn=encryption.key.key_arn,
                )
            ),
        )
        self.job_role = iam.Role(
            self,
            "JobRole",
            # Only this application's job runs (EMR Serverless names the application).
            assumed_by=trusted_service(
                "emr-serverless.amazonaws.com",
                settings.account,
                [self.application.attr_arn, f"{self.application.attr_arn}/jobruns/*"],
            ),
            description=f"Ferry {settings.name}: the Spark copy job",
        )
        self.assets = SparkJobAssets(self, "Job")
        self.assets.grant_read(self.job_role)
        encryption.grant_use(self.job_role)
        access.read_data(self.job_role)
        access.write_replicas(self.job_role)
        access.delete_replicas(self.job_role)  # an object that fails verification is removed
        # Failback's reverse run copies into the sources, as the settings allow (or not).
        access.write_sources(self.job_role, data=True, delete=True, catalog=False)
        access.assume_side_roles(self.job_role)  # a replica bucket in another account
        allow_prefix(
            self.job_role, work.bucket.bucket_arn, RUNS_PREFIX, ("s3:GetObject", "s3:PutObject")
        )
        allow_prefix(self.job_role, work.bucket.bucket_arn, SPARK_LOGS_PREFIX, ("s3:PutObject",))

    @property
    def application_arn(self) -> str:
        return self.application.attr_arn

    @property
    def application_id(self) -> str:
        return self.application.attr_application_id
