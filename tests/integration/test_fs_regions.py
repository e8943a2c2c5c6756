"""S3 buckets in two regions, in one process: each bucket is used through its own region."""

from __future__ import annotations

import os

import boto3
import pytest

from emr_jobs.copy_files import copy_manifest
from ferry.copying.copier import CopyTask, InlineCopier, Manifest
from ferry.copying.spark_tasks import CopyWithSettings
from ferry.storage import fs
from ferry.storage.file_systems import FileSystems, S3Settings

pytestmark = pytest.mark.integration

MiB = 1024 * 1024
EAST, WEST = "us-east-1", "us-west-2"


def test_an_inline_copy_from_us_east_1_to_us_west_2_writes_the_exact_bytes(local_runtime, unique):
    east_s3, west_s3 = boto3.client("s3", region_name=EAST), boto3.client("s3", region_name=WEST)
    east, west = f"landing-{unique}", f"dr-west-{unique}"
    east_s3.create_bucket(Bucket=east)
    west_s3.create_bucket(Bucket=west, CreateBucketConfiguration={"LocationConstraint": WEST})
    files = {
        "dt=2026-11-20/part-00000.parquet": os.urandom(3 * MiB + 17),  # several chunks
        "dt=2026-11-21/part-00000.parquet": os.urandom(1000),
        "dt=2026-11-21/_SUCCESS": b"",
    }
    for key, data in files.items():
        east_s3.put_object(Bucket=east, Key=f"orders/{key}", Body=data)
    manifest = Manifest(
        "e1",
        tuple(
            CopyTask(f"s3://{east}/orders/{key}", f"s3://{west}/orders/e1/{key}", len(data))
            for key, data in files.items()
        ),
    )

    InlineCopier(threads=4, chunk_size=MiB).copy(manifest)

    for key, data in files.items():
        assert west_s3.get_object(Bucket=west, Key=f"orders/e1/{key}")["Body"].read() == data
        assert fs.read_bytes(f"s3://{west}/orders/e1/{key}") == data
        assert fs.read_bytes(f"s3://{east}/orders/{key}") == data
    assert {entry.uri: entry.size for entry in fs.list_files(f"s3://{west}/orders/e1")} == {
        f"s3://{west}/orders/e1/{key}": len(data) for key, data in files.items()
    }
    # AWS refuses a request for a bucket signed for another region; moto does not check, so
    # look at which region's file system each bucket was read and written through.
    assert fs.resolve(f"s3://{east}/orders")[0].region == EAST
    assert fs.resolve(f"s3://{west}/orders")[0].region == WEST
    assert fs.default().region_of(west) == WEST


def test_a_missing_bucket_gets_the_default_region_until_it_exists(local_runtime, unique):
    file_systems = FileSystems(S3Settings(local_runtime.endpoint, EAST))
    bucket = f"later-{unique}"
    assert file_systems.region_of(bucket) == EAST
    boto3.client("s3", region_name=WEST).create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": WEST}
    )
    assert file_systems.region_of(bucket) == WEST
    file_systems.write_bytes(f"s3://{bucket}/a", b"written through us-west-2")
    assert file_systems.read_bytes(f"s3://{bucket}/a") == b"written through us-west-2"


@pytest.mark.spark
def test_spark_workers_copy_between_regions_with_the_drivers_settings(local_runtime, spark, unique):
    # Spark's Python workers never run the job's main(): the copy function carries the
    # settings. Without them a worker would look for the buckets on AWS itself.
    east_s3, west_s3 = boto3.client("s3", region_name=EAST), boto3.client("s3", region_name=WEST)
    east, west = f"spark-landing-{unique}", f"spark-dr-west-{unique}"
    east_s3.create_bucket(Bucket=east)
    west_s3.create_bucket(Bucket=west, CreateBucketConfiguration={"LocationConstraint": WEST})
    files = {f"dt=2026-11-2{day}/part-00000.parquet": os.urandom(70_001 * day) for day in (0, 1, 2)}
    for key, data in files.items():
        east_s3.put_object(Bucket=east, Key=f"orders/{key}", Body=data)
    manifest = Manifest(
        "e1",
        tuple(
            CopyTask(f"s3://{east}/orders/{key}", f"s3://{west}/orders/e1/{key}", len(data))
            for key, data in files.items()
        ),
    )

    settings = S3Settings.from_environment(local_runtime.environment())
    report = copy_manifest(spark, manifest, tasks=2, copy=CopyWithSettings(settings))

    assert report["failed"] == [] and report["copied"] == len(files)
    for key, data in files.items():
        assert west_s3.get_object(Bucket=west, Key=f"orders/e1/{key}")["Body"].read() == data
