"""Iceberg tables replicated across catalog kinds (Hive metastore → Glue, Glue → Hive), the
same scenario whichever driver runs it (``ferry replicate``'s, or the deployed state machine).

Sources are committed with pyiceberg through the source catalog itself (``HiveCatalog`` on
the source metastore, ``GlueCatalog`` on the emulated Glue), as an engine commits. The
replica is read with pyiceberg through the replica's own catalog, and its
entry is compared with the one pyiceberg's catalog of that kind registers for the same
metadata file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyiceberg.catalog import Catalog as PyIcebergCatalog
from pyiceberg.catalog.glue import GlueCatalog as PyIcebergGlueCatalog
from pyiceberg.catalog.hive import HiveCatalog

from ferry.catalog import Catalog
from ferry.catalog.glue import GlueCatalog
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.core.model import CatalogKind, Table
from ferry.iceberg.recognise import (
    METADATA_LOCATION,
    PREVIOUS_METADATA_LOCATION,
    SOURCE_METADATA_LOCATION,
)
from ferry.replicas.replica import SOURCE_LOCATION, SOURCE_TABLE
from ferry.storage import fs
from tests.iceberg_tables import create_history_table, read_rows, rows

#: What the source's entry carries that the replica keeps, whatever its kind.
DESCRIPTION = "Every change a history table can have"
USER_PARAMETER = ("team", "lake")
#: A parameter set on the replica itself, which a later run leaves in place.
REPLICA_PARAMETER = ("dr.contact", "oncall")
#: What only a Hive metastore maintains: never on a Glue replica.
HIVE_ONLY = {"EXTERNAL", "transient_lastDdlTime", "numFiles", "totalSize", "storage_handler"}


@dataclass
class CrossCatalog:
    """A source history table in one kind of catalog, and where its replica goes."""

    #: pyiceberg's catalog of the source's kind, on the source catalog: it commits there.
    writer: PyIcebergCatalog
    milestones: dict[str, int]
    source: Catalog
    source_database: str
    #: The source table's location (no replica file may name it).
    source_location: str
    replica: Catalog
    replica_kind: CatalogKind
    #: pyiceberg's catalog of the replica's kind, on the replica catalog.
    reader: PyIcebergCatalog
    replica_database: str
    target: str
    document: dict[str, Any]

    @property
    def source_identifier(self) -> str:
        return f"{self.source_database}.history"

    @property
    def replica_identifier(self) -> str:
        return f"{self.replica_database}.history"


def _describe(source: Catalog, database: str) -> None:
    """Give the source entry a description and a user parameter, as its owners would."""
    table = source.get_table(database, "history")
    key, value = USER_PARAMETER
    if source.kind is CatalogKind.GLUE:
        described = replace(table, description=DESCRIPTION)
    else:
        described = replace(table, parameters={**table.parameters, "comment": DESCRIPTION})
    source.alter_table(replace(described, parameters={**described.parameters, key: value}))


def glue(s3_properties: dict[str, str], **properties: str) -> PyIcebergGlueCatalog:
    return PyIcebergGlueCatalog(
        "glue",
        **{
            **s3_properties,
            "glue.endpoint": s3_properties["s3.endpoint"],
            "glue.region": "us-east-1",
            **properties,
        },
    )


def hive_to_glue(runtime, aws, s3_properties, tmp_path, unique) -> CrossCatalog:
    """A history table on local disk in the source metastore; its replica on S3 in Glue."""
    # Named as the local stack's grants expect (landing*: Glue databases, the replica's too).
    database = f"landing_iceberg_{unique}"
    writer = HiveCatalog("source", uri=runtime.source_uri, warehouse=tmp_path.as_uri())
    writer.create_namespace(database)
    milestones = create_history_table(writer, f"{database}.history")
    source = HiveMetastoreCatalog("onprem", [runtime.source_uri])
    _describe(source, database)
    # Named as the local stack's grants expect (dr-*: replica buckets).
    bucket = f"dr-{unique}"
    aws["s3"].create_bucket(Bucket=bucket)
    target = f"s3://{bucket}/history"
    return CrossCatalog(
        writer=writer,
        milestones=milestones,
        source=source,
        source_database=database,
        source_location=writer.load_table(f"{database}.history").location(),
        replica=GlueCatalog("aws", aws["glue"]),
        replica_kind=CatalogKind.GLUE,
        reader=glue(s3_properties),
        replica_database=f"{database}_dr",
        target=target,
        document={
            "source-catalog": {"name": "onprem", "hive-metastore-uris": runtime.source_uri},
            "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
            "table-replications": [_replication(database, target)],
        },
    )


def glue_to_hive(runtime, aws, s3_properties, tmp_path, unique) -> CrossCatalog:
    """A history table on S3 in Glue; its replica on local disk in the replica metastore."""
    # Named as the local stack's grants expect (landing*: databases and buckets).
    bucket = f"landing-{unique}"
    aws["s3"].create_bucket(Bucket=bucket)
    database = f"landing_iceberg_{unique}"
    writer = glue(s3_properties, warehouse=f"s3://{bucket}/warehouse")
    writer.create_namespace(database)
    milestones = create_history_table(writer, f"{database}.history")
    source = GlueCatalog("lake", aws["glue"])
    _describe(source, database)
    target = (tmp_path / "replica" / "history").as_uri()
    return CrossCatalog(
        writer=writer,
        milestones=milestones,
        source=source,
        source_database=database,
        source_location=writer.load_table(f"{database}.history").location(),
        replica=HiveMetastoreCatalog("dr", [runtime.replica_uri]),
        replica_kind=CatalogKind.HIVE_METASTORE,
        reader=HiveCatalog("replica", uri=runtime.replica_uri),
        replica_database=f"{database}_dr",
        target=target,
        document={
            "source-catalog": {"name": "lake", "glue": {"region": "us-east-1"}},
            "replica-catalog": {"name": "dr", "hive-metastore-uris": runtime.replica_uri},
            "table-replications": [_replication(database, target)],
        },
    )


def _replication(database: str, target: str) -> dict[str, Any]:
    return {
        "source-table": {"database-name": database, "table-name": "history"},
        "replica-table": {"database-name": f"{database}_dr", "table-location": target},
    }


#: Runs one replication of the case's config; its status and how many files it copied.
Replicate = Callable[[], tuple[str, int]]


def replicate_across(case: CrossCatalog, replicate: Replicate) -> None:
    """The scenario: a first replication, a re-run, an append at the source, a re-run."""
    source_table = case.writer.load_table(case.source_identifier)
    earlier = case.milestones["overwrite"]

    status, _ = replicate()

    assert status == "SUCCEEDED"
    registered = case.replica.get_table(case.replica_database, "history")
    first = registered.parameters[METADATA_LOCATION]
    assert first.startswith(case.target + "/metadata/00000-")
    assert PREVIOUS_METADATA_LOCATION not in registered.parameters
    check_registration(case, registered)
    replica = case.reader.load_table(case.replica_identifier)
    assert read_rows(replica) == read_rows(source_table)
    assert read_rows(replica, earlier) == read_rows(source_table, earlier)
    assert files_naming(case.target, case.source_location) == []
    # Its statistics file too: the same bytes, below the replica's location.
    (theirs,), (ours,) = source_table.metadata.statistics, replica.metadata.statistics
    assert fs.normalise(ours.statistics_path).startswith(fs.normalise(case.target) + "/")
    assert fs.read_bytes(ours.statistics_path) == fs.read_bytes(theirs.statistics_path)

    # Nothing changed at the source: nothing copied, the entry as it was.
    status, copied = replicate()

    assert (status, copied) == ("UNCHANGED", 0)
    assert (
        case.replica.get_table(case.replica_database, "history").parameters[METADATA_LOCATION]
        == first
    )

    # Someone sets a parameter on the replica; an append arrives at the source.
    key, value = REPLICA_PARAMETER
    current = case.replica.get_table(case.replica_database, "history")
    case.replica.alter_table(replace(current, parameters={**current.parameters, key: value}))
    source_table.append(rows([10, 11], ["eu", "us"]).append_column("amount", _amounts(2)))

    status, copied = replicate()

    assert (status, copied) == ("SUCCEEDED", 2)  # the append's two data files (eu, us)
    moved = case.replica.get_table(case.replica_database, "history")
    assert moved.parameters[PREVIOUS_METADATA_LOCATION] == first
    assert moved.parameters[METADATA_LOCATION].startswith(case.target + "/metadata/00001-")
    assert moved.parameters[key] == value
    check_registration(case, moved)
    replica = case.reader.load_table(case.replica_identifier)
    assert read_rows(replica) == read_rows(source_table)
    assert {10, 11} <= {r["id"] for r in read_rows(replica)}
    assert read_rows(replica, earlier) == read_rows(source_table, earlier)
    assert files_naming(case.target, case.source_location) == []

    status, copied = replicate()

    assert (status, copied) == ("UNCHANGED", 0)


def _amounts(count: int) -> pa.Array:
    return pa.array([1.0] * count, pa.float64())


def check_registration(case: CrossCatalog, registered: Table) -> None:
    """The replica's entry is the one pyiceberg's catalog of its kind registers for the same
    metadata file, with what the source's entry carries for users, and Ferry's own."""
    metadata_location = registered.parameters[METADATA_LOCATION]
    reference_name = f"{case.replica_database}.reference"
    case.reader.register_table(reference_name, metadata_location)
    try:
        reference = case.replica.get_table(case.replica_database, "reference")
    finally:  # the entry only: the files are the replica's
        case.replica.drop_table(case.replica_database, "reference")
    assert registered.table_type == reference.table_type
    assert registered.table_type.value == "EXTERNAL_TABLE"
    assert registered.storage == reference.storage, (registered.storage, reference.storage)
    assert fs.normalise(registered.location) == fs.normalise(case.target)
    assert registered.partition_keys == reference.partition_keys == ()
    # pyiceberg's keys: table_type, metadata_location, the metadata's properties (and on a
    # Hive metastore EXTERNAL); the metastore's own bookkeeping aside.
    server_managed = {"transient_lastDdlTime", "numFiles", "totalSize"}
    expected = {k: v for k, v in reference.parameters.items() if k not in server_managed}
    assert {k: registered.parameters.get(k) for k in expected} == expected
    key, value = USER_PARAMETER
    assert registered.parameters[key] == value
    assert registered.parameters[SOURCE_TABLE] == f"{case.source_database}.history"
    # Only Ferry's records of where the replica came from name the source: its location, and
    # the metadata.json the replica's metadata replicates (``ferry.planning.iceberg_noop``).
    naming = {k for k, v in registered.parameters.items() if _path(case.source_location) in v}
    assert naming <= {SOURCE_LOCATION, SOURCE_METADATA_LOCATION}, naming
    if case.replica_kind is CatalogKind.GLUE:
        assert registered.description == DESCRIPTION
        assert not HIVE_ONLY & set(registered.parameters)
        assert registered.storage.input_format is None and registered.storage.serde_library is None
        assert all("iceberg.field.id" in c.parameters for c in registered.storage.columns)
    else:
        assert registered.parameters["comment"] == DESCRIPTION
        assert registered.parameters["EXTERNAL"] == "TRUE"
        assert registered.storage.input_format == "org.apache.hadoop.mapred.FileInputFormat"
    assert [c.name for c in registered.storage.columns] == ["id", "region", "amount"]


def files_naming(replica_location: str, source_location: str) -> list[str]:
    """The replica's metadata files (metadata.json, manifest lists, manifests) that name the
    source's location, on any file system Ferry reads."""
    needle = _path(source_location).encode()
    found = []
    for entry in fs.iter_files(replica_location):
        if entry.uri.endswith((".json", ".avro")) and needle in fs.read_bytes(entry.uri):
            found.append(entry.uri)
    return found


def _path(location: str) -> str:
    """A location without its scheme: ``file:/x`` and ``file:///x`` both name ``/x``."""
    return "/" + location.split(":", 1)[-1].lstrip("/")
