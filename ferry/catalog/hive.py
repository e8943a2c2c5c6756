"""The Hive metastore adapter: Thrift through ``hmsclient`` (generated from Hive 2.3).

Its connections are ``ferry.catalog.hive_connections``', its conversions between Thrift
objects and the model ``ferry.catalog.hive_thrift``'s, and the filters that page a filtered
listing ``ferry.catalog.hive_partition_filters``'.
"""

from __future__ import annotations

import functools
import itertools
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore import ttypes
from thrift.Thrift import TApplicationException

from ferry.catalog import PAGE_SIZE, Catalog, batched, partition_sort_key
from ferry.catalog.hive_connections import MetastoreConnections, R
from ferry.catalog.hive_partition_filters import value_range_filters
from ferry.catalog.hive_statistics import HiveStatistics
from ferry.catalog.hive_thrift import (
    database_from_thrift,
    partition_from_thrift,
    partition_to_thrift,
    table_from_thrift,
    table_to_thrift,
    values_from_name,
)
from ferry.core.errors import CatalogError, ConcurrentChangeError
from ferry.core.model import CatalogKind, Database, Partition, Table, partition_name

READ_CONNECTIONS = 2  # pages fetched at once; more bought little against one metastore
#: Tables read by one ``get_table_objects_by_name``.
_TABLES_PER_CALL = 100


