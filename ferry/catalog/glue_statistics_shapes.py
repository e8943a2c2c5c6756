"""AWS Glue's ``ColumnStatistics`` dictionaries and Ferry's model, both ways.

Glue's ``StatisticsData`` names its kind in ``Type`` and holds the counts in
``<Kind>ColumnStatisticsData``; a decimal is ``{UnscaledValue, Scale}`` as Hive's is, and a
date is a timestamp (Ferry reads its UTC date and writes UTC midnight). Glue has no field
for Hive's NDV sketch: it is left out (``ferry.core.statistics.unmapped`` names it).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from ferry.core.statistics import (
    ColumnStatistics,
    StatisticsKind,
    decimal_from_parts,
    decimal_parts,
)

#: Glue's field of each of the model's (``low``/``high`` are Minimum/MaximumValue).
_FIELDS = {
    "nulls": "NumberOfNulls",
    "distinct": "NumberOfDistinctValues",
    "low": "MinimumValue",
    "high": "MaximumValue",
    "trues": "NumberOfTrues",
    "falses": "NumberOfFalses",
    "max_length": "MaximumLength",
    "average_length": "AverageLength",
}
_KIND_FIELDS: dict[StatisticsKind, tuple[str, ...]] = {
    StatisticsKind.BOOLEAN: ("nulls", "trues", "falses"),
    StatisticsKind.LONG: ("nulls", "distinct", "low", "high"),
    StatisticsKind.DOUBLE: ("nulls", "distinct", "low", "high"),
    StatisticsKind.STRING: ("nulls", "distinct", "max_length", "average_length"),
    StatisticsKind.BINARY: ("nulls", "max_length", "average_length"),
    StatisticsKind.DECIMAL: ("nulls", "distinct", "low", "high"),
    StatisticsKind.DATE: ("nulls", "distinct", "low", "high"),
}


def data_key(kind: StatisticsKind) -> str:
    """The member of ``StatisticsData`` that holds a kind's counts."""
    return f"{kind.value.title()}ColumnStatisticsData"


def _value_from_glue(kind: StatisticsKind, name: str, value: Any) -> Any:
    if value is None or name not in ("low", "high"):
        return float(value) if name == "average_length" and value is not None else value
        return None
    if kind is StatisticsKind.DECIMAL:
        return decimal_from_parts(value["UnscaledValue"], value["Scale"])
    if kind is StatisticsKind.DATE:
        return value.astimezone(UTC).date() if isinstance(value, datetime) else value
    if kind is StatisticsKind.DOUBLE:
        return float(value)
    return value


def _value_to_glue(kind: StatisticsKind, name: str, value: Any) -> Any:
    if name not in ("low", "high"):
        return value
    if kind is StatisticsKind.DECIMAL and isinstance(value, Decimal):
        unscaled, scale = decimal_parts(value)
        return {"UnscaledValue": unscaled, "Scale": scale}
    if kind is StatisticsKind.DATE and isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return value


def statistics_from_glue(entry: dict[str, Any]) -> ColumnStatistics:
    """One entry of ``GetColumnStatisticsForTable``'s (or …Partition's) list."""
    data = entry["StatisticsData"]
    kind = StatisticsKind(data["Type"])
    counts = data.get(data_key(kind)) or {}
    values = {
        name: _value_from_glue(kind, name, counts.get(_FIELDS[name])) for name in _KIND_FIELDS[kind]
    }
    return ColumnStatistics(
        column=entry["ColumnName"],
        type=entry["ColumnType"],
        kind=kind,
        analyzed_at=entry.get("AnalyzedTime"),
        **values,
    )


def statistics_to_glue(statistics: ColumnStatistics, now: datetime) -> dict[str, Any]:
    """The ``ColumnStatistics`` entry that writes ``statistics`` (``AnalyzedTime``, which
    Glue requires, is ``now`` when the statistics have none)."""
    kind = statistics.kind
    counts = {
        _FIELDS[name]: _value_to_glue(kind, name, getattr(statistics, name))
        for name in _KIND_FIELDS[kind]
        if getattr(statistics, name) is not None
    }
    return {
        "ColumnName": statistics.column,
        "ColumnType": statistics.type,
        "AnalyzedTime": statistics.analyzed_at or now,
        "StatisticsData": {"Type": kind.value, data_key(kind): counts},
    }
