"""The one path mover of an Iceberg replica: the source table's prefixes → the replica's.

Every absolute path an Iceberg table's metadata names (data and delete files, manifests,
manifest lists, statistics files, the table location, path properties) is moved by the
same rule, so a replica file never names the source. The source's prefixes are its location
and, where its properties put new files elsewhere (``write.data.path``, the object-storage
and folder-storage paths, ``write.metadata.path``), those folders too: the replica keeps
everything below its own location, those folders becoming its ``data/`` and ``metadata/``.
A path outside every source prefix cannot be moved and is an error: its file would be read
from the source forever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ferry.core.errors import IcebergMetadataError

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


# The replica folder (below its location) of each property's files when the source's
# property names a folder outside the source's location.
_FOLDER_OF_PROPERTY = {
    "write.data.path": "data",
    "write.object-storage.path": "data",
    "write.folder-storage.path": "data",
    "write.metadata.path": "metadata",
}


@dataclass(frozen=True)
class PathMover:
    """Moves paths from under ``source`` (the source table's location) to under ``replica``,
    and from under each of ``folders``' sources (outside the location) to its replica
    folder."""

    source: str
    replica: str
    folders: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.source.strip("/") or not self.replica.strip("/"):
            raise IcebergMetadataError("An Iceberg path mover needs two non-empty prefixes")

    @classmethod
    def for_table(cls, location: str, properties: Mapping[str, str], replica: str) -> PathMover:
        """The mover of a table at ``location`` with these ``properties``: a path property
        naming a folder outside the location gives the replica's ``data/`` or ``metadata/``
        (``_FOLDER_OF_PROPERTY``) that folder's files."""
        base = cls(location, replica)
        folders: dict[str, str] = {}
        for key, folder in _FOLDER_OF_PROPERTY.items():
            value = properties.get(key)
            if value and value.strip("/") and not base.is_under_source(value):
                target = f"{base._replica_prefix}/{folder}"
                if folders.setdefault(value.rstrip("/"), target) != target:
                    raise IcebergMetadataError(
                        f"the Iceberg table's property {key} names {value}, which another "
                        "path property names for other files"
                    )
        return cls(location, replica, tuple(folders.items()))

    @property
    def roots(self) -> tuple[tuple[str, str], ...]:
        """Every (source prefix, replica prefix) pair as the metadata spells it, the
        location's first."""
        return ((self.source.rstrip("/"), self._replica_prefix), *self.folders)

    @property
    def _replica_prefix(self) -> str:
        return self.replica.rstrip("/")

    def _root(self, path: str) -> tuple[str, str] | None:
        """The longest source prefix ``path`` is at or below, with its replica prefix."""
        path = canonical(path)
        under = [
            (prefix, replica)
            for prefix, replica in ((canonical(s).rstrip("/"), r) for s, r in self.roots)
            if path == prefix or path.startswith(prefix + "/")
        ]
        return max(under, key=lambda pair: len(pair[0]), default=None)

    def is_under_source(self, path: str) -> bool:
        """Whether ``path`` is a source prefix or below one."""
        return self._root(path) is not None

    def move(self, path: str) -> str:
        """``path`` under the replica prefix; an error for a path outside the source prefixes."""
        root = self._root(path)
        if root is None:
            where = " or ".join([self.source, *(source for source, _ in self.folders)])
            raise IcebergMetadataError(
                f"{path} is outside the Iceberg table's location {where}: "
                "Ferry cannot give the replica its own copy of it"
            )
        source, replica = root
        return replica + canonical(path)[len(source) :]

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
