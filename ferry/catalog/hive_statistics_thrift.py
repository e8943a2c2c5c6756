"""Hive's Thrift column statistics and keys (``hmsclient``, Hive 2.3) and Ferry's model, both
ways.

Hive's ``ColumnStatisticsData`` is a union with one member per kind; a decimal is its
unscaled value (big-endian two's complement bytes) and a scale, a date its days since the
epoch. Every kind carries an optional ``bitVectors`` (an NDV sketch), kept as ``sketch``.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from hmsclient.genthrift.hive_metastore import ttypes

from ferry.core.errors import CatalogError
from ferry.core.statistics import (
    ColumnStatistics,
    Constraints,
    ForeignKey,
    PrimaryKey,
    StatisticsKind,
    decimal_from_parts,
    decimal_parts,
)

_EPOCH = date(1970, 1, 1)

#: The union member and its struct of each kind.
_MEMBERS: dict[StatisticsKind, tuple[str, type]] = {
    StatisticsKind.BOOLEAN: ("booleanStats", ttypes.BooleanColumnStatsData),
    StatisticsKind.LONG: ("longStats", ttypes.LongColumnStatsData),
    StatisticsKind.DOUBLE: ("doubleStats", ttypes.DoubleColumnStatsData),
    StatisticsKind.STRING: ("stringStats", ttypes.StringColumnStatsData),
    StatisticsKind.BINARY: ("binaryStats", ttypes.BinaryColumnStatsData),
    StatisticsKind.DECIMAL: ("decimalStats", ttypes.DecimalColumnStatsData),
    StatisticsKind.DATE: ("dateStats", ttypes.DateColumnStatsData),
}


def decimal_from_thrift(value: ttypes.Decimal | None) -> Decimal | None:
    return None if value is None else decimal_from_parts(value.unscaled, value.scale)


def _decimal_to_thrift(value: Decimal | None) -> ttypes.Decimal | None:
    if value is None:
        return None
    unscaled, scale = decimal_parts(value)
    return ttypes.Decimal(unscaled=unscaled, scale=scale)


def _date_from_thrift(value: ttypes.Date | None) -> date | None:
    return None if value is None else _EPOCH + timedelta(days=value.daysSinceEpoch)


def _date_to_thrift(value: date | None) -> ttypes.Date | None:
    return None if value is None else ttypes.Date(daysSinceEpoch=(value - _EPOCH).days)


def statistics_from_thrift(
    obj: ttypes.ColumnStatisticsObj, analyzed: int | None = None
) -> ColumnStatistics:
    """One column's statistics of ``get_table_statistics_req`` / ``…partitions…``."""
    data = obj.statsData
    members = [(k, getattr(data, m)) for k, (m, _) in _MEMBERS.items()]
    present = [(kind, stats) for kind, stats in members if stats is not None]
    if not present:  # a member a later Hive added (timestamp): not one Ferry carries
        raise CatalogError(f"column {obj.colName}: statistics of a kind Ferry does not know")
    kind, stats = present[0]
    low = high = None
    if kind in (StatisticsKind.LONG, StatisticsKind.DOUBLE):
        low, high = stats.lowValue, stats.highValue
    elif kind is StatisticsKind.DECIMAL:
        low, high = decimal_from_thrift(stats.lowValue), decimal_from_thrift(stats.highValue)
    elif kind is StatisticsKind.DATE:
        low, high = _date_from_thrift(stats.lowValue), _date_from_thrift(stats.highValue)
    return ColumnStatistics(
        column=obj.colName,
        type=obj.colType,
        kind=kind,
        nulls=stats.numNulls,
        distinct=getattr(stats, "numDVs", None),
        low=low,
        high=high,
        trues=getattr(stats, "numTrues", None),
        falses=getattr(stats, "numFalses", None),
        max_length=getattr(stats, "maxColLen", None),
        average_length=getattr(stats, "avgColLen", None),
        sketch=stats.bitVectors,
        analyzed_at=datetime.fromtimestamp(analyzed, UTC) if analyzed else None,
    )


