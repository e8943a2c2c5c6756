"""Writing the replica's own Iceberg files: position delete files, manifests, manifest
lists and metadata.json, each with every path moved, through pyiceberg's writers.

A manifest is rewritten by whichever copier runs the run's manifest (``ManifestWork``, one
work item each: ``rewrite_manifest``), with the position delete files it names; the manifest
lists and the metadata.json are written by Commit (``write_manifest_list``,
``write_table_metadata``), once the manifests' lengths are known.

Every output is a function of its inputs: a rewritten position delete file is the same
bytes whoever writes it (built in memory; a complete copy already at the target is kept), and
a manifest's Avro sync marker is derived from its path instead of drawn at random. So a
delete file that two manifests of a run name comes out the same from both, with the same
size in both, and a retried work item writes what the first attempt wrote.

pyiceberg 0.12 specifics: ``write_manifest`` writes format versions 1 and 2, and its
writers always declare ``content: data``; a delete manifest is written by the same writer
told its content (``_HeaderWriter`` below), with the source manifest's own Avro header
(schema, partition spec, content) so a reader sees what the source's readers see. Entries
are written as read, sequence numbers and snapshot ids left to inheritance where the
source left them. A manifest list is written with ``write_manifest_list`` from the
source list's records, only the manifests' paths and lengths changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.avro.codecs import AVRO_CODEC_KEY, AvroCompressionCodec
from pyiceberg.avro.file import AvroOutputFile
from pyiceberg.io import FileIO, InputFile, OutputFile
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
)
from pyiceberg.manifest import write_manifest_list as _write_manifest_list
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.serializers import ToOutputFile
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.typedef import Record

from ferry.core.errors import IcebergMetadataError
from ferry.iceberg.paths import PathMover
from ferry.iceberg.reading import is_live, read_manifest, read_table_metadata
from ferry.iceberg.snapshot_plan import DeleteRewrite

# The reserved field ids of a position delete file's columns (Iceberg spec).
DELETE_FILE_PATH_ID = 2147483546
DELETE_FILE_PATH = "file_path"

_DATA_FILE_FIELDS = [f.name for f in DATA_FILE_TYPE[DEFAULT_READ_VERSION].fields]
_MANIFEST_FILE_FIELDS = [f.name for f in MANIFEST_LIST_FILE_SCHEMAS[DEFAULT_READ_VERSION].fields]


def with_fields[R: Record](record: R, names: list[str], **changes: object) -> R:
    """A copy of a positional pyiceberg ``Record`` with some fields, by name, changed."""
    data = list(record._data)
    for name, value in changes.items():
        data[names.index(name)] = value
    return type(record)(*data)


def moved_manifest(record: ManifestFile, path: str, length: int) -> ManifestFile:
    """A manifest list's record of a source manifest, naming the replica's copy of it."""
    return with_fields(record, _MANIFEST_FILE_FIELDS, manifest_path=path, manifest_length=length)


@dataclass(frozen=True)
class RewriteContext:
    """What every manifest rewrite of one run shares: the path mover, the table's format
    version and its source metadata.json (read only for a manifest whose Avro header lacks
    its schema or partition spec)."""

    mover: PathMover
    format_version: int
    metadata: str

    def to_json(self) -> dict[str, Any]:
        return {
            # Every field of the mover, whatever prefixes it carries.
            "mover": dataclasses.asdict(self.mover),
            "formatVersion": self.format_version,
            "metadata": self.metadata,
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> RewriteContext:
        mover = PathMover(**{key: _tuples(field) for key, field in value["mover"].items()})
        return cls(mover, int(value["formatVersion"]), value["metadata"])


def _tuples(value: Any) -> Any:
    """JSON's lists as the tuples a frozen dataclass holds."""
    return tuple(_tuples(item) for item in value) if isinstance(value, list) else value


