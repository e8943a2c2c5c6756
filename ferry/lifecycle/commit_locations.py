"""What a replica references around its commit: read once before, worked out after.

The commit's supersession (``ferry.lifecycle.snapshot_records``) compares every location the
replica references before the commit with those it references after. Before is read from
the catalog, each partition's location kept with its values. After follows from before and
the plan: the commit held the replica's claim, so the partitions it did not write still
point where they did, the ones it wrote point where the plan says, and the ones it dropped
are gone. Reading every partition again after writing a few is what made a commit of 1 % of
a table of many partitions cost two listings of all of them.

After is worked out only for a Hive table's partitions written in place; a table the
commit drops or overwrites, an Iceberg table, or a record from before the partitions were
kept, is read again. Worked out, it can only hold more than the catalog would say (a
partition someone else dropped meanwhile is still counted), so it never ledgers a location
the replica still references.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ferry.catalog import Catalog
from ferry.catalog.locations import ReferencedLocations, locations_of
from ferry.core.model import Table

if TYPE_CHECKING:  # the plan's model brings pyiceberg, which a Hive table's run never loads
    from ferry.planning.replication_plan import ReplicationPlan


@dataclass(frozen=True)
class BeforeCommit:
    """Every location the replica referenced before its commit wrote anything."""

    #: Every location, normalised and sorted (``ReferencedLocations.locations``).
    locations: list[str]
    #: The table's own location and each partition's values and location, as read (None:
    #: not kept, as in a record written before they were).
    table_location: str | None = None
    partitions: dict[tuple[str, ...], str] | None = None

    def __bool__(self) -> bool:
        return bool(self.locations)

    def to_json(self) -> dict[str, Any]:
        return {
            "locations": self.locations,
            "tableLocation": self.table_location,
            "partitions": None
            if self.partitions is None
            else [[list(values), location] for values, location in self.partitions.items()],
        }

    @classmethod
    def from_json(cls, document: Any) -> BeforeCommit:
        if isinstance(document, list):  # a record from before the partitions were kept
            return cls(list(document))
        partitions = document.get("partitions")
        return cls(
            list(document["locations"]),
            document.get("tableLocation"),
            None if partitions is None else {tuple(v): loc for v, loc in partitions},
        )


def read_before(replica: Catalog, table: Table | None) -> BeforeCommit:
    """What the replica ``table`` (as just read; None: there is none) references now, its
    partitions read from its catalog."""
    if table is None:
        return BeforeCommit([])
    partitioned = table.is_partitioned
    partitions = (
        {p.values: p.location for p in replica.list_partitions(table) if p.location}
        if partitioned
        else {}
    )
    locations = ReferencedLocations.of(table.location, list(partitions.values()), partitioned)
    return BeforeCommit(locations.locations, table.location, partitions)


def after_commit(
    replica: Catalog, before: BeforeCommit, plan: ReplicationPlan
) -> ReferencedLocations:
    """What the replica references after ``plan``'s commit: worked out from ``before`` and the
    plan where that can be, read from the catalog otherwise."""
    table = plan.replica_table
    if (
        before.partitions is None
        or plan.iceberg is not None
        or plan.overwrite
        or plan.drop_table
        or not table.is_partitioned
    ):
        return locations_of(replica, replica.get_table(table.database, table.name))
    partitions = dict(before.partitions)
    for dropped in plan.partitions_to_drop:
        partitions.pop(dropped.values, None)
    for written in plan.replica_partitions:
        if written.location:
            partitions[written.values] = written.location
        else:
            partitions.pop(written.values, None)
    return ReferencedLocations.of(table.location, list(partitions.values()), True)
