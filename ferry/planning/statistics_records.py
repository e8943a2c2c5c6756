"""What a replication writes of column statistics and keys, as the plan holds it.

The plan travels as JSON (``ferry.planning.plan_document``), and ``ColumnStatistics``'s
``low``/``high`` are an ``int``, a ``float``, a ``Decimal`` or a ``date`` by kind: a JSON
round trip would turn a decimal into a float. ``StatisticsRecord`` holds them as text, which
its kind reads back exactly (a decimal keeps its scale, a float its every bit).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from ferry.core.statistics import ColumnStatistics, Constraints, StatisticsKind


@dataclass(frozen=True)
class StatisticsRecord:
    """One column's statistics, ``low``/``high`` as text (``ColumnStatistics`` otherwise)."""

    column: str
    type: str
    kind: StatisticsKind
    nulls: int
    distinct: int | None = None
    low: str | None = None
    high: str | None = None
    trues: int | None = None
    falses: int | None = None
    max_length: int | None = None
    average_length: float | None = None
    sketch: str | None = None
    analyzed_at: datetime | None = None

    @classmethod
    def of(cls, statistics: ColumnStatistics) -> StatisticsRecord:
        return cls(
            column=statistics.column,
            type=statistics.type,
            kind=statistics.kind,
            nulls=statistics.nulls,
            distinct=statistics.distinct,
            low=_text(statistics.low),
            high=_text(statistics.high),
            trues=statistics.trues,
            falses=statistics.falses,
            max_length=statistics.max_length,
            average_length=statistics.average_length,
            sketch=statistics.sketch,
            analyzed_at=statistics.analyzed_at,
        )

    def statistics(self) -> ColumnStatistics:
        return ColumnStatistics(
            column=self.column,
            type=self.type,
            kind=self.kind,
            nulls=self.nulls,
            distinct=self.distinct,
            low=_value(self.kind, self.low),
            high=_value(self.kind, self.high),
            trues=self.trues,
            falses=self.falses,
            max_length=self.max_length,
            average_length=self.average_length,
            sketch=self.sketch,
            analyzed_at=self.analyzed_at,
        )


def _text(value: int | float | Decimal | date | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, float):
        return repr(value)  # the shortest text that reads back as the same float
    if isinstance(value, date):
        return value.isoformat()
    return str(value)  # an int, or a Decimal with its exponent (its scale)


def _value(kind: StatisticsKind, text: str | None) -> int | float | Decimal | date | None:
    if text is None:
        return None
    if kind is StatisticsKind.LONG:
        return int(text)
    if kind is StatisticsKind.DOUBLE:
        return float(text)
    if kind is StatisticsKind.DECIMAL:
        return Decimal(text)
    if kind is StatisticsKind.DATE:
        return date.fromisoformat(text)
    return None  # BOOLEAN, STRING and BINARY statistics have no low or high in either catalog


@dataclass(frozen=True)
class PartitionStatistics:
    """The statistics one replica partition (by its values) gets."""

    values: tuple[str, ...]
    statistics: tuple[StatisticsRecord, ...]


@dataclass(frozen=True)
class StatisticsPlan:
    """What Commit writes of statistics and keys: each write replaces, so a retry converges.

    ``table``: the table's column statistics that differ from the replica's;
    ``partitions``: each replica partition's that differ; ``keys_to_drop`` are dropped
    before ``keys_to_add`` are added (a changed key is both)."""

    table: tuple[StatisticsRecord, ...] = ()
    partitions: tuple[PartitionStatistics, ...] = ()
    keys_to_add: Constraints = Constraints()
    keys_to_drop: tuple[str, ...] = ()

    @property
    def keys_added(self) -> int:
        return len(self.keys_to_add.names)

    def __bool__(self) -> bool:
        return bool(self.table or self.partitions or self.keys_to_add or self.keys_to_drop)


def statistics_counts(planned: StatisticsPlan | None) -> dict[str, int] | None:
    """What a plan writes of statistics and keys, counted (``ferry plan``, SUCCESS); None
    when it writes none."""
    if not planned:
        return None
    return {
        "tableColumns": len(planned.table),
        "partitions": len(planned.partitions),
        "partitionColumns": sum(len(p.statistics) for p in planned.partitions),
        "keysToAdd": planned.keys_added,
        "keysToDrop": len(planned.keys_to_drop),
    }