def statistics_to_thrift(statistics: ColumnStatistics) -> ttypes.ColumnStatisticsObj:
    kind = statistics.kind
    member, struct = _MEMBERS[kind]
    fields: dict[str, object] = {"numNulls": statistics.nulls, "bitVectors": statistics.sketch}
    if kind is StatisticsKind.BOOLEAN:
        fields.update(numTrues=statistics.trues, numFalses=statistics.falses)
    elif kind in (StatisticsKind.STRING, StatisticsKind.BINARY):
        fields.update(maxColLen=statistics.max_length, avgColLen=statistics.average_length)
    if kind not in (StatisticsKind.BOOLEAN, StatisticsKind.BINARY):
        fields["numDVs"] = statistics.distinct
    if kind in (StatisticsKind.LONG, StatisticsKind.DOUBLE):
        fields.update(lowValue=statistics.low, highValue=statistics.high)
    elif kind is StatisticsKind.DECIMAL:
        fields.update(
            lowValue=_decimal_to_thrift(statistics.low),  # type: ignore[arg-type]
            highValue=_decimal_to_thrift(statistics.high),  # type: ignore[arg-type]
        )
    elif kind is StatisticsKind.DATE:
        fields.update(
            lowValue=_date_to_thrift(statistics.low),  # type: ignore[arg-type]
            highValue=_date_to_thrift(statistics.high),  # type: ignore[arg-type]
        )
    return ttypes.ColumnStatisticsObj(
        colName=statistics.column,
        colType=statistics.type,
        statsData=ttypes.ColumnStatisticsData(**{member: struct(**fields)}),
    )


def column_statistics_to_thrift(
    database: str,
    table: str,
    statistics: list[ColumnStatistics],
    partition_name: str | None = None,
) -> ttypes.ColumnStatistics:
    """The statistics of a table's columns (``partition_name`` None) or of one partition's."""
    return ttypes.ColumnStatistics(
        statsDesc=ttypes.ColumnStatisticsDesc(
            isTblLevel=partition_name is None,
            dbName=database,
            tableName=table,
            partName=partition_name,
        ),
        statsObj=[statistics_to_thrift(s) for s in statistics],
    )


# -- keys --------------------------------------------------------------------------------------


def constraints_from_thrift(
    primary: list[ttypes.SQLPrimaryKey], foreign: list[ttypes.SQLForeignKey]
) -> Constraints:
    """A table's keys, from the rows (one per column) of ``get_primary_keys`` and
    ``get_foreign_keys``."""
    primary_key = None
    if primary:
        rows = sorted(primary, key=lambda r: r.key_seq)
        first = rows[0]
        primary_key = PrimaryKey(
            name=first.pk_name,
            columns=tuple(r.column_name for r in rows),
            enabled=bool(first.enable_cstr),
            validated=bool(first.validate_cstr),
            rely=bool(first.rely_cstr),
        )
    by_name: dict[str, list[ttypes.SQLForeignKey]] = defaultdict(list)
    for row in foreign:
        by_name[row.fk_name].append(row)
    foreign_keys = []
    for name in sorted(by_name):
        rows = sorted(by_name[name], key=lambda r: r.key_seq)
        first = rows[0]
        foreign_keys.append(
            ForeignKey(
                name=name,
                columns=tuple(r.fkcolumn_name for r in rows),
                parent_database=first.pktable_db,
                parent_table=first.pktable_name,
                parent_columns=tuple(r.pkcolumn_name for r in rows),
                update_rule=first.update_rule or 0,
                delete_rule=first.delete_rule or 0,
                enabled=bool(first.enable_cstr),
                validated=bool(first.validate_cstr),
                rely=bool(first.rely_cstr),
            )
        )
    return Constraints(primary_key, tuple(foreign_keys))


def primary_key_to_thrift(database: str, table: str, key: PrimaryKey) -> list[ttypes.SQLPrimaryKey]:
    return [
        ttypes.SQLPrimaryKey(
            table_db=database,
            table_name=table,
            column_name=column,
            key_seq=position,
            pk_name=key.name,
            enable_cstr=key.enabled,
            validate_cstr=key.validated,
            rely_cstr=key.rely,
        )
        for position, column in enumerate(key.columns, start=1)
    ]


def foreign_key_to_thrift(database: str, table: str, key: ForeignKey) -> list[ttypes.SQLForeignKey]:
    return [
        ttypes.SQLForeignKey(
            pktable_db=key.parent_database,
            pktable_name=key.parent_table,
            pkcolumn_name=parent_column,
            fktable_db=database,
            fktable_name=table,
            fkcolumn_name=column,
            key_seq=position,
            update_rule=key.update_rule,
            delete_rule=key.delete_rule,
            fk_name=key.name,
            enable_cstr=key.enabled,
            validate_cstr=key.validated,
            rely_cstr=key.rely,
        )
        for position, (column, parent_column) in enumerate(
            zip(key.columns, key.parent_columns, strict=True), start=1
        )
    ]
