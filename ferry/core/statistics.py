"""Column statistics and table constraints, as Ferry models them whichever catalog holds them.

A Hive metastore and AWS Glue keep the same seven kinds of column statistics (boolean, long,
double, string, binary, decimal, date), with the same counts; the catalog adapters translate
their own shapes (Hive's Thrift ``ColumnStatisticsData``, Glue's ``StatisticsData``) to and
from these values. What one side holds and the other cannot (Hive's NDV sketches, the
``bitVectors``, have no Glue field) is named by ``unmapped``, never guessed.

Constraints are primary and foreign keys: what a Hive 2.3 metastore holds (its Thrift API has
no unique or not-null constraints). Glue has none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum

from ferry.core.errors import CatalogError
from ferry.core.model import CatalogKind


class StatisticsKind(StrEnum):
    """Which statistics a column holds: Glue's ``StatisticsData.Type``, Hive's union member."""

    BOOLEAN = "BOOLEAN"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    STRING = "STRING"
    BINARY = "BINARY"
    DECIMAL = "DECIMAL"
    DATE = "DATE"


#: The fields each kind holds beyond ``nulls`` (both catalogs require each of them).
KIND_FIELDS: dict[StatisticsKind, tuple[str, ...]] = {
    StatisticsKind.BOOLEAN: ("trues", "falses"),
    StatisticsKind.LONG: ("distinct", "low", "high"),
    StatisticsKind.DOUBLE: ("distinct", "low", "high"),
    StatisticsKind.STRING: ("distinct", "max_length", "average_length"),
    StatisticsKind.BINARY: ("max_length", "average_length"),
    StatisticsKind.DECIMAL: ("distinct", "low", "high"),
    StatisticsKind.DATE: ("distinct", "low", "high"),
}


@dataclass(frozen=True)
class ColumnStatistics:
    """The statistics of one column of a table or of one partition.

    ``low``/``high`` (optional in both catalogs) are ``int`` for LONG, ``float`` for DOUBLE,
    ``Decimal`` for DECIMAL (its exponent is the scale) and ``date`` for DATE. ``sketch`` is
    Hive's ``bitVectors`` (an NDV sketch), which only a Hive metastore holds.
    ``analyzed_at`` is when they were computed; a Hive metastore sets it to the time of the
    write, so it is never part of what "the same statistics" means.
    """

    column: str
    type: str
    kind: StatisticsKind
    nulls: int
    distinct: int | None = None
    low: int | float | Decimal | date | None = None
    high: int | float | Decimal | date | None = None
    trues: int | None = None
    falses: int | None = None
    max_length: int | None = None
    average_length: float | None = None
    sketch: str | None = None
    analyzed_at: datetime | None = field(default=None, compare=False)


#: Hive column types (their base name) and the statistics kind each holds.
_TYPE_KINDS: dict[str, StatisticsKind] = {
    "boolean": StatisticsKind.BOOLEAN,
    "tinyint": StatisticsKind.LONG,
    "smallint": StatisticsKind.LONG,
    "int": StatisticsKind.LONG,
    "integer": StatisticsKind.LONG,
    "bigint": StatisticsKind.LONG,
    "float": StatisticsKind.DOUBLE,
    "double": StatisticsKind.DOUBLE,
    "string": StatisticsKind.STRING,
    "varchar": StatisticsKind.STRING,
    "char": StatisticsKind.STRING,
    "binary": StatisticsKind.BINARY,
    "decimal": StatisticsKind.DECIMAL,
    "date": StatisticsKind.DATE,
}


def kind_of_type(column_type: str) -> StatisticsKind | None:
    """The statistics kind a column of ``column_type`` holds; None for the types neither
    catalog keeps statistics of (timestamp, interval, array, map, struct, union)."""
    base = re.split(r"[(<\s]", column_type.strip().lower(), maxsplit=1)[0]
    return _TYPE_KINDS.get(base)


def unfit(statistics: ColumnStatistics, column_type: str | None) -> str | None:
    """Why ``statistics`` cannot be held by a replica column of ``column_type`` (None: it
    can): a column the replica does not have, or whose type holds another kind."""
    if column_type is None:
        return f"column {statistics.column}: not a column of the replica table"
    kind = kind_of_type(column_type)
    if kind is not statistics.kind:
        holds = f"holds {kind} statistics" if kind else "holds no statistics"
        return (
            f"column {statistics.column}: {statistics.kind} statistics, but its replica type "
            f"{column_type} {holds}"
        )
    return None


def unmapped(statistics: ColumnStatistics, target: CatalogKind) -> list[str]:
    """What of ``statistics`` a catalog of kind ``target`` cannot hold, one line each."""
    if target is CatalogKind.GLUE and statistics.sketch is not None:
        return [f"column {statistics.column}: Glue has no field for Hive's NDV sketch (bitVectors)"]
    return []


def missing_fields(statistics: ColumnStatistics) -> list[str]:
    """The fields its kind requires that ``statistics`` lacks (both catalogs refuse them)."""
    required = [f for f in KIND_FIELDS[statistics.kind] if f not in ("low", "high")]
    return [f for f in required if getattr(statistics, f) is None]


def decimal_from_parts(unscaled: bytes, scale: int) -> Decimal:
    """A decimal from its unscaled value (big-endian two's complement bytes) and scale, as
    both catalogs keep one."""
    number = int.from_bytes(unscaled, "big", signed=True)
    digits = tuple(int(d) for d in str(abs(number)))
    return Decimal((1 if number < 0 else 0, digits, -scale))


def decimal_parts(value: Decimal) -> tuple[bytes, int]:
    """A decimal as its unscaled value (big-endian two's complement, fewest bytes) and scale."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):  # NaN or infinity: no statistic holds one
        raise CatalogError(f"decimal statistic {value} is not a finite number")
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    if exponent > 0:  # 1E+2: neither catalog has a negative scale
        unscaled, exponent = unscaled * 10**exponent, 0
    length = (unscaled.bit_length() + 8) // 8
    return unscaled.to_bytes(length, "big", signed=True), -exponent


# -- constraints ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrimaryKey:
    """A table's primary key: its columns in key order. ``enabled``/``validated``/``rely``
    are Hive's ENABLE / VALIDATE / RELY (informational: Hive enforces none)."""

    name: str
    columns: tuple[str, ...]
    enabled: bool = False
    validated: bool = False
    rely: bool = False


@dataclass(frozen=True)
class ForeignKey:
    """A foreign key: ``columns`` of this table reference ``parent_columns`` of the parent
    table, position by position."""

    name: str
    columns: tuple[str, ...]
    parent_database: str
    parent_table: str
    parent_columns: tuple[str, ...]
    update_rule: int = 0
    delete_rule: int = 0
    enabled: bool = False
    validated: bool = False
    rely: bool = False


@dataclass(frozen=True)
class Constraints:
    """A table's keys."""

    primary_key: PrimaryKey | None = None
    foreign_keys: tuple[ForeignKey, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        primary = (self.primary_key.name,) if self.primary_key else ()
        return primary + tuple(key.name for key in self.foreign_keys)

    def __bool__(self) -> bool:
        return bool(self.primary_key or self.foreign_keys)
