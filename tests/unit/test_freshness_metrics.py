"""The freshness check's metrics (``ferry.freshness.metrics``), published to moto's
CloudWatch: each table's ``Freshness`` and ``RpoSeconds`` and the environment's
``TablesOverRpo``, in requests within PutMetricData's limit, a config that cannot be measured
named without keeping the others' tables from being published."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from ferry.core.errors import FerryError
from ferry.freshness.metrics import METRICS_PER_REQUEST, check_freshness

NOW = datetime(2026, 11, 21, 8, 30, tzinfo=UTC)


@dataclass(frozen=True)
class Table:
    source_table: str
    behind: timedelta | None
    rpo: timedelta | None

    @property
    def over_rpo(self) -> bool:
        return self.rpo is not None and self.behind is not None and self.behind > self.rpo


@pytest.fixture
def cloudwatch(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)  # moto's in-process backend
    with mock_aws():
        yield boto3.client(
            "cloudwatch", region_name="us-east-1",
            aws_access_key_id="testing", aws_secret_access_key="testing",
        )  # fmt: skip


def latest(cloudwatch, metric: str, table: str | None = None) -> float | None:
    dimensions = [{"Name": "service", "Value": "ferry"}]
    if table is not None:
        dimensions.append({"Name": "table", "Value": table})
    points = cloudwatch.get_metric_statistics(
        Namespace="Ferry", MetricName=metric, Dimensions=dimensions,
        StartTime=NOW - timedelta(minutes=5), EndTime=NOW + timedelta(minutes=5),
        Period=600, Statistics=["Maximum"],
    )["Datapoints"]  # fmt: skip
    return points[0]["Maximum"] if points else None


def test_each_table_and_the_environment_get_their_metrics(cloudwatch):
    tables = {
        "sales.orders": Table("sales.orders", timedelta(minutes=20), timedelta(minutes=15)),
        "sales.customers": Table("sales.customers", timedelta(seconds=30), timedelta(hours=1)),
        "sales.returns": Table("sales.returns", timedelta(hours=3), None),  # no RPO: no breach
        "sales.gone": Table("sales.gone", None, timedelta(minutes=5)),  # not measurable
    }

    result = check_freshness(["s3://work/sales.yml"], lambda uri: list(tables.values()),
                             cloudwatch, lambda: NOW)  # fmt: skip

    assert (result.tables, result.over_rpo, result.requests) == (4, ["sales.orders"], 1)
    assert latest(cloudwatch, "Freshness", "sales.orders") == 1200
    assert latest(cloudwatch, "RpoSeconds", "sales.orders") == 900
    assert latest(cloudwatch, "Freshness", "sales.customers") == 30
    assert latest(cloudwatch, "Freshness", "sales.returns") == 3 * 3600
    assert latest(cloudwatch, "RpoSeconds", "sales.returns") is None
    assert latest(cloudwatch, "Freshness", "sales.gone") is None  # no value, not a wrong one
    assert latest(cloudwatch, "TablesOverRpo") == 1


def test_many_tables_go_in_requests_within_put_metric_datas_limit(cloudwatch):
    count = 700  # two metrics each: 1,401 in all
    tables = [
        Table(f"big.t{n}", timedelta(seconds=n), timedelta(seconds=600)) for n in range(count)
    ]
    sent: list[int] = []
    cloudwatch.meta.events.register(
        "provide-client-params.cloudwatch.PutMetricData",
        lambda params, **_: sent.append(len(params["MetricData"])),
    )

    result = check_freshness(["s3://work/big.yml"], lambda uri: tables, cloudwatch, lambda: NOW)

    assert sent == [METRICS_PER_REQUEST, 2 * count + 1 - METRICS_PER_REQUEST]
    assert result.requests == 2
    assert latest(cloudwatch, "Freshness", "big.t699") == 699
    assert latest(cloudwatch, "TablesOverRpo") == count - 601


def test_a_config_that_cannot_be_measured_is_named_and_the_others_are_published(cloudwatch):
    def measure(uri: str) -> list[Table]:
        if uri.endswith("broken.yml"):
            raise FerryError("source catalog onprem: cannot connect to thrift://metastore:9083")
        return [Table("sales.orders", timedelta(minutes=20), timedelta(minutes=15))]

    with pytest.raises(FerryError) as raised:
        check_freshness(["s3://work/broken.yml", "s3://work/sales.yml"], measure, cloudwatch,
                        lambda: NOW)  # fmt: skip

    assert str(raised.value) == (
        "freshness not measured for s3://work/broken.yml: source catalog onprem: cannot "
        "connect to thrift://metastore:9083"
    )
    assert latest(cloudwatch, "Freshness", "sales.orders") == 1200
    assert latest(cloudwatch, "TablesOverRpo") == 1
