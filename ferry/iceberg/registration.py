"""An Iceberg replica's catalog entry, the way the replica's own catalog registers Iceberg tables.

Whatever kind of catalog the source is in, the replica is registered as Iceberg's catalogs of
the replica's kind register a table (pyiceberg 0.12's ``HiveCatalog`` and ``GlueCatalog``,
which follow Iceberg's Java catalogs), derived from the replica's own new metadata:

- **Hive metastore**: an ``EXTERNAL_TABLE`` with parameters ``EXTERNAL=TRUE``,
  ``table_type=ICEBERG``, ``metadata_location`` (and ``previous_metadata_location``), the
  metadata's table properties; a storage descriptor at the table's location with the
  current schema's columns in Hive's types, and ``FileInputFormat``/``FileOutputFormat``/
  ``LazySimpleSerDe`` — or, where Hive's Iceberg engine is enabled for the table
  (``engine.hive.enabled``, or the entry it replicates uses Iceberg's storage handler),
  ``HiveIcebergInputFormat``/``HiveIcebergOutputFormat``/``HiveIcebergSerDe`` and the
  ``storage_handler`` parameter, as Iceberg's ``HiveTableOperations`` writes them.
- **Glue**: an ``EXTERNAL_TABLE`` with Parameters ``table_type=ICEBERG``,
  ``metadata_location`` (and ``previous_metadata_location``), the metadata's table
  properties; a StorageDescriptor with only ``Location`` and ``Columns`` — every schema's
  fields, each with ``iceberg.field.id``/``optional``/``current`` — and the ``Description``.

What the source's entry carries that users expect kept travels too: its owner, its
description (Glue's ``Description`` ↔ Hive's ``comment`` parameter) and its user parameters,
but never its ``metadata_location``/``previous_metadata_location``, its Iceberg table
properties (the replica's metadata has its own, with paths moved), nor what only the
source's kind of catalog maintains or understands (Hive's statistics and storage handler on
Glue, Glue's crawler bookkeeping on Hive). An existing replica keeps its other parameters.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyiceberg.table.metadata import TableMetadata

from ferry.core.model import CatalogKind, Column, StorageDescriptor, Table, TableType
from ferry.iceberg.recognise import (
    ICEBERG,
    METADATA_LOCATION,
    PREVIOUS_METADATA_LOCATION,
    TABLE_TYPE,
)

EXTERNAL = "EXTERNAL"
#: A Hive metastore's table comment; Glue has ``Description``.
COMMENT = "comment"
#: Iceberg's table property that turns on Hive's Iceberg engine for the table.
ENGINE_HIVE_ENABLED = "engine.hive.enabled"
STORAGE_HANDLER = "storage_handler"
HIVE_ICEBERG_STORAGE_HANDLER = "org.apache.iceberg.mr.hive.HiveIcebergStorageHandler"
HIVE_ICEBERG_INPUT_FORMAT = "org.apache.iceberg.mr.hive.HiveIcebergInputFormat"
HIVE_ICEBERG_OUTPUT_FORMAT = "org.apache.iceberg.mr.hive.HiveIcebergOutputFormat"
HIVE_ICEBERG_SERDE = "org.apache.iceberg.mr.hive.HiveIcebergSerDe"
FILE_INPUT_FORMAT = "org.apache.hadoop.mapred.FileInputFormat"
FILE_OUTPUT_FORMAT = "org.apache.hadoop.mapred.FileOutputFormat"
LAZY_SIMPLE_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"

#: Parameters only the Iceberg registration sets: never carried from the source's entry.
_REGISTRATION = frozenset({TABLE_TYPE, METADATA_LOCATION, PREVIOUS_METADATA_LOCATION})
#: What a Hive metastore maintains or understands, and Glue does not: its statistics, its
#: DDL time, Hive's storage handler and bucketing version, and ``EXTERNAL`` (Glue has the
#: table type for it).
_HIVE_ONLY = frozenset(
    {
        EXTERNAL,
        STORAGE_HANDLER,
        "transient_lastDdlTime",
        "last_modified_by",
        "last_modified_time",
        "numFiles",
        "numFilesErasureCoded",
        "numRows",
        "numPartitions",
        "rawDataSize",
        "totalSize",
        "COLUMN_STATS_ACCURATE",
        "bucketing_version",
    }
)
#: What Glue and its crawlers maintain, and a Hive metastore does not understand.
_GLUE_ONLY = frozenset(
    {
        "UPDATED_BY_CRAWLER",
        "CrawlerSchemaDeserializerVersion",
        "CrawlerSchemaSerializerVersion",
        "averageRecordSize",
        "objectCount",
        "recordCount",
        "sizeKey",
        "compressionType",
        "classification",
        "typeOfData",
    }
)
_ONLY = {CatalogKind.HIVE_METASTORE: _HIVE_ONLY, CatalogKind.GLUE: _GLUE_ONLY}


def register_iceberg_replica(
    kind: CatalogKind,
    database: str,
    name: str,
    metadata: TableMetadata,
    metadata_location: str,
    previous_metadata_location: str | None,
    parameters: Mapping[str, str],
    *,
    source_table: Table,
    source_kind: CatalogKind,
    source_properties: Mapping[str, str],
    replica_before: Table | None,
    previous_properties: Mapping[str, str] | None = None,
) -> Table:
    """The replica ``database.name``'s catalog entry as a catalog of ``kind`` registers an
    Iceberg table.

    ``metadata``: the replica's next (or current) metadata, at ``metadata_location``;
    ``parameters``: the source entry's parameters with Ferry's own; ``source_properties``:
    the source metadata's table properties (the source entry's copies of them stay behind:
    the replica's metadata has its own); ``previous_properties``: the replica's previous
    metadata's, whose removed keys leave the entry as they left the metadata.
    """
    carried = _carried(parameters, kind, source_kind, source_properties)
    if replica_before is not None:
        kept = {
            key: value
            for key, value in replica_before.parameters.items()
            if key not in _REGISTRATION and key not in (previous_properties or {})
        }
        carried = {**kept, **carried}
    # The metadata's properties, as both catalogs write them; never the registration's keys.
    properties = {k: str(v) for k, v in metadata.properties.items() if k not in _REGISTRATION}
    registered = {
        **carried,
        **properties,
        TABLE_TYPE: ICEBERG,
        METADATA_LOCATION: metadata_location,
    }
    if previous_metadata_location:
        registered[PREVIOUS_METADATA_LOCATION] = previous_metadata_location
    description = source_table.description or source_table.parameters.get(COMMENT)
    if description is None and replica_before is not None:
        description = replica_before.description or replica_before.parameters.get(COMMENT)
    owner = source_table.owner or (replica_before.owner if replica_before else None)
    owner = owner or metadata.properties.get("owner")
    if kind is CatalogKind.GLUE:
        storage = StorageDescriptor(location=metadata.location, columns=_glue_columns(metadata))
    else:
        storage = _hive_storage(metadata, registered, source_table, replica_before)
        if description is not None:  # a Hive metastore keeps it as a parameter
            registered[COMMENT], description = description, None
    return Table(
        database=database,
        name=name,
        table_type=TableType.EXTERNAL,
        storage=storage,
        parameters=registered,
        owner=owner,
        description=description,
    )


def _hive_storage(
    metadata: TableMetadata,
    registered: dict[str, str],
    source_table: Table,
    replica_before: Table | None,
) -> StorageDescriptor:
    """A Hive replica's storage, as Iceberg's catalogs write it; marks ``registered``
    external, with Iceberg's storage handler where Hive's Iceberg engine is on."""
    engine = _hive_engine_enabled(metadata, source_table, replica_before)
    registered[EXTERNAL] = "TRUE"
    if engine:
        registered[STORAGE_HANDLER] = HIVE_ICEBERG_STORAGE_HANDLER
    else:
        registered.pop(STORAGE_HANDLER, None)
    formats = (
        (HIVE_ICEBERG_INPUT_FORMAT, HIVE_ICEBERG_OUTPUT_FORMAT, HIVE_ICEBERG_SERDE)
        if engine
        else (FILE_INPUT_FORMAT, FILE_OUTPUT_FORMAT, LAZY_SIMPLE_SERDE)
    )
    return StorageDescriptor(
        location=metadata.location,
        columns=_hive_columns(metadata),
        input_format=formats[0],
        output_format=formats[1],
        serde_library=formats[2],
        number_of_buckets=0,  # unset: Iceberg's catalogs leave it to the metastore's default
    )


def _carried(
    parameters: Mapping[str, str],
    kind: CatalogKind,
    source_kind: CatalogKind,
    source_properties: Mapping[str, str],
) -> dict[str, str]:
    """The parameters without the registration's keys, the source's Iceberg table properties
    and, across kinds, what only the source's kind of catalog understands."""
    dropped = set(source_properties) | _REGISTRATION
    if kind is not source_kind:
        dropped |= _ONLY[source_kind]
    return {k: v for k, v in parameters.items() if k not in dropped}


