"""Freshness as CloudWatch metrics: what the periodic check and the end of each run publish.

Every table gets ``Freshness`` (how far its replica is behind its source, in seconds) and,
when its replication has an RPO, ``RpoSeconds``; the environment gets ``TablesOverRpo``
(how many of its tables are past their RPO), the metric of the ``rpo-breached`` alarm
(``infra/operations.py``). They are in the namespace and dimensions of the functions' other
metrics: ``Ferry``, ``service=ferry`` and, per table, ``table=<source database.table>``.

The periodic check (``lambdas/freshness_check.py``, on an EventBridge Scheduler schedule)
reads only the catalogs and the state store (``ferry.freshness.measure``): it copies
nothing and starts nothing, so it runs every few minutes at the cost of a few catalog
calls per table.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from ferry.core.errors import FerryError

logger = logging.getLogger(__name__)

NAMESPACE = "Ferry"
SERVICE = "ferry"
FRESHNESS = "Freshness"
RPO_SECONDS = "RpoSeconds"
TABLES_OVER_RPO = "TablesOverRpo"
#: PutMetricData takes at most 1,000 metrics a request (and 1 MB: 1,000 of these are ~200 KB).
METRICS_PER_REQUEST = 1000


class Measured(Protocol):
    """What the check needs of one table's freshness (``ferry.freshness.TableFreshness``)."""

    @property
    def source_table(self) -> str: ...

    @property
    def behind(self) -> timedelta | None: ...

    @property
    def rpo(self) -> timedelta | None: ...

    @property
    def over_rpo(self) -> bool: ...


def table_dimensions(table: str) -> list[dict[str, str]]:
    """The per-table metrics' dimensions, as the functions' EMF metrics have them."""
    return [{"Name": "service", "Value": SERVICE}, {"Name": "table", "Value": table}]


def freshness_data(measured: Iterable[Measured], now: datetime) -> list[dict[str, Any]]:
    """``MetricData`` of the tables ``measured`` at ``now``: each table's ``Freshness`` (none
    when it could not be measured: no value is better than a wrong one) and ``RpoSeconds``,
    and the environment's ``TablesOverRpo``."""
    data: list[dict[str, Any]] = []
    over = 0
    for table in measured:
        dimensions = table_dimensions(table.source_table)
        if table.behind is not None:
            data.append(_datum(FRESHNESS, dimensions, table.behind.total_seconds(), now))
        if table.rpo is not None:
            data.append(_datum(RPO_SECONDS, dimensions, table.rpo.total_seconds(), now))
        over += bool(table.over_rpo)
    data.append(
        {
            "MetricName": TABLES_OVER_RPO,
            "Dimensions": [{"Name": "service", "Value": SERVICE}],
            "Timestamp": now,
            "Value": float(over),
            "Unit": "Count",
        }
    )
    return data


def _datum(name: str, dimensions: list[dict[str, str]], seconds: float, now: datetime) -> dict:
    return {
        "MetricName": name,
        "Dimensions": dimensions,
        "Timestamp": now,
        "Value": max(0.0, seconds),
        "Unit": "Seconds",
    }


def publish(cloudwatch: Any, data: Sequence[dict[str, Any]]) -> int:
    """Send ``data`` in requests of at most ``METRICS_PER_REQUEST``; how many requests."""
    requests = 0
    for start in range(0, len(data), METRICS_PER_REQUEST):
        cloudwatch.put_metric_data(
            Namespace=NAMESPACE, MetricData=list(data[start : start + METRICS_PER_REQUEST])
        )
        requests += 1
    return requests


@dataclass(frozen=True)
class CheckResult:
    """What one periodic check measured and published."""

    tables: int
    over_rpo: list[str]
    requests: int


def check_freshness(
    config_uris: Sequence[str],
    measure_config: Callable[[str], Sequence[Measured]],
    cloudwatch: Any,
    clock: Callable[[], datetime],
) -> CheckResult:
    """Measure every table of each config and publish its freshness.

    A config that cannot be measured (unreadable, a catalog unreachable) does not keep the
    others' tables from being published; the check then fails, naming it, so that the
    function's errors alarm tells the operators (its tables' freshness is not published:
    no value, not a wrong one).
    """
    measured: list[Measured] = []
    failed: list[str] = []
    for uri in config_uris:
        try:
            measured.extend(measure_config(uri))
        except Exception as error:  # noqa: BLE001 - any config's failure is named, not fatal
            logger.error("cannot measure the freshness of %s: %s", uri, error)
            failed.append(f"{uri}: {error}")
    requests = publish(cloudwatch, freshness_data(measured, clock()))
    if failed:
        raise FerryError(f"freshness not measured for {'; '.join(failed)}")
    return CheckResult(
        tables=len(measured),
        over_rpo=sorted(t.source_table for t in measured if t.over_rpo),
        requests=requests,
    )
