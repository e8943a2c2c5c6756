"""Hive's Thrift objects (``hmsclient``, generated from Hive 2.3) and Ferry's model, both ways.

Also the metastore's spelling of a partition's name (``key=value/key2=value2``, values
escaped as paths are), which ``get_partition_names`` answers with.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from urllib.parse import unquote

from hmsclient.genthrift.hive_metastore import ttypes

from ferry.core.model import (
    Column,
    Database,
    Partition,
    SortColumn,
    StorageDescriptor,
    Table,
    TableType,
)

#: The time (epoch seconds) the metastore sets on each DDL of a table or partition.
_LAST_DDL_TIME = "transient_lastDdlTime"


def values_from_name(name: str) -> tuple[str, ...]:
    """A partition's values, from its name as the metastore spells it."""
    return tuple(unquote(part.split("=", 1)[1]) for part in name.split("/"))


def database_from_thrift(db: ttypes.Database) -> Database:
    """A database of ``get_database`` as the model's."""
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