@dataclass(frozen=True)
class ManifestWork:
    """One source manifest the replica gets its own copy of: a work item of the run's
    manifest (``ferry.copying.manifest``), executed by the copier with ``rewrite_manifest``."""

    source: str
    target: str
    spec_id: int
    #: The snapshot that added the manifest (its list record's ``added_snapshot_id``).
    snapshot_id: int
    content: ManifestContent
    #: The source manifest's bytes (what batching weighs it by).
    length: int

    def to_item(self) -> list[Any]:
        return [
            self.source,
            self.target,
            self.spec_id,
            self.snapshot_id,
            int(self.content),
            self.length,
        ]

    @classmethod
    def from_item(cls, item: list[Any]) -> ManifestWork:
        source, target, spec_id, snapshot_id, content, length = item
        return cls(source, target, spec_id, snapshot_id, ManifestContent(content), length)

    @classmethod
    def of(cls, source: ManifestFile, target: str) -> ManifestWork:
        return cls(
            source.manifest_path,
            target,
            source.partition_spec_id,
            source.added_snapshot_id or 0,
            source.content,
            source.manifest_length,
        )


class DeleteFiles:
    """The position delete files one copier rewrites, each once in this process (the
    manifests of a run that name the same one share its rewrite and its size)."""

    def __init__(self, source_io: FileIO, replica_io: FileIO, mover: PathMover):
        self._source_io, self._replica_io, self._mover = source_io, replica_io, mover
        self._sizes: dict[str, int] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def size(self, rewrite: DeleteRewrite) -> int:
        """The replica copy's size, rewriting it first unless done here already."""
        with self._lock:
            lock = self._locks.setdefault(rewrite.source, threading.Lock())
        with lock:
            if rewrite.source not in self._sizes:
                self._sizes[rewrite.source] = rewrite_position_deletes(
                    self._source_io, self._replica_io, rewrite, self._mover
                )
            return self._sizes[rewrite.source]


def rewrite_position_deletes(
    source_io: FileIO, replica_io: FileIO, rewrite: DeleteRewrite, mover: PathMover
) -> int:
    """Write the replica's copy of a position delete file, its ``file_path`` column naming
    the replica's data files; returns its size.

    A complete copy (readable, the same number of rows) already at the target is kept: it
    was written from the same immutable file, and a replica version may reference it with
    its size. Otherwise the file is built in memory and written whole: the same bytes
    whichever copier, batch or attempt writes it, so writers racing on one file agree on it
    and on its size.
    """
    kept = _complete_copy_size(replica_io.new_input(rewrite.target), rewrite.record_count)
    if kept is not None:
        return kept
    with source_io.new_input(rewrite.source).open() as stream:
        table = pq.read_table(stream)
    index = table.schema.get_field_index(DELETE_FILE_PATH)
    if index < 0:
        raise IcebergMetadataError(f"{rewrite.source} is not a position delete file (no file_path)")
    moved = pa.array([mover.move(p) for p in table.column(index).to_pylist()], pa.string())
    table = table.set_column(index, table.schema.field(index), moved)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    data = sink.getvalue().to_pybytes()
    with replica_io.new_output(rewrite.target).create(overwrite=True) as stream:
        stream.write(data)
    return len(data)


def _complete_copy_size(existing: InputFile, record_count: int) -> int | None:
    """The size of a complete position delete file at ``existing`` (None: none there, or a
    partial one). The size is the one the footer was read with, so a file being rewritten
    meanwhile is never measured half-way."""
    try:
        with existing.open() as stream:
            size = stream.size()
            if pq.ParquetFile(stream).metadata.num_rows == record_count:
                return size
    except (OSError, pa.ArrowException):
        return None
    return None


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
    data_file = with_fields(f, _DATA_FILE_FIELDS, **changes)
    moved = ManifestEntry(*entry._data)
    moved.data_file = data_file
    return moved


