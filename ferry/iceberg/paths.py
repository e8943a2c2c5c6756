"""The one path mover of an Iceberg replica: the source table's prefix → the replica's.

Every absolute path an Iceberg table's metadata names (data and delete files, manifests,
manifest lists, statistics files, the table location, path properties) is moved by the
same rule, so a replica file never names the source. A path outside the source prefix
cannot be moved and is an error: its file would be read from the source forever.
"""

from __future__ import annotations

from dataclasses import dataclass

from ferry.errors import IcebergMetadataError

# Spellings of one location that must match each other: Hadoop's s3a:// and s3n:// name
# the same objects as s3://, and the metastore answers ``file:/x`` for ``file:///x``.
_SCHEME_ALIASES = {"s3a://": "s3://", "s3n://": "s3://"}

# Table properties whose value is a location (Iceberg's ``TableProperties``).
PATH_PROPERTIES = (
    "write.data.path",
    "write.metadata.path",
    "write.object-storage.path",
    "write.folder-storage.path",
)


def canonical(path: str) -> str:
    """The spelling of ``path`` used to compare prefixes (never written anywhere)."""
    for alias, scheme in _SCHEME_ALIASES.items():
        if path.startswith(alias):
            return scheme + path[len(alias) :]
    if path.startswith("file:/") and not path.startswith("file://"):
        return "file:///" + path[len("file:/") :].lstrip("/")
    if path.startswith("/"):
        return "file://" + path
    return path


@dataclass(frozen=True)
class PathMover:
    """Moves paths from under ``source`` (the source table's location) to under ``replica``."""

    source: str
    replica: str

    def __post_init__(self) -> None:
        if not self.source.strip("/") or not self.replica.strip("/"):
            raise IcebergMetadataError("An Iceberg path mover needs two non-empty prefixes")

    @property
    def _source_prefix(self) -> str:
        return canonical(self.source).rstrip("/")

    @property
    def _replica_prefix(self) -> str:
        return self.replica.rstrip("/")

    def is_under_source(self, path: str) -> bool:
        """Whether ``path`` is the source prefix or below it."""
        path, prefix = canonical(path), self._source_prefix
        return path == prefix or path.startswith(prefix + "/")

    def move(self, path: str) -> str:
        """``path`` under the replica prefix; an error for a path outside the source prefix."""
        if not self.is_under_source(path):
            raise IcebergMetadataError(
                f"{path} is outside the Iceberg table's location {self.source}: "
                "Ferry cannot give the replica its own copy of it"
            )
        return self._replica_prefix + canonical(path)[len(self._source_prefix) :]

    def move_if_under(self, value: str) -> str:
        """``value`` moved when it is a path under the source prefix, else unchanged."""
        return self.move(value) if self.is_under_source(value) else value

    def move_bound(self, bound: bytes) -> bytes:
        """A ``file_path`` column's lower or upper bound (UTF-8), moved when it names a path
        under the source; a truncated bound that does not is kept as it is."""
        try:
            text = bound.decode("utf-8")
        except UnicodeDecodeError:
            return bound
        return self.move_if_under(text).encode("utf-8")

    def replica_metadata_path(self, name: str) -> str:
        """A file of the replica's own ``metadata/`` folder."""
        return f"{self._replica_prefix}/metadata/{name}"
