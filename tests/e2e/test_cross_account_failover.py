"""Failover and failback with the replica side in another AWS account, through the DR role.

The source is the primary account's Glue catalog with its data in the primary account's
bucket; the replica is the DR account's Glue catalog and bucket, reached through the role
of the DR stack (``infra/dr_account.py``), as in ``test_cross_account``. Every command runs
as Ferry's operator role of the primary account, each request authorized by the emulator:
the DR side's files and catalog are reachable only through the role.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
import yaml

from ferry.catalog.glue import GlueCatalog
from ferry.core.model import Partition
from ferry.failover import PROMOTED
from ferry.local.samples import create_sample_tables, last_days, order_rows
from tests.conftest import NOW
from tests.e2e.test_cross_account import (  # noqa: F401 - the fixture
    DR,
    PRIMARY,
    REGION,
    accounts,
    denials,
    dr_objects,
    in_account,
)

pytestmark = pytest.mark.e2e

DR_DAY = "2026-12-01"


@pytest.fixture
def primary(local_runtime, accounts, unique):  # noqa: F811 - the fixture
    """The sample tables in the primary account's Glue, their data in its bucket below the
    DR stack's read location; the operator may use both, and the DR role read the data
    (the bucket's policy, as a cross-account S3 copy needs)."""
    bucket = f"primary-{unique}"
    s3 = in_account("s3", PRIMARY)
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_policy(
        Bucket=bucket,
        Policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": accounts["good"]},
                        "Action": "s3:GetObject",
                        "Resource": f"arn:aws:s3:::{bucket}/sales/*",
                    }
                ],
            }
        ),
    )
    # Failback copies DR's files home server-side, signed as Ferry's role: the DR bucket's
    # policy lets it read the objects (not list them: that goes through the DR role).
    dr_bucket = accounts["bucket"]
    in_account("s3", DR).put_bucket_policy(
        Bucket=dr_bucket,
        Policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": accounts["operator"]},
                        "Action": "s3:GetObject",
                        "Resource": f"arn:aws:s3:::{dr_bucket}/*",
                    }
                ],
            }
        ),
    )
    in_account("iam", PRIMARY).put_role_policy(
        RoleName=accounts["operator"].split("/")[-1],
        PolicyName="primary-side",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": "glue:*", "Resource": "*"},
                    {
                        "Effect": "Allow",
                        "Action": "s3:*",
                        "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
                    },
                    {
                        "Effect": "Allow",
                        "Action": "s3:GetObject",
                        "Resource": f"arn:aws:s3:::{dr_bucket}/*",
                    },
                ],
            }
        ),
    )
    catalog = GlueCatalog("primary", in_account("glue", PRIMARY))
    sample = create_sample_tables(
        catalog, f"sales_{unique}", f"s3://{bucket}/sales", last_days(NOW.date(), 3)
    )
    return catalog, sample, bucket


@pytest.fixture
def ferry(primary, accounts, write_config, tmp_path):  # noqa: F811 - the fixture
    """A runner of ``ferry COMMAND CONFIG --home`` as the operator, on a config replicating
    the primary's ``orders`` into the DR account through the DR role."""
    _, sample, _ = primary
    config = write_config(
        {
            "source-catalog": {"name": "primary", "glue": {"region": REGION}},
            "replica-catalog": {
                "name": "dr",
                "glue": {"region": REGION, "catalog-id": DR},
                "assume-role": {
                    "role-arn": accounts["good"],
                    "external-id": accounts["external_id"],
                },
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
    )

    def run(command: str, *options: str) -> subprocess.CompletedProcess:
        return as_operator(
            accounts, command, *options, str(config), "--home", str(tmp_path / "home")
        )

    return run


def as_operator(accounts, *arguments: str) -> subprocess.CompletedProcess:  # noqa: F811
    """``ferry ARGUMENTS`` in a process of its own, as the primary account's operator role."""
    return subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **accounts["environment"]},
    )


def dr_catalog() -> GlueCatalog:
    """The DR account's Glue catalog, as its administrator (a writer in DR) sees it."""
    return GlueCatalog("dr", in_account("glue", DR), catalog_id=DR)


def write_in_dr(accounts) -> int:  # noqa: F811 - the fixture
    """A writer in DR adds a partition: its file in the DR bucket, written with the DR
    account's credentials, the partition in the DR account's Glue; the file's size."""
    buffer = io.BytesIO()
    pq.write_table(order_rows(DR_DAY, 4), buffer)
    key = f"orders/written-in-dr/dt={DR_DAY}/part-00000.parquet"
    in_account("s3", DR).put_object(Bucket=accounts["bucket"], Key=key, Body=buffer.getvalue())
    catalog = dr_catalog()
    table = catalog.get_table(accounts["database"], "orders")
    location = f"s3://{accounts['bucket']}/orders/written-in-dr/dt={DR_DAY}"
    catalog.add_partitions(table, [Partition((DR_DAY,), table.storage.with_location(location))])
    return len(buffer.getvalue())


