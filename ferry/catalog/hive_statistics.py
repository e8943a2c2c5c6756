"""A Hive metastore's column statistics and keys, over its Thrift API (Hive 2.3).

Reads: ``get_table_statistics_req``, and ``get_partitions_statistics_req`` in pages of
``page_size`` partition names. Writes: ``set_aggr_stats_for`` with ``needMerge`` false (each
column's statistics replaced, so a retried write converges), one call for the table and one
per page of partitions. The metastore checks each column against the table's (or the
partition's) own columns, and sets ``COLUMN_STATS_ACCURATE`` in their parameters; it stamps
``lastAnalyzed`` with the time of the write. Keys: ``get_primary_keys``, ``get_foreign_keys``,
``add_primary_key``, ``add_foreign_key`` (whose parent table and columns must exist) and
``drop_constraint``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hmsclient.genthrift.hive_metastore import ttypes
from thrift.Thrift import TApplicationException

from ferry.catalog import batched
from ferry.catalog.hive_statistics_thrift import (
    column_statistics_to_thrift,
    constraints_from_thrift,
    foreign_key_to_thrift,
    primary_key_to_thrift,
    statistics_from_thrift,
)
from ferry.catalog.hive_thrift import values_from_name
from ferry.core.errors import CatalogError
from ferry.core.model import Table, partition_name
from ferry.core.statistics import ColumnStatistics, Constraints, ForeignKey

if TYPE_CHECKING:
    from hmsclient import hmsclient

_REFUSALS = (
    ttypes.MetaException,
    ttypes.InvalidObjectException,
    ttypes.InvalidInputException,
    ttypes.NoSuchObjectException,
    TApplicationException,
)


class HiveStatistics:
    """The column statistics and keys of ``HiveMetastoreCatalog`` (a part of it)."""

    name: str
    page_size: int
    supports_column_statistics = True
    supports_constraints = True

    if TYPE_CHECKING:  # HiveMetastoreCatalog's

        def call(self, operation: Callable[[hmsclient.HMSClient], Any]) -> Any: ...

        def get_table(self, database: str, name: str) -> Table | None: ...

    def _refused(self, what: str, table: Table, call: Callable[[Any], Any]) -> Any:
        try:
            return self.call(call)
        except _REFUSALS as error:
            message = " ".join((getattr(error, "message", None) or str(error)).split())
            raise CatalogError(
                f"metastore '{self.name}' refused {what} of {table.qualified_name}: {message}"
            ) from None

    # -- column statistics -------------------------------------------------------------------

    def get_column_statistics(
        self, table: Table, columns: Sequence[str] | None = None
    ) -> dict[str, ColumnStatistics]:
        names = _column_names(table, columns)
        if not names:
            return {}
        request = ttypes.TableStatsRequest(
            dbName=table.database, tblName=table.name, colNames=names
        )
        result = self._refused(
            "to read the column statistics", table, lambda c: c.get_table_statistics_req(request)
        )
        found = (statistics_from_thrift(obj) for obj in result.tableStats or [])
        return {s.column: s for s in found}

    def get_partition_column_statistics(
        self,
        table: Table,
        partitions: Sequence[tuple[str, ...]],
        columns: Sequence[str] | None = None,
    ) -> dict[tuple[str, ...], dict[str, ColumnStatistics]]:
        names = _column_names(table, columns)
        found: dict[tuple[str, ...], dict[str, ColumnStatistics]] = {}
        if not names:
            return found
        part_names = [partition_name(table.partition_keys, tuple(v)) for v in partitions]
        for page in batched(part_names, self.page_size):
            request = ttypes.PartitionsStatsRequest(
                dbName=table.database, tblName=table.name, colNames=names, partNames=page
            )
            result = self._refused(
                "to read the partition column statistics",
                table,
                lambda c, r=request: c.get_partitions_statistics_req(r),
            )
            for name, objs in (result.partStats or {}).items():
                if objs:
                    stats = (statistics_from_thrift(obj) for obj in objs)
                    found[values_from_name(name)] = {s.column: s for s in stats}
        return found

    def set_column_statistics(
        self, table: Table, statistics: Sequence[ColumnStatistics]
    ) -> list[str]:
        if statistics:
            thrift = column_statistics_to_thrift(table.database, table.name, list(statistics))
            self._set(table, [thrift], "the column statistics")
        return []

    def set_partition_column_statistics(
        self, table: Table, statistics: Mapping[tuple[str, ...], Sequence[ColumnStatistics]]
    ) -> list[str]:
        entries = [(values, list(stats)) for values, stats in statistics.items() if stats]
        for page in batched(entries, self.page_size):
            thrift = [
                column_statistics_to_thrift(
                    table.database,
                    table.name,
                    stats,
                    partition_name(table.partition_keys, tuple(values)),
                )
                for values, stats in page
            ]
            self._set(table, thrift, "the partition column statistics")
        return []

    def _set(self, table: Table, thrift: list[ttypes.ColumnStatistics], what: str) -> None:
        request = ttypes.SetPartitionsStatsRequest(colStats=thrift, needMerge=False)
        self._refused(f"to write {what}", table, lambda c: c.set_aggr_stats_for(request))

    def delete_column_statistics(
        self, table: Table, columns: Sequence[str], partition: tuple[str, ...] | None = None
    ) -> None:
        part = None if partition is None else partition_name(table.partition_keys, partition)
        for column in columns:
            if part is None:
                call = lambda c, col=column: c.delete_table_column_statistics(  # noqa: E731
                    table.database, table.name, col.lower()
                )
            else:
                call = lambda c, col=column: c.delete_partition_column_statistics(  # noqa: E731
                    table.database, table.name, part, col.lower()
                )
            try:
                self._refused("to delete the column statistics", table, call)
            except CatalogError:
                # The metastore answers a column without statistics as an error: fine here.
                if self._has_statistics(table, column, partition):
                    raise

    def _has_statistics(self, table: Table, column: str, partition: tuple[str, ...] | None) -> bool:
        if partition is None:
            return bool(self.get_column_statistics(table, [column]))
        return bool(self.get_partition_column_statistics(table, [partition], [column]))

    # -- keys --------------------------------------------------------------------------------

    def get_constraints(self, table: Table) -> Constraints:
        primary = self._refused(
            "to read the primary key",
            table,
            lambda c: c.get_primary_keys(
                ttypes.PrimaryKeysRequest(db_name=table.database, tbl_name=table.name)
            ),
        )
        foreign = self._refused(
            "to read the foreign keys",
            table,
            lambda c: c.get_foreign_keys(
                ttypes.ForeignKeysRequest(
                    foreign_db_name=table.database, foreign_tbl_name=table.name
                )
            ),
        )
        return constraints_from_thrift(primary.primaryKeys or [], foreign.foreignKeys or [])

    def add_constraints(self, table: Table, constraints: Constraints) -> None:
        """Add the primary key, then each foreign key. Every parent is checked first, so a
        missing one changes nothing (Hive 2.3 answers it with an internal error)."""
        for key in constraints.foreign_keys:
            self._check_parent(table, key)
        db, name = table.database, table.name
        if constraints.primary_key is not None:
            rows = primary_key_to_thrift(db, name, constraints.primary_key)
            self._refused(
                f"to add primary key {constraints.primary_key.name}",
                table,
                lambda c: c.add_primary_key(ttypes.AddPrimaryKeyRequest(primaryKeyCols=rows)),
            )
        for key in constraints.foreign_keys:
            rows = foreign_key_to_thrift(db, name, key)
            self._refused(
                f"to add foreign key {key.name} (to {key.parent_database}.{key.parent_table})",
                table,
                lambda c, r=rows: c.add_foreign_key(ttypes.AddForeignKeyRequest(foreignKeyCols=r)),
            )

    def _check_parent(self, table: Table, key: ForeignKey) -> None:
        parent = self.get_table(key.parent_database, key.parent_table)
        where = f"{key.parent_database}.{key.parent_table}"
        if parent is None:
            missing = f"its parent table {where} does not exist there"
        else:
            held = {c.name.lower() for c in parent.storage.columns}
            absent = [c for c in key.parent_columns if c.lower() not in held]
            if not absent:
                return
            missing = f"its parent table {where} has no column {', '.join(absent)}"
        raise CatalogError(
            f"metastore '{self.name}' cannot add foreign key {key.name} of "
            f"{table.qualified_name}: {missing}"
        )

    def drop_constraints(self, table: Table, names: Sequence[str]) -> None:
        # Hive 2.3 answers a drop of a key that does not exist with an internal error (not
        # NoSuchObjectException): drop only those the table has.
        held = {name.lower() for name in self.get_constraints(table).names}
        for constraint in names:
            if constraint.lower() not in held:
                continue  # dropped already (an earlier attempt)
            request = ttypes.DropConstraintRequest(
                dbname=table.database, tablename=table.name, constraintname=constraint
            )
            self._refused(
                f"to drop key {constraint}", table, lambda c, r=request: c.drop_constraint(r)
            )
            held.discard(constraint.lower())


def _column_names(table: Table, columns: Sequence[str] | None) -> list[str]:
    """The columns asked for, lower-cased as the metastore keeps them (all data columns)."""
    names = [c.name for c in table.storage.columns] if columns is None else list(columns)
    return [name.lower() for name in names]
