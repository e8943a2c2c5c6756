"""State `Copy batch` (``ferry/states/s3_copy_batch.py``): one batch of the manifest copied
server-side, S3 to S3, in the emulator; every object arrives with its size."""

from __future__ import annotations

import boto3
import pytest

from ferry.states import s3_copy_batch
from ferry.states.context import StateContext

pytestmark = pytest.mark.integration

OBJECTS = {"part-00000.parquet": 1187, "part-00001.parquet": 1203}


def test_a_batch_is_copied_server_side_with_every_object(local_runtime, unique):
    s3 = boto3.client("s3")
    source, target, work = f"landing-{unique}", f"dr-{unique}", f"work-{unique}"
    for bucket in (source, target, work):
        s3.create_bucket(Bucket=bucket)
    for name, size in OBJECTS.items():
        s3.put_object(Bucket=source, Key=f"orders/dt=2026-11-21/{name}", Body=b"x" * size)
    event_id = "ferry-20261121t083000000z-9c8d7e6f"

    result = s3_copy_batch.run(
        StateContext(f"s3://{work}"),
        {
            "eventId": event_id,
            "manifestUri": f"s3://{work}/runs/{event_id}/manifest.json",
            "copierOptions": {"threads": 2},
            "batch": {
                "eventId": event_id,
                "batch": 0,
                "roots": [
                    {
                        "source": f"s3://{source}/orders/dt=2026-11-21",
                        "target": f"s3://{target}/orders/{event_id}/dt=2026-11-21",
                        "files": [[name, size] for name, size in OBJECTS.items()],
                    }
                ],
            },
            "attempt": 0,
        },
    )

    assert (result.files, result.bytes, result.resumed) == (2, sum(OBJECTS.values()), 0)
    listed = s3.list_objects_v2(Bucket=target)["Contents"]
    assert {o["Key"].rsplit("/", 1)[1]: o["Size"] for o in listed} == OBJECTS
    assert all(o["Key"].startswith(f"orders/{event_id}/") for o in listed)