def primary_objects(bucket: str, prefix: str) -> dict[str, int]:
    listed = in_account("s3", PRIMARY).list_objects_v2(Bucket=bucket, Prefix=prefix)
    return {item["Key"]: item["Size"] for item in listed.get("Contents", [])}


def test_failover_and_failback_across_accounts_bring_dr_s_partition_home(
    local_runtime,
    primary,
    accounts,  # noqa: F811 - the fixture
    ferry,
    write_config,
):
    catalog, sample, bucket = primary
    seen = len(denials(local_runtime))
    result = ferry("replicate")
    assert result.returncode == 0, result.stdout + result.stderr
    result = ferry("failover")
    assert result.returncode == 0, result.stdout + result.stderr
    assert PROMOTED in dr_catalog().get_table(accounts["database"], "orders").parameters

    source = catalog.get_table(sample.database, "orders")
    before = {p.values: p.location for p in catalog.list_partitions(source)}
    size = write_in_dr(accounts)
    # The reverse config reaches DR's files through the DR role, in a process of its own.
    result = ferry("failback", "--dry-run")
    assert result.returncode == 0, result.stdout + result.stderr
    reverse = yaml.safe_load(
        result.stdout.split("reverse config would be written to ")[1].split("\n", 1)[1]
    )
    # Planned into a table of its own (failback alone adopts the original table).
    [replication] = reverse["table-replications"]
    replication["replica-table"] = {
        "database-name": sample.database,
        "table-name": "orders_drill",
        "table-location": f"s3://{bucket}/drill/orders",
    }
    result = as_operator(accounts, "plan", str(write_config(reverse, "reverse.yml")), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    [planned] = json.loads(result.stdout)["tables"]
    assert (planned["files"], planned["bytes"], planned["partitions"]) == (1, size, 1)
    assert reverse["source-catalog"]["assume-role"] == {
        "role-arn": accounts["good"],
        "external-id": accounts["external_id"],
        "buckets": [accounts["bucket"]],
    }
    result = ferry("failback")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "brought 1 partitions home" in result.stdout

    # The partition is the source's, its data in the primary account's bucket below the
    # source table's location; the source's own partitions are untouched.
    source = catalog.get_table(sample.database, "orders")
    partitions = {p.values: p.location for p in catalog.list_partitions(source)}
    assert set(partitions) == {*before, (DR_DAY,)}
    assert {values: partitions[values] for values in before} == before
    home = partitions[(DR_DAY,)]
    assert home.startswith(source.location.rstrip("/") + "/")
    prefix = home.removeprefix(f"s3://{bucket}/").rstrip("/") + "/"
    assert list(primary_objects(bucket, prefix).values()) == [size]
    assert not [k for k in source.parameters if k.startswith("ferry.")]
    # The DR replica is no longer promoted, and the original direction copies nothing.
    assert PROMOTED not in dr_catalog().get_table(accounts["database"], "orders").parameters
    result = ferry("replicate", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    [table] = json.loads(result.stdout)["tables"]
    assert table["files"] == 0
    assert denials(local_runtime)[seen:] == []


def test_a_failback_whose_dr_role_may_not_be_assumed_is_one_line_and_changes_nothing(
    local_runtime,
    primary,
    accounts,  # noqa: F811 - the fixture
    ferry,
):
    catalog, sample, bucket = primary
    assert ferry("replicate").returncode == 0
    assert ferry("failover").returncode == 0
    write_in_dr(accounts)
    # The DR account's trust no longer names Ferry's roles.
    role_name = accounts["good"].split("/")[-1]
    in_account("iam", DR).update_assume_role_policy(
        RoleName=role_name,
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": f"arn:aws:iam::{DR}:root"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
    )
    source = catalog.get_table(sample.database, "orders")
    before = (
        {p.values: p.location for p in catalog.list_partitions(source)},
        primary_objects(bucket, ""),
        dr_objects(accounts["bucket"]),
    )
    result = ferry("failback")
    assert result.returncode != 0
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert f"Ferry may not assume {accounts['good']}" in lines[0]
    assert before == (
        {p.values: p.location for p in catalog.list_partitions(source)},
        primary_objects(bucket, ""),
        dr_objects(accounts["bucket"]),
    )
    assert PROMOTED in dr_catalog().get_table(accounts["database"], "orders").parameters
