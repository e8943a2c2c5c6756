"""Which locations a catalog's tables reference: the one answer, for every caller.

A table references its own location and, when partitioned, each partition's. What a
reader uses is narrower: partitions, and an unpartitioned table's location (a partitioned
table's own folder is not read). Everything that must not delete or move what a replica
points at asks here: the commit's supersession (``ferry.lifecycle.replica_state``), housekeeping, a
failed run's clean-up (``ferry.lifecycle.committing.snapshot_references``) and the ownership rules
(``ferry.replicas.ownership``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ferry.catalog import Catalog
from ferry.core.model import Table
from ferry.storage import fs


class Paths:
    """Normalised locations, sorted, to find those at, below or above a path without a scan."""

    def __init__(self, paths: Iterable[str]):
        self.paths = sorted({fs.normalise(p) for p in paths if p})
        self._set = set(self.paths)

    def __bool__(self) -> bool:
        return bool(self.paths)

    def __contains__(self, path: str) -> bool:
        return fs.normalise(path) in self._set

    def at_or_below(self, path: str, exclude: str | None = None) -> list[str]:
        path = fs.normalise(path)
        found = [path] if path in self._set and path != exclude else []
        prefix = path + "/"
        index = bisect.bisect_left(self.paths, prefix)
        while index < len(self.paths) and self.paths[index].startswith(prefix):
            found.append(self.paths[index])
            index += 1
        return found

    def above(self, path: str) -> list[str]:
        """The paths that strictly hold ``path``."""
        parts = fs.normalise(path).split("/")
        return [
            "/".join(parts[:end]) for end in range(3, len(parts)) if "/".join(parts[:end]) in self
        ]


@dataclass(frozen=True)
class ReferencedLocations:
    """Every location some tables reference, read from their catalog."""

    #: Every location: tables' and partitions'.
    every: Paths = field(default_factory=lambda: Paths(()))
    #: Locations whose whole subtree is data a reader uses: partitions, and unpartitioned
    #: tables' locations (a partitioned table's own location is not read).
    data: Paths = field(default_factory=lambda: Paths(()))

    @classmethod
    def of(
        cls, table_location: str | None, partition_locations: Sequence[str], partitioned: bool
    ) -> ReferencedLocations:
        own = [table_location] if table_location else []
        partitions = list(partition_locations) if partitioned else []
        return cls(Paths(own + partitions), Paths(partitions if partitioned else own))

    @classmethod
    def union(cls, parts: Iterable[ReferencedLocations]) -> ReferencedLocations:
        parts = list(parts)
        return cls(
            Paths(p for part in parts for p in part.every.paths),
            Paths(p for part in parts for p in part.data.paths),
        )

    @property
    def locations(self) -> list[str]:
        """Every referenced location, normalised and sorted."""
        return list(self.every.paths)

    def referencing(self, path: str) -> list[str]:
        """The referenced locations at or below ``path``, or the data location holding it."""
        return self.every.at_or_below(path) or self.data.above(path)


def referenced_locations(catalog: Catalog, database: str, name: str) -> ReferencedLocations:
    """Every location the table ``database.name`` and its partitions reference."""
    return locations_of(catalog, catalog.get_table(database, name))


def locations_of(catalog: Catalog, table: Table | None) -> ReferencedLocations:
    """Every location ``table`` (as just read from ``catalog``) and its partitions reference."""
    if table is None:
        return ReferencedLocations()
    partitions = (
        [p.location for p in catalog.list_partitions(table) if p.location]
        if table.is_partitioned
        else []
    )
    return ReferencedLocations.of(table.location, partitions, table.is_partitioned)


class DatabaseReferences:
    """What every table of some replica databases references, read once when first asked."""

    def __init__(self, catalog: Catalog, databases: Iterable[str]):
        self.catalog = catalog
        self.databases = sorted({d.lower() for d in databases})
        self._read: ReferencedLocations | None = None

    def referencing(self, path: str) -> list[str]:
        if self._read is None:
            self._read = ReferencedLocations.union(
                referenced_locations(self.catalog, database, name)
                for database in self.databases
                for name in self.catalog.list_table_names(database)
            )
        return self._read.referencing(path)