class HiveMetastoreCatalog(HiveStatistics, Catalog):
    """A catalog behind one or more ``thrift://host:port`` metastore URIs (tried in order).

    Its column statistics and keys are ``HiveStatistics``'.

    Calls share a small pool of connections: sequential calls reuse one, and the pages of a
    partition listing are fetched over ``read_connections`` at once — a metastore serves
    each connection on its own thread, and a page of 1000 partitions is mostly its time.
    """

    kind = CatalogKind.HIVE_METASTORE

    def __init__(
        self,
        name: str,
        uris: Sequence[str],
        page_size: int = PAGE_SIZE,
        read_connections: int = READ_CONNECTIONS,
    ):
        self.name = name
        self.page_size = page_size
        self.read_connections = max(1, read_connections)
        self.uris = list(uris)
        self._connections = MetastoreConnections(name, self.uris)
        self.description = self._connections.description

    # -- connection ---------------------------------------------------------------------

    def call(self, operation: Callable[[hmsclient.HMSClient], R]) -> R:
        """Run ``operation`` on a pooled Thrift client: the one way to the metastore's API
        (a lost connection is ``CatalogUnreachableError``, and the client is not reused)."""
        return self._connections.call(operation)

    def close(self) -> None:
        self._connections.close()

    # -- reads ----------------------------------------------------------------------------

    def get_database(self, name: str) -> Database | None:
        try:
            return database_from_thrift(self.call(lambda c: c.get_database(name)))
        except ttypes.NoSuchObjectException:
            return None

    def get_table(self, database: str, name: str) -> Table | None:
        try:
            return table_from_thrift(self.call(lambda c: c.get_table(database, name)))
        except ttypes.NoSuchObjectException:
            return None

    def get_tables(self, database: str, names: Sequence[str]) -> dict[str, Table]:
        """``get_table_objects_by_name``: up to ``_TABLES_PER_CALL`` tables a call."""
        found: dict[str, Table] = {}
        for batch in batched(list(names), _TABLES_PER_CALL):
            try:
                tables = self.call(lambda c, b=batch: c.get_table_objects_by_name(database, b))
            except (ttypes.UnknownDBException, ttypes.NoSuchObjectException):
                return {}
            except TApplicationException:
                # Hive 2.3 answers a database that does not exist with no result at all.
                if self.get_database(database) is None:
                    return {}
                raise
            found.update((t.tableName.lower(), table_from_thrift(t)) for t in tables or [])
        return found

    def list_table_names(self, database: str) -> list[str]:
        try:
            return list(self.call(lambda c: c.get_all_tables(database)))
        except ttypes.MetaException:
            return []

    def list_partition_values(self, table: Table) -> set[tuple[str, ...]]:
        return set(self._partition_names(table))

    def _partition_names(self, table: Table) -> dict[tuple[str, ...], str]:
        """Each partition's values, and its name as the metastore spells it."""
        names = self.call(lambda c: c.get_partition_names(table.database, table.name, -1))
        return {values_from_name(name): name for name in names}

    def list_partitions(
        self, table: Table, partition_filter: str | None = None, limit: int | None = None
    ) -> list[Partition]:
        keys = table.partition_keys
        if not keys:
            return []
        names = self._partition_names(table)
        values = sorted(names, key=lambda v: partition_sort_key(keys, v))
        result: list[Partition] = []
        calls = self._page_calls(table, values, partition_filter, names)
        with ThreadPoolExecutor(self.read_connections, thread_name_prefix="ferry-hms") as pool:
            # Pages in order, at most read_connections in flight: a partition-limit stops
            # after the page that reaches it, with at most that many more fetched.
            fetch = functools.partial(pool.submit, self._by_filter_or_names)
            in_flight = deque(map(fetch, itertools.islice(calls, self.read_connections)))
            while in_flight:
                page = in_flight.popleft().result()
                result.extend(sorted(page, key=lambda p: partition_sort_key(keys, p.values)))
                if limit is not None and len(result) >= limit:
                    for pending in in_flight:
                        pending.cancel()
                    return result[:limit]
                in_flight.extend(map(fetch, itertools.islice(calls, 1)))
        return result

    def _page_calls(
        self,
        table: Table,
        values: list[tuple[str, ...]],
        partition_filter: str | None,
        names: dict[tuple[str, ...], str],
    ) -> Iterator[Callable[[hmsclient.HMSClient], list]]:
        """The calls that fetch partitions at most ``page_size`` each, in partition-value order.

        Without a filter, names are fetched first and partitions by name in pages. With one,
        the filter is ANDed with a range of partition values that holds at most a page, so
        the metastore never materialises more than a page (huge tables made metastores run
        out of memory when listed whole).
        """
        db, name = table.database, table.name
        if partition_filter is None:
            for page in batched((names[v] for v in values), self.page_size):
                yield lambda c, n=page: c.get_partitions_by_names(db, name, n)
            return
        ranges = value_range_filters(table.partition_keys, values, self.page_size)
        if ranges is None:  # a key type or value the filter grammar cannot bound: one call
            ranges = [None]
        for bounds in ranges:
            expression = (
                partition_filter if bounds is None else f"({partition_filter}) AND ({bounds})"
            )
            yield lambda c, e=expression: c.get_partitions_by_filter(db, name, e, -1)

    def _by_filter_or_names(self, call: Callable[[hmsclient.HMSClient], list]) -> list[Partition]:
        try:
            return [partition_from_thrift(p) for p in self.call(call)]
        except ttypes.MetaException as error:
            raise CatalogError(
                f"metastore '{self.name}' rejected the request: {error.message}"
            ) from None

    # -- writes ---------------------------------------------------------------------------

    def create_database(self, database: Database) -> None:
        thrift = ttypes.Database(
            name=database.name,
            description=database.description,
            locationUri=database.location,
            parameters=dict(database.parameters),
        )
        try:
            self.call(lambda c: c.create_database(thrift))
        except ttypes.AlreadyExistsException:
            pass  # created meanwhile by someone else: fine, it exists

    def create_table(self, table: Table) -> None:
        self._write(lambda c: c.create_table(table_to_thrift(table)), table)

    def alter_table(self, table: Table) -> None:
        self._write(
            lambda c: c.alter_table(table.database, table.name, table_to_thrift(table)), table
        )

    def alter_table_if(self, table: Table, key: str, expected: str) -> None:
        """Hive's compare-and-set alter (HIVE-26882, in 2.3.10, 4.0): the metastore updates
        the table only if its parameter ``key`` still holds ``expected``, in the same
        transaction as the alter. A metastore without it would ignore the condition."""
        context = ttypes.EnvironmentContext(
            properties={"expected_parameter_key": key, "expected_parameter_value": expected}
        )
        thrift = table_to_thrift(table)
        try:
            self.call(
                lambda c: c.alter_table_with_environment_context(
                    table.database, table.name, thrift, context
                )
            )
        except ttypes.MetaException as error:
            if "has been modified" in (error.message or ""):
                raise ConcurrentChangeError(
                    f"replica table {table.qualified_name} changed since it was read "
                    f"(its {key} is no longer {expected})"
                ) from None
            raise CatalogError(
                f"metastore '{self.name}' refused to write {table.qualified_name}: {error.message}"
            ) from None
        except (ttypes.InvalidOperationException, ttypes.NoSuchObjectException) as error:
            raise CatalogError(
                f"metastore '{self.name}' refused to write {table.qualified_name}: "
                f"{_refusal(getattr(error, 'message', None) or str(error))}"
            ) from None

    def add_partitions(self, table: Table, partitions: Sequence[Partition]) -> None:
        for batch in batched(partitions, self.page_size):
            thrift = [partition_to_thrift(table, p) for p in batch]
            self._write(lambda c, t=thrift: c.add_partitions(t), table)

    def alter_partitions(self, table: Table, partitions: Sequence[Partition]) -> None:
        for batch in batched(partitions, self.page_size):
            thrift = [partition_to_thrift(table, p) for p in batch]
            self._write(
                lambda c, t=thrift: c.alter_partitions(table.database, table.name, t), table
            )

    def drop_partitions(self, table: Table, values: Sequence[tuple[str, ...]]) -> None:
        """Drop by name (``partition_name``, as the metastore spells it), up to ``page_size``
        partitions a call, one transaction each, never their data. A partition already gone
        (an earlier attempt of the same commit dropped it) is skipped (``ifExists``)."""
        names = [partition_name(table.partition_keys, v) for v in dict.fromkeys(values)]
        for page in batched(names, self.page_size):
            request = ttypes.DropPartitionsRequest(
                dbName=table.database,
                tblName=table.name,
                parts=ttypes.RequestPartsSpec(names=list(page)),
                deleteData=False,
                ifExists=True,
                needResult=False,
            )
            self._write(lambda c, r=request: c.drop_partitions_req(r), table)

    def drop_table(self, database: str, name: str) -> None:
        try:
            self.call(lambda c: c.drop_table(database, name, False))
        except ttypes.NoSuchObjectException:
            pass

    def drop_database(self, name: str) -> None:
        # drop_database(ignoreUnknownDb=True) on a missing database fails with an NPE
        # (MetaException) in Hive 2.3, so look first.
        if self.get_database(name) is not None:
            self.call(lambda c: c.drop_database(name, False, True))

    def _write(self, call: Callable[[hmsclient.HMSClient], object], table: Table) -> None:
        try:
            self.call(call)
        except (
            ttypes.MetaException,
            ttypes.InvalidObjectException,
            ttypes.InvalidOperationException,
            ttypes.AlreadyExistsException,
            ttypes.NoSuchObjectException,
            TApplicationException,
        ) as error:
            message = getattr(error, "message", None) or str(error)
            raise CatalogError(
                f"metastore '{self.name}' refused to write {table.qualified_name}: {message}"
            ) from None


# Hive's answer when new columns do not convert from the old ones position by position.
_INCOMPATIBLE_COLUMNS = "incompatible with the existing columns"


def _refusal(message: str) -> str:
    """A metastore's refusal as one line, with what to do about the one Ferry users meet."""
    line = " ".join(message.split())
    if _INCOMPATIBLE_COLUMNS in line:
        line += (
            " (the metastore compares a table's columns by position: a column moved or "
            "dropped at the source needs hive.metastore.disallow.incompatible.col.type."
            "changes=false on this metastore, as Iceberg's own HiveCatalog does; for a Hive "
            "table, replication-mode FULL_OVERWRITE)"
        )
    return line