def _hive_columns(metadata: TableMetadata) -> tuple[Column, ...]:
    """The current schema's fields in Hive's types, as pyiceberg's ``HiveCatalog`` writes
    them (its default: not Hive 2 compatible)."""
    # Here, not at import: pyiceberg's catalogs load Thrift's and boto3's clients (~0.15 s),
    # which every function's cold start would pay for.
    from pyiceberg.catalog.hive import SchemaToHiveConverter
    from pyiceberg.schema import visit

    converter = SchemaToHiveConverter(hive2_compatible=False)
    return tuple(
        Column(field.name, visit(field.field_type, converter), field.doc)
        for field in metadata.schema().fields
    )


def _glue_columns(metadata: TableMetadata) -> tuple[Column, ...]:
    """Every schema's fields, the current ones first, each with its Iceberg field id,
    optionality and whether it is current: pyiceberg's ``GlueCatalog``'s own columns."""
    from pyiceberg.catalog.glue import _to_columns as glue_columns  # as _hive_columns

    return tuple(
        Column(c["Name"], c["Type"], c.get("Comment"), dict(c.get("Parameters", {})))
        for c in glue_columns(metadata)
    )


def _hive_engine_enabled(
    metadata: TableMetadata, source_table: Table, replica_before: Table | None
) -> bool:
    """Whether Hive's Iceberg engine reads the table: the metadata's ``engine.hive.enabled``
    when it says, else whether the entry replicated (or the replica's) uses Iceberg's
    storage handler, as Iceberg's ``HiveTableOperations`` decides with its catalog's
    default."""
    setting = metadata.properties.get(ENGINE_HIVE_ENABLED)
    if setting is not None:
        return str(setting).strip().lower() == "true"
    return any(
        table.parameters.get(STORAGE_HANDLER) == HIVE_ICEBERG_STORAGE_HANDLER
        or table.storage.input_format == HIVE_ICEBERG_INPUT_FORMAT
        for table in (source_table, replica_before)
        if table is not None
    )
