"""The Hive metastore adapter: Thrift through ``hmsclient`` (generated from Hive 2.3)."""

from __future__ import annotations

import functools
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TypeVar
from urllib.parse import unquote

from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore import ttypes
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TException
from thrift.transport import TSocket, TTransport

from ferry.catalog import PAGE_SIZE, Catalog, batched, is_integral, partition_sort_key
from ferry.core.errors import (
    CatalogError,
    CatalogUnreachableError,
    ConcurrentChangeError,
    NotAMetastoreError,
)
from ferry.core.model import (
    CatalogKind,
    Column,
    Database,
    Partition,
    SortColumn,
    StorageDescriptor,
    Table,
    TableType,
)

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_MS = 10_000
# A metastore answers its first, cheap call at once. Without this bound, a port that is not
# a metastore (an HTTP server, a listener that never answers) would hold each table for
# CALL_TIMEOUT_MS before failing.
FIRST_RESPONSE_TIMEOUT_MS = 10_000
READ_CONNECTIONS = 2  # pages fetched at once; more bought little against one metastore
CALL_TIMEOUT_MS = 600_000  # add_partitions of 1000 on a busy metastore can take minutes
# Any key will do: a metastore answers getMetaConf with the value or with a MetaException.
_PROBE_KEY = "hive.metastore.batch.retrieve.max"

R = TypeVar("R")


