"""Reading an Iceberg table's metadata chain with pyiceberg.

Manifests are read *raw*: entries exactly as written (deleted entries kept, no sequence
number or snapshot id inherited from the manifest list), with the file's Avro header, so
that a rewrite changes paths and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pyiceberg.avro.file import AvroFile
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    MANIFEST_ENTRY_SCHEMAS,
    MANIFEST_LIST_FILE_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
)
from pyiceberg.serializers import FromInputFile
from pyiceberg.table.metadata import TableMetadata

from ferry.core.errors import FerryError, IcebergMetadataError
from ferry.storage import fs
from ferry.storage.s3 import error_code

# The format versions whose manifests pyiceberg 0.12 writes (``write_manifest``: 1 and 2).
SUPPORTED_FORMAT_VERSIONS = (1, 2)


METADATA_FILE = "metadata file"
MANIFEST_LIST = "manifest list"
MANIFEST = "manifest"


@contextmanager
def reading(kind: str, location: str) -> Iterator[None]:
    """Turn whatever reading ``location`` raises into one ``IcebergMetadataError`` line naming
    the file (its ``location``, so a caller can say whose table it is): pyiceberg's and
    pyarrow's errors for a broken file are tracebacks of many lines."""
    try:
        yield
    except FerryError:
        raise
    except Exception as error:  # noqa: BLE001 - every reader error becomes one line
        raise IcebergMetadataError(
            f"its {kind} {location} cannot be read: {_why(kind, location, error)}",
            location=location,
        ) from error


def _why(kind: str, location: str, error: Exception) -> str:
    """What is wrong with the file, in a few words."""
    text = str(error)
    if isinstance(error, FileNotFoundError):
        return _missing(location)
    if isinstance(error, IsADirectoryError) or "is a directory" in text:
        return "it is a folder, not a file"
    if isinstance(error, OSError):
        return " ".join(text.split())[:300]
    if kind != METADATA_FILE:
        return f"not an Avro {kind} (truncated, or another kind of file)"
    if isinstance(error, UnicodeDecodeError) or "Invalid JSON" in text or "json_invalid" in text:
        return "not JSON (truncated, or another kind of file)"
    return "JSON, but not Iceberg table metadata"


def _missing(location: str) -> str:
    """A missing S3 object's reason: its bucket, when that is what is missing."""
    if fs.scheme_of(location) not in fs.S3_SCHEMES:
        return "no such file"
    bucket = fs.object_location(location)[0]
    try:
        fs.default().s3_client(bucket).head_bucket(Bucket=bucket)
    except Exception as error:  # noqa: BLE001 - only the answer "no such bucket" matters
        if error_code(error) in ("404", "NoSuchBucket", "NotFound"):
            return f"no such bucket {bucket}"
    return "no such file"


def read_table_metadata(io: FileIO, location: str) -> TableMetadata:
    """The table metadata of one ``*.metadata.json`` (gzip-compressed ones too);
    ``IcebergMetadataError`` when it cannot be read as one."""
    with reading(METADATA_FILE, location):
        return FromInputFile.table_metadata(io.new_input(location))


def check_supported(metadata: TableMetadata) -> None:
    """Refuse what the rewrite cannot carry yet, before anything is written."""
    if metadata.format_version not in SUPPORTED_FORMAT_VERSIONS:
        raise IcebergMetadataError(
            f"Iceberg format version {metadata.format_version} is not replicated yet "
            f"(only {', '.join(map(str, SUPPORTED_FORMAT_VERSIONS))}): table {metadata.location}"
        )
    for snapshot in metadata.snapshots:
        if not snapshot.manifest_list:
            raise IcebergMetadataError(
                f"Snapshot {snapshot.snapshot_id} of {metadata.location} lists its manifests "
                "inline (an early format-version 1 table): not replicated"
            )


@dataclass(frozen=True)
class AvroContents[T]:
    """One manifest or manifest list: its Avro header's metadata and its records."""

    header: dict[str, str]
    records: tuple[T, ...]


def read_manifest_list(io: FileIO, path: str) -> AvroContents[ManifestFile]:
    """A snapshot's manifest list, in order (pyiceberg's reader, without its cache)."""
    with (
        reading(MANIFEST_LIST, path),
        AvroFile[ManifestFile](
            io.new_input(path),
            MANIFEST_LIST_FILE_SCHEMAS[DEFAULT_READ_VERSION],
            read_types={-1: ManifestFile, 508: PartitionFieldSummary},
            read_enums={517: ManifestContent},
        ) as reader,
    ):
        return AvroContents(dict(reader.header.meta), tuple(reader))


def read_manifest(io: FileIO, path: str) -> AvroContents[ManifestEntry]:
    """A manifest's entries as written: deleted ones kept, nothing inherited."""
    with (
        reading(MANIFEST, path),
        AvroFile[ManifestEntry](
            io.new_input(path),
            MANIFEST_ENTRY_SCHEMAS[DEFAULT_READ_VERSION],
            read_types={-1: ManifestEntry, 2: DataFile},
            read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent},
        ) as reader,
    ):
        return AvroContents(dict(reader.header.meta), tuple(reader))


def is_live(entry: ManifestEntry) -> bool:
    """Whether the entry's file belongs to the manifest's snapshot (added or existing)."""
    return entry.status != ManifestEntryStatus.DELETED


def metadata_side_files(metadata: TableMetadata) -> set[str]:
    """The files a metadata.json names besides manifests: manifest lists, statistics."""
    return (
        {s.manifest_list for s in metadata.snapshots}
        | {f.statistics_path for f in metadata.statistics}
        | {f.statistics_path for f in metadata.partition_statistics}
    )


def referenced_files(io: FileIO, metadata: TableMetadata) -> set[str]:
    """Every file some snapshot of the table needs: manifest lists, manifests, live data
    and delete files, statistics files. Reads every manifest once."""
    files = metadata_side_files(metadata)
    manifests: set[str] = set()
    for snapshot in metadata.snapshots:
        manifests.update(
            m.manifest_path for m in read_manifest_list(io, snapshot.manifest_list).records
        )
    files |= manifests
    files.update(_live_paths(io, manifests))
    return files


def _live_paths(io: FileIO, manifests: Iterable[str]) -> set[str]:
    return {
        entry.data_file.file_path
        for path in manifests
        for entry in read_manifest(io, path).records
        if is_live(entry)
    }
