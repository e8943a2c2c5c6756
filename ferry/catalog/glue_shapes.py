"""The AWS Glue API's dictionaries (``TableInput``, ``StorageDescriptor``, ...) and Ferry's
model, both ways."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ferry.core.model import (
    Column,
    Partition,
    SortColumn,
    StorageDescriptor,
    Table,
    TableType,
)


def table_from_glue(table: dict[str, Any]) -> Table:
    """A table of ``GetTable`` / ``GetTables``, with its ``UpdateTime`` and ``VersionId``."""
    return Table(
        database=table["DatabaseName"],
        name=table["Name"],
        table_type=TableType(table.get("TableType") or TableType.EXTERNAL),
        storage=storage_from_glue(table.get("StorageDescriptor")),
        partition_keys=_columns_from_glue(table.get("PartitionKeys")),
        parameters=table.get("Parameters", {}),
        owner=table.get("Owner"),
        view_original_text=table.get("ViewOriginalText"),
        view_expanded_text=table.get("ViewExpandedText"),
        description=table.get("Description"),
        changed_at=table.get("UpdateTime") or table.get("CreateTime"),
        version_id=table.get("VersionId"),
    )


def _columns_from_glue(columns: list[dict[str, Any]] | None) -> tuple[Column, ...]:
    return tuple(
        Column(c["Name"], c.get("Type", ""), c.get("Comment"), c.get("Parameters") or {})
        for c in columns or []
    )


def _columns_to_glue(columns: Sequence[Column]) -> list[dict[str, Any]]:
    result = []
    for column in columns:
        entry = {"Name": column.name, "Type": column.type}
        if column.comment:
            entry["Comment"] = column.comment
        if column.parameters:
            entry["Parameters"] = dict(column.parameters)
        result.append(entry)
    return result


def storage_from_glue(sd: dict[str, Any] | None) -> StorageDescriptor:
    """A ``StorageDescriptor`` of Glue's (a table's or a partition's) as the model's."""
    if not sd:
        return StorageDescriptor(location=None)
    serde = sd.get("SerdeInfo", {})
    return StorageDescriptor(
        location=sd.get("Location") or None,
        columns=_columns_from_glue(sd.get("Columns")),
        input_format=sd.get("InputFormat"),
        output_format=sd.get("OutputFormat"),
        serde_library=serde.get("SerializationLibrary"),
        serde_name=serde.get("Name"),
        serde_parameters=serde.get("Parameters", {}),
        compressed=bool(sd.get("Compressed", False)),
        number_of_buckets=sd.get("NumberOfBuckets", -1),
        bucket_columns=tuple(sd.get("BucketColumns", ())),
        sort_columns=tuple(
            SortColumn(s["Column"], s["SortOrder"]) for s in sd.get("SortColumns", ())
        ),
        parameters=sd.get("Parameters", {}),
        stored_as_sub_directories=bool(sd.get("StoredAsSubDirectories", False)),
    )


def _storage_to_glue(storage: StorageDescriptor) -> dict[str, Any]:
    serde: dict[str, Any] = {"Parameters": dict(storage.serde_parameters)}
    if storage.serde_library:
        serde["SerializationLibrary"] = storage.serde_library
    if storage.serde_name:
        serde["Name"] = storage.serde_name
    sd: dict[str, Any] = {
        "Columns": _columns_to_glue(storage.columns),
        "Compressed": storage.compressed,
        "NumberOfBuckets": storage.number_of_buckets,
        "SerdeInfo": serde,
        "BucketColumns": list(storage.bucket_columns),
        "SortColumns": [{"Column": s.name, "SortOrder": s.order} for s in storage.sort_columns],
        "Parameters": dict(storage.parameters),
        "StoredAsSubDirectories": storage.stored_as_sub_directories,
    }
    if storage.location:
        sd["Location"] = storage.location
    if storage.input_format:
        sd["InputFormat"] = storage.input_format
    if storage.output_format:
        sd["OutputFormat"] = storage.output_format
    return sd


def table_input(table: Table) -> dict[str, Any]:
    """The ``TableInput`` that creates or updates ``table``."""
    table_input: dict[str, Any] = {
        "Name": table.name,
        "TableType": table.table_type.value,
        "StorageDescriptor": _storage_to_glue(table.storage),
        "PartitionKeys": _columns_to_glue(table.partition_keys),
        "Parameters": dict(table.parameters),
    }
    if table.owner:
        table_input["Owner"] = table.owner
    if table.description:
        table_input["Description"] = table.description
    if table.view_original_text is not None:
        table_input["ViewOriginalText"] = table.view_original_text
    if table.view_expanded_text is not None:
        table_input["ViewExpandedText"] = table.view_expanded_text
    return table_input


def partition_input(partition: Partition) -> dict[str, Any]:
    """The ``PartitionInput`` that adds or updates ``partition``."""
    return {
        "Values": list(partition.values),
        "StorageDescriptor": _storage_to_glue(partition.storage),
        "Parameters": dict(partition.parameters),
    }