class _HeaderWriter(ManifestWriter):
    """A pyiceberg manifest writer that writes the source manifest's header and content,
    with a sync marker derived from the file's path (the same bytes on every attempt)."""

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

    def new_writer(self) -> AvroOutputFile[ManifestEntry]:
        writer = super().new_writer()
        location = self._output_file.location.encode("utf-8")
        writer.sync_bytes = hashlib.md5(location, usedforsecurity=False).digest()
        return writer


class _HeaderWriterV1(_HeaderWriter, ManifestWriterV1):
    pass


class _HeaderWriterV2(_HeaderWriter, ManifestWriterV2):
    pass


def rewrite_manifest(
    source_io: FileIO,
    replica_io: FileIO,
    work: ManifestWork,
    context: RewriteContext,
    deletes: DeleteFiles,
) -> int:
    """Write the replica's manifest for ``work.source``, and first the replica's copy of
    every live position delete file it names; returns the manifest's length."""
    contents = read_manifest(source_io, work.source)
    mover = context.mover
    sizes: dict[str, int] = {}
    for entry in contents.records:
        f = entry.data_file
        if is_live(entry) and f.content == DataFileContent.POSITION_DELETES:
            if f.file_path not in sizes:
                rewrite = DeleteRewrite(f.file_path, mover.move(f.file_path), f.record_count)
                sizes[f.file_path] = deletes.size(rewrite)
    header = contents.header
    schema, spec = _schema_and_spec(source_io, header, work, context)
    writer_class = _HeaderWriterV1 if context.format_version == 1 else _HeaderWriterV2
    writer = writer_class(
        spec,
        schema,
        replica_io.new_output(work.target),
        work.snapshot_id,
        header.get(AVRO_CODEC_KEY, "deflate"),  # type: ignore[arg-type]
        header,
        work.content,
    )
    with writer:
        for entry in contents.records:
            writer.add_entry(moved_entry(entry, mover, sizes))
    return writer.to_manifest_file().manifest_length


def _schema_and_spec(
    io: FileIO, header: dict[str, str], work: ManifestWork, context: RewriteContext
) -> tuple[Schema, PartitionSpec]:
    """The schema and partition spec a manifest was written with: its Avro header's (every
    Iceberg writer records both), else the source table's metadata."""
    if "schema" in header and "partition-spec" in header:
        fields = [PartitionField.model_validate(f) for f in json.loads(header["partition-spec"])]
        schema = Schema.model_validate_json(header["schema"])
        return schema, PartitionSpec(*fields, spec_id=work.spec_id)
    metadata = _table_metadata(io, context.metadata)
    schema = Schema.model_validate_json(header["schema"]) if "schema" in header else None
    return schema or metadata.schema(), metadata.specs()[work.spec_id]


@lru_cache(maxsize=4)
def _table_metadata(io: FileIO, location: str) -> TableMetadata:
    # A metadata.json never changes: read once per process, however many manifests need it.
    return read_table_metadata(io, location)


def write_manifest_list(
    replica_io: FileIO,
    format_version: int,
    snapshot: Snapshot,
    target: str,
    codec: str,
    manifests: list[ManifestFile],
) -> None:
    """Write the replica's manifest list of one snapshot: ``manifests`` (the source's list
    records, each naming the replica's manifest), in the source's order."""
    with _write_manifest_list(
        format_version=format_version,  # type: ignore[arg-type]
        output_file=replica_io.new_output(target),
        snapshot_id=snapshot.snapshot_id,
        parent_snapshot_id=snapshot.parent_snapshot_id,
        sequence_number=snapshot.sequence_number,
        avro_compression=codec,  # type: ignore[arg-type]
    ) as writer:
        writer.add_manifests(manifests)


def write_table_metadata(replica_io: FileIO, metadata: TableMetadata, location: str) -> None:
    """Write the replica's metadata.json, never over an existing file."""
    ToOutputFile.table_metadata(metadata, replica_io.new_output(location), overwrite=False)
