"""The catalog port: what Ferry needs from a metastore, whichever kind it is.

``HiveMetastoreCatalog`` speaks Thrift to a Hive metastore; ``GlueCatalog`` speaks to the
AWS Glue Data Catalog. Both read and write Ferry's own model (``ferry.core.model``), fetch
partitions in pages and write them in batches, never one call per partition.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import ClassVar

from ferry.core.errors import NotSupportedByCatalogError
from ferry.core.model import CatalogKind, Column, Database, Partition, Table
from ferry.core.statistics import ColumnStatistics, Constraints

# The most partitions fetched or written by one call (Glue's own write limit is lower).
PAGE_SIZE = 1000

_INTEGRAL_TYPES = {"tinyint", "smallint", "int", "integer", "bigint"}


class Catalog(ABC):
    """A Hive-compatible catalog of databases, tables and partitions."""

    #: The name the config gives the catalog (e.g. ``onprem``).
    name: str
    #: Where it is, for people and for replica parameters (metastore URIs, ``glue:region``).
    description: str
    #: Which kind it is: Iceberg tables are registered each kind's own way.
    kind: ClassVar[CatalogKind]

    @abstractmethod
    def get_database(self, name: str) -> Database | None: ...

    @abstractmethod
    def create_database(self, database: Database) -> None: ...

    @abstractmethod
    def get_table(self, database: str, name: str) -> Table | None: ...

    def get_tables(self, database: str, names: Sequence[str]) -> dict[str, Table]:
        """The tables of ``database`` among ``names`` that exist, by lower-case name.

        Catalogs that read many tables in one call override it (``ferry status`` reads
        every table of a config).
        """
        found = {}
        for name in names:
            table = self.get_table(database, name)
            if table is not None:
                found[name.lower()] = table
        return found

    @abstractmethod
    def list_partitions(
        self, table: Table, partition_filter: str | None = None, limit: int | None = None
    ) -> list[Partition]:
        """Partitions matching the filter, in partition-value order, at most ``limit``."""

    @abstractmethod
    def list_partition_values(self, table: Table) -> set[tuple[str, ...]]:
        """The values of every partition of ``table`` (cheap: no storage descriptors)."""

    @abstractmethod
    def create_table(self, table: Table) -> None: ...

    @abstractmethod
    def alter_table(self, table: Table) -> None: ...

    @abstractmethod
    def alter_table_if(self, table: Table, key: str, expected: str) -> None:
        """Write ``table`` only if the catalog's copy still has parameter ``key`` equal to
        ``expected``, in one atomic step of the catalog's own; else ``ConcurrentChangeError``
        and nothing is written. Two writers that read the same value: exactly one succeeds.
        """

    @abstractmethod
    def add_partitions(self, table: Table, partitions: Sequence[Partition]) -> None: ...

    @abstractmethod
    def alter_partitions(self, table: Table, partitions: Sequence[Partition]) -> None: ...

    @abstractmethod
    def drop_partitions(self, table: Table, values: Sequence[tuple[str, ...]]) -> None:
        """Drop these partitions (metadata only: replicas are EXTERNAL); missing ones are fine."""

    @abstractmethod
    def list_table_names(self, database: str) -> list[str]:
        """The names of the tables (and views) of ``database``; none if it does not exist."""

    @abstractmethod
    def drop_table(self, database: str, name: str) -> None: ...

    @abstractmethod
    def drop_database(self, name: str) -> None:
        """Drop an empty database (tests and the demo clean up with it)."""

    # -- column statistics and keys (``ferry.core.statistics``) ----------------------------
    # Not every catalog holds them: these default to ``NotSupportedByCatalogError``, and the
    # flags say beforehand which a catalog has.

    #: Whether the catalog reads and writes column statistics.
    supports_column_statistics: ClassVar[bool] = False
    #: Whether the catalog holds primary and foreign keys.
    supports_constraints: ClassVar[bool] = False

    def _not_supported(self, what: str) -> NotSupportedByCatalogError:
        return NotSupportedByCatalogError(f"catalog '{self.name}' ({self.kind}) holds no {what}")

    def get_column_statistics(
        self, table: Table, columns: Sequence[str] | None = None
    ) -> dict[str, ColumnStatistics]:
        """The statistics of ``table``'s columns (all its data columns if None), by column
        name; a column without statistics is absent."""
        raise self._not_supported("column statistics")

    def get_partition_column_statistics(
        self,
        table: Table,
        partitions: Sequence[tuple[str, ...]],
        columns: Sequence[str] | None = None,
    ) -> dict[tuple[str, ...], dict[str, ColumnStatistics]]:
        """The statistics of the columns of each of ``partitions`` (by values), which must
        exist, by column name; a partition without any is absent."""
        raise self._not_supported("column statistics")

    def set_column_statistics(
        self, table: Table, statistics: Sequence[ColumnStatistics]
    ) -> list[str]:
        """Write (replace) these statistics of ``table``'s columns; the columns must be the
        table's as the catalog holds it. Returns what the catalog could not hold, one line
        each (``ferry.core.statistics.unmapped``)."""
        raise self._not_supported("column statistics")

    def set_partition_column_statistics(
        self, table: Table, statistics: Mapping[tuple[str, ...], Sequence[ColumnStatistics]]
    ) -> list[str]:
        """Write (replace) the statistics of each partition (by values), which must exist."""
        raise self._not_supported("column statistics")

    def delete_column_statistics(
        self, table: Table, columns: Sequence[str], partition: tuple[str, ...] | None = None
    ) -> None:
        """Delete the statistics of ``columns`` of the table (or of one partition); columns
        without any are fine."""
        raise self._not_supported("column statistics")

    def get_constraints(self, table: Table) -> Constraints:
        """``table``'s primary key and its foreign keys."""
        raise self._not_supported("primary or foreign keys")

    def add_constraints(self, table: Table, constraints: Constraints) -> None:
        """Add these keys to ``table``; a foreign key's parent table and columns must exist."""
        raise self._not_supported("primary or foreign keys")

    def drop_constraints(self, table: Table, names: Sequence[str]) -> None:
        """Drop the keys named ``names`` of ``table``; missing ones are fine."""
        raise self._not_supported("primary or foreign keys")

    #: Held open by its opener (``ferry.catalog.held_catalogs.HeldCatalogs``): the end of a
    #: ``with`` block leaves it open, and the opener closes it.
    held: bool = False

    def close(self) -> None:  # noqa: B027 - most catalogs hold nothing to release
        """Release connections; the catalog must not be used afterwards."""

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self.held:
            self.close()


def partition_sort_key(keys: Sequence[Column], values: Sequence[str]) -> tuple:
    """Order partitions as the metastore would: integral keys numerically, others as text."""
    parts: list[tuple[int, object]] = []
    for key, value in zip(keys, values, strict=True):
        if key.type.lower() in _INTEGRAL_TYPES:
            try:
                parts.append((0, int(value)))
                continue
            except ValueError:
                pass  # e.g. __HIVE_DEFAULT_PARTITION__ sorts after the numbers
        parts.append((1, value))
    return tuple(parts)


def is_integral(column: Column) -> bool:
    return column.type.lower() in _INTEGRAL_TYPES


def batched[T](items: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
