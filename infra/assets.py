"""The bundles of ``infra/bundling.py`` as CDK assets: the Lambda functions' code and the
Spark job's entry point and packed environment.

The CDK's local bundling of a cached build always succeeds, so Docker is never started; each
asset's hash is its bundle's key, so a synth is reproducible.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import (
    AssetHashType,
    BundlingOptions,
    BundlingOutput,
    DockerImage,
    ILocalBundling,
    aws_lambda,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from infra.access import allow
from infra.bundling import (
    EMR_ENVIRONMENT,
    ROOT,
    SPARK_JOB_ENTRY_POINT,
    build_emr_archive,
    build_lambda_bundle,
    emr_archive_key,
    lambda_bundle_key,
)


def _link_or_copy(source: str, destination: str) -> None:
    """Hard-link a cached file into the CDK's output (instant); copy across file systems."""
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


@jsii.implements(ILocalBundling)
class _LocalBuild:
    """The CDK's local bundling of a cached build: the build's output goes into the asset."""

    def __init__(self, build: Callable[[], Path]):
        self._build = build

    def try_bundle(self, output_dir: str, options: Any) -> bool:
        built = self._build()
        if built.is_dir():
            shutil.copytree(built, output_dir, dirs_exist_ok=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(built), os.path.join(output_dir, built.name))
        return True


def _bundling(build: Callable[[], Path], **options: Any) -> BundlingOptions:
    # The CDK requires an image, but local bundling always succeeds, so it is never pulled.
    return BundlingOptions(
        image=DockerImage.from_registry("unused"), local=_LocalBuild(build), **options
    )


def lambda_code() -> aws_lambda.Code:
    """The code asset of every Lambda function (handlers ``lambdas.<state>.handler``)."""
    return aws_lambda.Code.from_asset(
        str(ROOT / "lambdas"),
        bundling=_bundling(build_lambda_bundle),
        asset_hash=lambda_bundle_key(),
        asset_hash_type=AssetHashType.CUSTOM,
    )


class SparkJobAssets(Construct):
    """The Spark copy job on S3: its entry point and the packed environment it runs in."""

    def __init__(self, scope: Construct, construct_id: str):
        super().__init__(scope, construct_id)
        self.entry_point = s3_assets.Asset(self, "EntryPoint", path=str(SPARK_JOB_ENTRY_POINT))
        self.environment = s3_assets.Asset(
            self,
            "Environment",
            path=str(ROOT / "emr_jobs"),
            bundling=_bundling(build_emr_archive, output_type=BundlingOutput.ARCHIVED),
            asset_hash=emr_archive_key(),
            asset_hash_type=AssetHashType.CUSTOM,
        )

    @property
    def entry_point_uri(self) -> str:
        """``s3://...`` of ``emr_jobs/copy_files.py``: the job run's ``entryPoint``."""
        return self.entry_point.s3_object_url

    @property
    def archive_uri(self) -> str:
        """``s3://....tgz`` of the packed environment."""
        return self.environment.s3_object_url

    def submit_parameters(self) -> str:
        """The job run's ``sparkSubmitParameters``: the environment and its interpreter."""
        python = f"./{EMR_ENVIRONMENT}/bin/python"
        settings = {
            "spark.archives": f"{self.archive_uri}#{EMR_ENVIRONMENT}",
            "spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON": python,
            "spark.emr-serverless.driverEnv.PYSPARK_PYTHON": python,
            "spark.emr-serverless.executorEnv.PYSPARK_PYTHON": python,
        }
        return " ".join(f"--conf {name}={value}" for name, value in settings.items())

    def grant_read(self, grantee: iam.IGrantable) -> None:
        """Let ``grantee`` (the job's execution role) read the entry point and the environment."""
        allow(  # exactly these two objects of the assets bucket
            grantee,
            ["s3:GetObject"],
            [
                a.bucket.arn_for_objects(a.s3_object_key)
                for a in (self.entry_point, self.environment)
            ],
        )