class HiveMetastoreCatalog(Catalog):
    """A catalog behind one or more ``thrift://host:port`` metastore URIs (tried in order).

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
        self.description = ",".join(self.uris)
        self._idle: list[hmsclient.HMSClient] = []
        self._lock = threading.Lock()

    # -- connection ---------------------------------------------------------------------

    def _connect(self) -> hmsclient.HMSClient:
        """A client of the first URI that answers like a Hive metastore.

        An open port is not enough: the first call is a cheap one under a short timeout, and
        only a Thrift reply (a value or a metastore error) counts as an answer.
        """
        errors, answered_wrongly = [], 0
        for uri in self.uris:
            host, _, port = uri.removeprefix("thrift://").rpartition(":")
            socket = TSocket.TSocket(host.strip("[]"), int(port))  # [::1] is an IPv6 host
            socket.setTimeout(CONNECT_TIMEOUT_MS)
            client = hmsclient.HMSClient(
                # The C-accelerated codec: a page of 1000 partitions decodes ~10x faster.
                iprot=TBinaryProtocol.TBinaryProtocolAccelerated(
                    TTransport.TBufferedTransport(socket)
                )
            )
            try:
                client.open()
            except TException as error:
                errors.append(f"{uri} ({error})")
                continue
            socket.setTimeout(FIRST_RESPONSE_TIMEOUT_MS)
            try:
                client.getMetaConf(_PROBE_KEY)
            except (ttypes.MetaException, TApplicationException):
                pass  # a Thrift server's own error reply: it answered
            except Exception as error:  # a timeout, or bytes that are not a Thrift reply
                socket.close()
                errors.append(f"{uri} ({_not_a_metastore(error)})")
                answered_wrongly += 1
                continue
            socket.setTimeout(CALL_TIMEOUT_MS)
            return client
        message = f"cannot reach Hive metastore '{self.name}' at {', '.join(errors)}"
        if answered_wrongly == len(self.uris):
            # Something listens there, but not a metastore: a mistake, not worth retrying.
            raise NotAMetastoreError(message)
        raise CatalogUnreachableError(message)

    def call(self, operation: Callable[[hmsclient.HMSClient], R]) -> R:
        """Run ``operation`` on a pooled Thrift client: the one way to the metastore's API
        (a lost connection is ``CatalogUnreachableError``, and the client is not reused)."""
        with self._lock:
            client = self._idle.pop() if self._idle else None
        if client is None:
            # thrift logs each refused connection at ERROR before we report it in one line.
            logging.getLogger("thrift.transport.TSocket").setLevel(logging.CRITICAL)
            client = self._connect()
        try:
            return operation(client)
        except TTransport.TTransportException as error:
            client.close()  # broken: not returned to the pool
            client = None
            raise CatalogUnreachableError(
                f"lost the connection to Hive metastore '{self.name}' ({self.description}): {error}"
            ) from None
        finally:
            if client is not None:  # a value or a metastore's error reply: still usable
                with self._lock:
                    self._idle.append(client)

    def close(self) -> None:
        with self._lock:
            clients, self._idle = self._idle, []
        for client in clients:
            client.close()

    # -- reads ----------------------------------------------------------------------------

    def get_database(self, name: str) -> Database | None:
        try:
            return _database_from_thrift(self.call(lambda c: c.get_database(name)))
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
        return {_values_from_name(name): name for name in names}

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
        for partition_values in values:
            try:
                self.call(
                    lambda c, v=partition_values: c.drop_partition(
                        table.database, table.name, list(v), False
                    )
                )
            except ttypes.NoSuchObjectException:
                pass  # already dropped (an earlier attempt of the same commit)

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


def _not_a_metastore(error: Exception) -> str:
    """Why a port that accepted the connection is taken for something else."""
    if (
        isinstance(error, TTransport.TTransportException)
        and error.type == TTransport.TTransportException.TIMED_OUT
    ):
        return (
            "connected, but it did not answer like a Hive metastore within "
            f"{FIRST_RESPONSE_TIMEOUT_MS // 1000} s"
        )
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"connected, but it did not answer like a Hive metastore: {reason}"


# -- partition value ranges -----------------------------------------------------------------


def value_range_filters(
    keys: Sequence[Column], values: Sequence[tuple[str, ...]], page: int
) -> list[str] | None:
    """Filter expressions that split sorted partition ``values`` into ranges of ≤ ``page``.

    Ranges bound the first key; a value of the first key with more than a page of
    partitions is split further on the next key, under an equality on the first. Returns
    None when a key's type or a value cannot be written in the metastore filter grammar.
    """
    if not values:
        return []
    ranges: list[str] = []

    def literal(key: Column, value: str) -> str | None:
        if is_integral(key):
            return value if value.lstrip("-").isdigit() else None
        if key.type.lower() not in (
            "string",
            "varchar",
            "char",
        ) and not key.type.lower().startswith(("varchar", "char")):
            return None
        if "'" not in value:
            return f"'{value}'"
        if '"' not in value:
            return f'"{value}"'
        return None  # the grammar has no escapes

    def split(depth: int, group: Sequence[tuple[str, ...]], prefix: list[str]) -> bool:
        key = keys[depth]
        pending: list[tuple[str, int]] = []  # (value, count) of the range being built

        def flush() -> bool:
            if not pending:
                return True
            low, high = literal(key, pending[0][0]), literal(key, pending[-1][0])
            if low is None or high is None:
                return False
            ranges.append(" AND ".join([*prefix, f"{key.name} >= {low}", f"{key.name} <= {high}"]))
            pending.clear()
            return True

        for value, members in itertools.groupby(group, key=lambda v: v[depth]):
            members = list(members)
            if len(members) > page:
                equal = literal(key, value)
                if not flush() or equal is None:
                    return False
                if not split(depth + 1, members, [*prefix, f"{key.name} = {equal}"]):
                    return False
                continue
            if sum(count for _, count in pending) + len(members) > page and not flush():
                return False
            pending.append((value, len(members)))
        return flush()

    return ranges if split(0, list(values), []) else None


def _values_from_name(name: str) -> tuple[str, ...]:
    return tuple(unquote(part.split("=", 1)[1]) for part in name.split("/"))


# -- Thrift <-> model -----------------------------------------------------------------------


def _database_from_thrift(db: ttypes.Database) -> Database:
    return Database(
        name=db.name,
        description=db.description,
        location=db.locationUri,
        parameters=dict(db.parameters or {}),
    )


def _columns_from_thrift(columns: list[ttypes.FieldSchema] | None) -> tuple[Column, ...]:
    return tuple(Column(c.name, c.type, c.comment) for c in columns or [])


def _columns_to_thrift(columns: Sequence[Column]) -> list[ttypes.FieldSchema]:
    return [ttypes.FieldSchema(name=c.name, type=c.type, comment=c.comment) for c in columns]


def storage_from_thrift(sd: ttypes.StorageDescriptor | None) -> StorageDescriptor:
    if sd is None:
        return StorageDescriptor(location=None)
    serde = sd.serdeInfo or ttypes.SerDeInfo()
    return StorageDescriptor(
        location=sd.location,
        columns=_columns_from_thrift(sd.cols),
        input_format=sd.inputFormat,
        output_format=sd.outputFormat,
        serde_library=serde.serializationLib,
        serde_name=serde.name,
        serde_parameters=dict(serde.parameters or {}),
        compressed=bool(sd.compressed),
        number_of_buckets=sd.numBuckets if sd.numBuckets is not None else -1,
        bucket_columns=tuple(sd.bucketCols or ()),
        sort_columns=tuple(SortColumn(o.col, o.order) for o in sd.sortCols or ()),
        parameters=dict(sd.parameters or {}),
        stored_as_sub_directories=bool(sd.storedAsSubDirectories),
    )


def storage_to_thrift(storage: StorageDescriptor) -> ttypes.StorageDescriptor:
    return ttypes.StorageDescriptor(
        cols=_columns_to_thrift(storage.columns),
        location=storage.location,
        inputFormat=storage.input_format,
        outputFormat=storage.output_format,
        compressed=storage.compressed,
        numBuckets=storage.number_of_buckets,
        serdeInfo=ttypes.SerDeInfo(
            name=storage.serde_name,
            serializationLib=storage.serde_library,
            parameters=dict(storage.serde_parameters),
        ),
        bucketCols=list(storage.bucket_columns),
        sortCols=[ttypes.Order(col=s.name, order=s.order) for s in storage.sort_columns],
        parameters=dict(storage.parameters),
        skewedInfo=ttypes.SkewedInfo(
            skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={}
        ),
        storedAsSubDirectories=storage.stored_as_sub_directories,
    )


def table_from_thrift(table: ttypes.Table) -> Table:
    return Table(
        database=table.dbName,
        name=table.tableName,
        table_type=TableType(table.tableType or TableType.MANAGED),
        storage=storage_from_thrift(table.sd),
        partition_keys=_columns_from_thrift(table.partitionKeys),
        parameters=dict(table.parameters or {}),
        owner=table.owner,
        view_original_text=table.viewOriginalText,
        view_expanded_text=table.viewExpandedText,
        changed_at=_moment(table.createTime, (table.parameters or {}).get(_LAST_DDL_TIME)),
    )


def table_to_thrift(table: Table) -> ttypes.Table:
    return ttypes.Table(
        tableName=table.name,
        dbName=table.database,
        owner=table.owner,
        sd=storage_to_thrift(table.storage),
        partitionKeys=_columns_to_thrift(table.partition_keys),
        parameters=dict(table.parameters),
        viewOriginalText=table.view_original_text,
        viewExpandedText=table.view_expanded_text,
        tableType=table.table_type.value,
    )


def partition_from_thrift(partition: ttypes.Partition) -> Partition:
    return Partition(
        values=tuple(partition.values),
        storage=storage_from_thrift(partition.sd),
        parameters=dict(partition.parameters or {}),
        changed_at=_moment(partition.createTime, (partition.parameters or {}).get(_LAST_DDL_TIME)),
    )


#: Tables read by one ``get_table_objects_by_name``.
_TABLES_PER_CALL = 100
#: The time (epoch seconds) the metastore sets on each DDL of a table or partition.
_LAST_DDL_TIME = "transient_lastDdlTime"


def _moment(create_time: int | None, last_ddl_time: str | None) -> datetime | None:
    """The later of a create time and a ``transient_lastDdlTime`` (epoch seconds)."""
    seconds = [create_time or 0]
    if last_ddl_time and last_ddl_time.isdigit():
        seconds.append(int(last_ddl_time))
    latest = max(seconds)
    return datetime.fromtimestamp(latest, UTC) if latest > 0 else None


def partition_to_thrift(table: Table, partition: Partition) -> ttypes.Partition:
    return ttypes.Partition(
        values=list(partition.values),
        dbName=table.database,
        tableName=table.name,
        sd=storage_to_thrift(partition.storage),
        parameters=dict(partition.parameters),
    )


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
