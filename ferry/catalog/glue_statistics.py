"""AWS Glue's column statistics: ``GetColumnStatisticsForTable`` / ``…ForPartition`` (at
most 100 columns a call, one partition a call), ``UpdateColumnStatisticsForTable`` /
``…ForPartition`` (at most 25 columns a call) and ``DeleteColumnStatisticsFor…`` (one
column a call).

Glue answers a column without statistics, and a write it refuses, per column in the reply's
``Errors``: a read skips the columns without statistics; any other entry is a
``CatalogError`` that names the table (and partition) and the column. Glue holds no keys:
``supports_constraints`` stays False.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ferry.catalog import batched
from ferry.catalog.glue_statistics_shapes import statistics_from_glue, statistics_to_glue
from ferry.core.errors import CatalogError
from ferry.core.model import CatalogKind, Table
from ferry.core.statistics import ColumnStatistics, unmapped

#: The most column names ``GetColumnStatisticsFor…`` takes.
GLUE_STATISTICS_READ = 100
#: The most entries ``UpdateColumnStatisticsFor…`` takes.
GLUE_STATISTICS_WRITE = 25
#: Glue's error for a column without statistics (an entry of a read's ``Errors``).
_NOT_FOUND = "EntityNotFoundException"
#: What each call does, as an error says it.
_VERBS = {"get": "read", "update": "write", "delete": "delete"}


class GlueStatistics:
    """The column statistics of ``GlueCatalog`` (a part of it)."""

    name: str
    supports_column_statistics = True

    if TYPE_CHECKING:  # GlueCatalog's

        def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]: ...

    def get_column_statistics(
        self, table: Table, columns: Sequence[str] | None = None
    ) -> dict[str, ColumnStatistics]:
        return self._read(table, columns, None)

    def get_partition_column_statistics(
        self,
        table: Table,
        partitions: Sequence[tuple[str, ...]],
        columns: Sequence[str] | None = None,
    ) -> dict[tuple[str, ...], dict[str, ColumnStatistics]]:
        found = {}
        for values in partitions:
            statistics = self._read(table, columns, tuple(values))
            if statistics:
                found[tuple(values)] = statistics
        return found

    def _read(
        self, table: Table, columns: Sequence[str] | None, partition: tuple[str, ...] | None
    ) -> dict[str, ColumnStatistics]:
        names = [c.name for c in table.storage.columns] if columns is None else list(columns)
        operation, where = _operation("get", table, partition)
        found: dict[str, ColumnStatistics] = {}
        for chunk in batched(names, GLUE_STATISTICS_READ):
            reply = self._statistics_call(operation, where, table, partition, ColumnNames=chunk)
            for entry in reply.get("ColumnStatisticsList") or []:
                statistics = statistics_from_glue(entry)
                found[statistics.column] = statistics
            for error in reply.get("Errors") or []:
                detail = error.get("Error") or {}
                if detail.get("ErrorCode") != _NOT_FOUND:
                    raise self._column_error(
                        "read", table, partition, error.get("ColumnName"), detail
                    )
        return found

    def set_column_statistics(
        self, table: Table, statistics: Sequence[ColumnStatistics]
    ) -> list[str]:
        return self._write(table, statistics, None)

    def set_partition_column_statistics(
        self, table: Table, statistics: Mapping[tuple[str, ...], Sequence[ColumnStatistics]]
    ) -> list[str]:
        notices: list[str] = []
        for values, stats in statistics.items():
            notices.extend(self._write(table, stats, tuple(values)))
        return notices

    def _write(
        self,
        table: Table,
        statistics: Sequence[ColumnStatistics],
        partition: tuple[str, ...] | None,
    ) -> list[str]:
        operation, where = _operation("update", table, partition)
        now = datetime.now(UTC)
        notices = [line for s in statistics for line in unmapped(s, CatalogKind.GLUE)]
        for chunk in batched(statistics, GLUE_STATISTICS_WRITE):
            entries = [statistics_to_glue(s, now) for s in chunk]
            reply = self._statistics_call(
                operation, where, table, partition, ColumnStatisticsList=entries
            )
            errors = reply.get("Errors") or []
            if errors:
                column = (errors[0].get("ColumnStatistics") or {}).get("ColumnName")
                raise self._column_error("write", table, partition, column, errors[0].get("Error"))
        return notices

    def delete_column_statistics(
        self, table: Table, columns: Sequence[str], partition: tuple[str, ...] | None = None
    ) -> None:
        operation, where = _operation("delete", table, partition)
        # Glue answers a column without statistics with success, as a delete of nothing.
        for column in columns:
            self._statistics_call(operation, where, table, partition, ColumnName=column)

    def _statistics_call(
        self,
        operation: str,
        where: dict[str, Any],
        table: Table,
        partition: tuple[str, ...] | None,
        **arguments: Any,
    ) -> dict[str, Any]:
        try:
            return self._call(operation, **where, **arguments)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            message = error.response.get("Error", {}).get("Message", "")
            verb = _VERBS[operation.split("_")[0]]
            raise CatalogError(
                f"Glue catalog '{self.name}' refused to {verb} the column "
                f"statistics of {_described(table, partition)}: {code}: {message}"
            ) from None

    def _column_error(
        self,
        action: str,
        table: Table,
        partition: tuple[str, ...] | None,
        column: str | None,
        detail: dict[str, Any] | None,
    ) -> CatalogError:
        detail = detail or {}
        return CatalogError(
            f"Glue catalog '{self.name}' refused to {action} the statistics of column "
            f"{column} of {_described(table, partition)}: {detail.get('ErrorCode')}: "
            f"{detail.get('ErrorMessage')}"
        )


def _operation(
    verb: str, table: Table, partition: tuple[str, ...] | None
) -> tuple[str, dict[str, Any]]:
    """The boto3 method of ``verb`` for the table or the partition, and where it points."""
    where: dict[str, Any] = {"DatabaseName": table.database, "TableName": table.name}
    if partition is None:
        return f"{verb}_column_statistics_for_table", where
    return f"{verb}_column_statistics_for_partition", {**where, "PartitionValues": list(partition)}


def _described(table: Table, partition: tuple[str, ...] | None) -> str:
    if partition is None:
        return table.qualified_name
    return f"{table.qualified_name} partition {list(partition)}"
