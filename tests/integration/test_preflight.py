"""The dry run's write check against S3 (the AWS emulator): no probe and no folder marker left."""

from __future__ import annotations

import pytest

from ferry.core.errors import TargetNotWritableError
from ferry.planning.preflight import check_writable

pytestmark = pytest.mark.integration


def keys(aws, bucket) -> list[str]:
    return [o["Key"] for o in aws["s3"].list_objects_v2(Bucket=bucket).get("Contents", [])]


def test_a_new_s3_location_is_writable_and_left_empty(aws, bucket):
    check_writable(f"s3://{bucket}/warehouse/sales_dr/orders", aws["s3"])
    assert keys(aws, bucket) == []  # pyarrow's delete would have left "…/orders/" behind


def test_an_existing_s3_location_keeps_its_snapshots(aws, bucket):
    aws["s3"].put_object(Bucket=bucket, Key="orders/ferry-1/part-0", Body=b"data")
    check_writable(f"s3a://{bucket}/orders")
    assert keys(aws, bucket) == ["orders/ferry-1/part-0"]


def test_a_missing_bucket_is_not_writable(aws, unique):
    with pytest.raises(TargetNotWritableError) as raised:
        check_writable(f"s3://no-such-bucket-{unique}/orders", aws["s3"])
    [line] = str(raised.value).splitlines()
    assert line.startswith(
        f"cannot write replica table location s3://no-such-bucket-{unique}/orders: "
    )
    assert "bucket does not exist" in line
