"""Writing the replica's own Iceberg files: position delete files, manifests, manifest
lists and metadata.json, each with every path moved, through pyiceberg's writers.

pyiceberg 0.12 specifics: ``write_manifest`` writes format versions 1 and 2, and its
writers always declare ``content: data``; a delete manifest is written by the same writer
told its content (``_HeaderWriter`` below), with the source manifest's own Avro header
(schema, partition spec, content) so a reader sees what the source's readers see. Entries
are written as read, sequence numbers and snapshot ids left to inheritance where the
source left them. A manifest list is written with ``write_manifest_list`` from the
source list's records, only the manifests' paths and lengths changed.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.avro.codecs import AVRO_CODEC_KEY, AvroCompressionCodec
from pyiceberg.io import FileIO, OutputFile
from pyiceberg.manifest import (
    DATA_FILE_TYPE,
    DEFAULT_READ_VERSION,
    MANIFEST_LIST_FILE_SCHEMAS,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    ManifestWriter,
    ManifestWriterV1,
    ManifestWriterV2,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.serializers import ToOutputFile
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.typedef import Record

from ferry.errors import IcebergMetadataError
from ferry.iceberg.paths import PathMover
from ferry.iceberg.plan import DeleteRewrite, ManifestRewrite, SnapshotRewrite

# The reserved field ids of a position delete file's columns (Iceberg spec).
DELETE_FILE_PATH_ID = 2147483546
DELETE_FILE_PATH = "file_path"

_DATA_FILE_FIELDS = [f.name for f in DATA_FILE_TYPE[DEFAULT_READ_VERSION].fields]
_MANIFEST_FILE_FIELDS = [f.name for f in MANIFEST_LIST_FILE_SCHEMAS[DEFAULT_READ_VERSION].fields]


def _with[R: Record](record: R, names: list[str], **changes: object) -> R:
    """A copy of a positional pyiceberg ``Record`` with some fields, by name, changed."""
    data = list(record._data)
    for name, value in changes.items():
        data[names.index(name)] = value
    return type(record)(*data)


def rewrite_position_deletes(
    source_io: FileIO, replica_io: FileIO, rewrite: DeleteRewrite, mover: PathMover
) -> int:
    """Write the replica's copy of a position delete file, its ``file_path`` column naming
    the replica's data files; returns its size. A complete copy (readable, the same number
    of rows) already at the target is kept: it was written from the same immutable file."""
    existing = replica_io.new_input(rewrite.target)
    if existing.exists():
        with existing.open() as stream:
            if pq.ParquetFile(stream).metadata.num_rows == rewrite.record_count:
                return len(existing)
    with source_io.new_input(rewrite.source).open() as stream:
        table = pq.read_table(stream)
    index = table.schema.get_field_index(DELETE_FILE_PATH)
    if index < 0:
        raise IcebergMetadataError(f"{rewrite.source} is not a position delete file (no file_path)")
    moved = pa.array([mover.move(p) for p in table.column(index).to_pylist()], pa.string())
    table = table.set_column(index, table.schema.field(index), moved)
    output = replica_io.new_output(rewrite.target)
    with output.create(overwrite=True) as stream:
        pq.write_table(table, stream)
    return len(replica_io.new_input(rewrite.target))


def moved_entry(entry: ManifestEntry, mover: PathMover, sizes: dict[str, int]) -> ManifestEntry:
    """The entry with its file's path moved; a rewritten position delete file gets its new
    size, its ``file_path`` bounds moved and no split offsets (its row groups changed). A
    deleted entry's file is not rewritten in this run: it keeps its recorded size, which no
    reader uses."""
    f = entry.data_file
    changes: dict[str, object] = {"file_path": mover.move(f.file_path)}
    if f.content == DataFileContent.POSITION_DELETES:
        changes["split_offsets"] = None
        if f.file_path in sizes:
            changes["file_size_in_bytes"] = sizes[f.file_path]
        for bounds in ("lower_bounds", "upper_bounds"):
            values = getattr(f, bounds)
            if values and DELETE_FILE_PATH_ID in values:
                values = dict(values)
                values[DELETE_FILE_PATH_ID] = mover.move_bound(values[DELETE_FILE_PATH_ID])
                changes[bounds] = values
    data_file = _with(f, _DATA_FILE_FIELDS, **changes)
    moved = ManifestEntry(*entry._data)
    moved.data_file = data_file
    return moved


class _HeaderWriter(ManifestWriter):
    """A pyiceberg manifest writer that writes the source manifest's header and content."""

    def __init__(
        self,
        spec: PartitionSpec,
        schema: Schema,
        output_file: OutputFile,
        snapshot_id: int,
        avro_compression: AvroCompressionCodec,
        header: dict[str, str],
        content: ManifestContent,
    ) -> None:
        super().__init__(spec, schema, output_file, snapshot_id, avro_compression)
        self._source_header = {k: v for k, v in header.items() if not k.startswith("avro.")}
        self._source_content = content

    def content(self) -> ManifestContent:
        return self._source_content

    @property
    def _meta(self) -> dict[str, str]:
        return {**self._source_header, AVRO_CODEC_KEY: self._compression}


class _HeaderWriterV1(_HeaderWriter, ManifestWriterV1):
    pass


class _HeaderWriterV2(_HeaderWriter, ManifestWriterV2):
    pass


def write_manifest_copy(
    replica_io: FileIO,
    metadata: TableMetadata,
    rewrite: ManifestRewrite,
    mover: PathMover,
    sizes: dict[str, int],
) -> ManifestFile:
    """Write the replica's manifest for ``rewrite.source``; returns its manifest-list record
    (the source's, with the new path and length)."""
    header = rewrite.contents.header
    source = rewrite.source
    schema = (
        Schema.model_validate_json(header["schema"]) if "schema" in header else metadata.schema()
    )
    spec: PartitionSpec = metadata.specs()[source.partition_spec_id]
    writer_class = _HeaderWriterV1 if metadata.format_version == 1 else _HeaderWriterV2
    writer = writer_class(
        spec,
        schema,
        replica_io.new_output(rewrite.target),
        source.added_snapshot_id or 0,
        header.get(AVRO_CODEC_KEY, "deflate"),  # type: ignore[arg-type]
        header,
        source.content,
    )
    with writer:
        for entry in rewrite.contents.records:
            writer.add_entry(moved_entry(entry, mover, sizes))
    length = writer.to_manifest_file().manifest_length
    return _with(
        source, _MANIFEST_FILE_FIELDS, manifest_path=rewrite.target, manifest_length=length
    )


def write_manifest_list_copy(
    replica_io: FileIO,
    metadata: TableMetadata,
    snapshot: SnapshotRewrite,
    manifests: dict[str, ManifestFile],
) -> None:
    """Write the replica's manifest list of one snapshot: the source's manifests, in the
    source's order, each replaced by the replica's."""
    s = snapshot.snapshot
    with write_manifest_list(
        format_version=metadata.format_version,  # type: ignore[arg-type]
        output_file=replica_io.new_output(snapshot.target_list),
        snapshot_id=s.snapshot_id,
        parent_snapshot_id=s.parent_snapshot_id,
        sequence_number=s.sequence_number,
        avro_compression=snapshot.header.get(AVRO_CODEC_KEY, "deflate"),  # type: ignore[arg-type]
    ) as writer:
        writer.add_manifests([manifests[path] for path in snapshot.manifests])


def write_table_metadata(replica_io: FileIO, metadata: TableMetadata, location: str) -> None:
    """Write the replica's metadata.json, never over an existing file."""
    ToOutputFile.table_metadata(metadata, replica_io.new_output(location), overwrite=False)
