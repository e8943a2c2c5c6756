"""What Ferry may delete: only folders it created, and nothing any table references.

Every deletion Ferry makes — housekeeping of the ledger, the vacuum, a failed run's
clean-up — asks ``Ownership.refusal`` first. A path may be deleted only when all hold:

- it lies in a **snapshot folder Ferry created**: ``<root>/<event-id>`` recorded by the run
  that wrote it (``ferry.replicas.ledger.CreatedSnapshot``, with the table-location of that time).
  Snapshots written before Ferry kept that record (or by Circus Train, for the replicas
  Ferry adopts) count when they lie directly below today's table-location, are named by an
  event id, that event is older than the replica's first recorded snapshot, and today's
  table-location is one the replica recorded snapshots below (or it recorded none yet).
  Being below today's table-location is never enough: a table-location moved to a parent
  folder, to a sibling or to the source makes nothing there Ferry's;
- no table or partition of the replica catalog references it, nor a location holding it
  (``ferry.catalog.locations``: the replica table itself, read right before, and every table
  of the replica databases the config writes to);
- it is not inside a source table's location (as each created snapshot recorded it, and as
  the replica's ``ferry.source.location`` says);
- the replica is not a METADATA_MIRROR: a mirror owns no data, whatever its config says.

An **Iceberg replica** has no snapshot folders: its files are below its table-location, and
Iceberg's metadata, not the catalog, says which a reader needs. ``IcebergOwnership`` says
what may go there: a file Ferry ledgered itself (one only superseded replica metadata
referenced, recorded by the commit that superseded it; a file a run wrote, named by the
run's intent, which Plan ledgers before the run writes anything at the replica), below a
table-location a run recorded writing the replica at, not inside a source's location, and
not referenced by the replica's *current* metadata — every snapshot it keeps, read at
deletion time. A file Ferry did not ledger is never a candidate.

"Which locations does this replica table reference" has one answer,
``ferry.catalog.locations.referenced_locations`` (``locations_of`` for a table already
read): the commit's supersession (``ferry.lifecycle.replica_state``), housekeeping and a failed
run's clean-up all call it.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ferry.catalog.locations import DatabaseReferences, Paths, ReferencedLocations
from ferry.replicas.ledger import CreatedSnapshot
from ferry.storage import fs

#: A snapshot folder's name: Ferry's event id (``ferry.core.event_id``), or Circus Train's
#: (``ctt-20161207t155219.461z-…``; ``ctp-`` for its partition replications).
SNAPSHOT_NAME = re.compile(
    r"ferry-\d{8}t\d{9}z-[0-9a-f]{8}|ct[tp]-\d{8}t\d{6}\.\d{3}z-[0-9a-z]+", re.IGNORECASE
)


_EVENT_TIME = re.compile(r"(\d{8})t(\d{6})")


def event_time(name: str) -> datetime | None:
    """When an event id (a snapshot folder's name) was made, to the second, or None."""
    match = _EVENT_TIME.search(name) if is_snapshot_name(name) else None
    if match is None:
        return None
    try:
        return datetime.strptime("".join(match.groups()), "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def is_snapshot_name(name: str) -> bool:
    """Whether a folder's name is an event id: the name of a snapshot folder."""
    return SNAPSHOT_NAME.fullmatch(name) is not None


def snapshot_folder(path: str, root: str | None) -> str | None:
    """The folder ``<root>/<event-id>`` that is or holds ``path``, or None.

    ``root`` itself, and anything below it whose first folder is not named by an event id,
    is not a snapshot.
    """
    if not root:
        return None
    below = fs.relative_path(path, root)
    if not below:
        return None
    name = below.split("/", 1)[0]
    return fs.normalise(fs.join(root, name)) if is_snapshot_name(name) else None


def snapshot_root_of(location: str) -> str | None:
    """The table-location a snapshot location was written below: what precedes its last
    event-named folder (``s3://b/t/ferry-…/dt=1`` → ``s3://b/t``), or None."""
    parts = fs.normalise(location).split("/")
    for index in range(len(parts) - 1, 2, -1):
        if is_snapshot_name(parts[index]):
            return "/".join(parts[:index])
    return None


@dataclass
class Ownership:
    """What one replica table's deletions must respect (see the module's rules)."""

    #: The replica table's own references, read right before deciding.
    replica: ReferencedLocations
    #: The snapshot folders Ferry recorded creating for this replica.
    created: Sequence[CreatedSnapshot] = ()
    #: Snapshot folders ledger entries named (each was checked when its commit recorded it).
    ledgered: Iterable[str] = ()
    #: Today's table-location: where snapshots from before Ferry recorded them count.
    root: str | None = None
    #: Source tables' locations: nothing inside them is deleted.
    sources: Iterable[str] = ()
    #: Every table of the replica databases the config writes to.
    catalog: DatabaseReferences | None = None
    #: Why this replica owns nothing at all (a mirror), else None.
    owns_nothing: str | None = None
    #: Since when every snapshot written for this replica is recorded (None: none yet).
    recording_since: datetime | None = None

    def __post_init__(self) -> None:
        self._created = Paths([*(c.path for c in self.created), *self.ledgered])
        self._sources = Paths(
            [*self.sources, *(c.source_location for c in self.created if c.source_location)]
        )
        roots = {fs.normalise(c.root) for c in self.created}
        first = self.recording_since or min((c.created_at for c in self.created), default=None)
        # Unrecorded snapshots count only from before the first recorded one, and only below
        # a table-location the replica wrote to (see the module's rules).
        self._unrecorded_before = (
            None if self.root and roots and fs.normalise(self.root) not in roots else first
        )
        self._legacy = bool(self.root) and (not roots or self._unrecorded_before is not None)

    def recorded(self, path: str) -> bool:
        """Whether ``path`` is a snapshot folder a run recorded creating (or holds one)."""
        normal = fs.normalise(path)
        return normal in self._created or bool(self._created.above(normal))

    def snapshot_of(self, path: str) -> str | None:
        """The snapshot folder Ferry created that is or holds ``path``, or None."""
        normal = fs.normalise(path)
        if normal in self._created:
            return normal
        holders = self._created.above(normal)
        if holders:
            return holders[-1]
        folder = snapshot_folder(normal, self.root) if self._legacy else None
        if folder is None or self._unrecorded_before is None:
            return folder
        written = event_time(folder.rsplit("/", 1)[-1])
        return folder if written is not None and written < self._unrecorded_before else None

    def refusal(self, path: str) -> str | None:
        """Why ``path`` must not be deleted, or None when it may be."""
        if self.owns_nothing:
            return self.owns_nothing
        if self.snapshot_of(path) is None:
            return "not in a snapshot folder Ferry created"
        if references := self.replica.referencing(path):
            more = f" and {len(references) - 1} more" if len(references) > 1 else ""
            return f"the replica references {references[0]}{more}"
        if inside := self._sources.at_or_below(path) or self._sources.above(path):
            return f"it is at or inside the source's location {inside[0]}"
        if self.catalog is not None and (references := self.catalog.referencing(path)):
            return f"a table of the replica catalog references {references[0]}"
        return None


@dataclass
class IcebergOwnership:
    """What an Iceberg replica's deletions must respect (see the module's rules).

    Answers as ``Ownership`` does, for ``ferry.lifecycle.retired_snapshots``'s ledger: ``refusal``
    per path; no path is a snapshot folder (nothing to forget but the ledger entry).
    """

    #: Every file the replica's current metadata needs (``ferry.iceberg.pipeline.
    #: CurrentReferences``: read when first asked, right before deciding).
    current: Container[str]
    #: The table-locations runs recorded writing the replica at.
    roots: Iterable[str] = ()
    #: Source tables' locations: nothing inside them is deleted.
    sources: Iterable[str] = ()
    #: Why nothing may be deleted now (a replication holding the lock may be copying).
    owns_nothing: str | None = None

    def __post_init__(self) -> None:
        self._roots = Paths(self.roots)
        self._sources = Paths(self.sources)

    def recorded(self, path: str) -> bool:
        return False

    def snapshot_of(self, path: str) -> str | None:
        return None

    def refusal(self, path: str) -> str | None:
        """Why ``path`` must not be deleted, or None when it may be."""
        if self.owns_nothing:
            return self.owns_nothing
        if not self._roots.above(path):
            return "not below a table-location Ferry recorded writing this Iceberg replica at"
        if inside := self._sources.at_or_below(path) or self._sources.above(path):
            return f"it is at or inside the source's location {inside[0]}"
        if path in self.current:
            return "the replica's current Iceberg metadata references it"
        return None
