"""What each side of an Iceberg replication committed since a failover (pure).

Ferry keeps snapshot ids, so the source table and its replica name the same snapshot by the
same id. After ``ferry failover`` writers commit to the promoted replica; the source may
have committed too (the failover came after its last replication, or the source came back
and was written to). A side's *new* snapshots are its current snapshot's ancestors after
the snapshot the replica held at the failover, oldest first.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import ancestors_of


def lineage(metadata: TableMetadata) -> tuple[int, ...]:
    """The current snapshot and its ancestors' ids, oldest first (empty: no snapshot)."""
    ids = [s.snapshot_id for s in ancestors_of(metadata.current_snapshot(), metadata)]
    return tuple(reversed(ids))


def after(ids: tuple[int, ...], held: int | None) -> tuple[int, ...] | None:
    """The ids after ``held`` (all of them when ``held`` is None); None when ``held`` is not
    among them (that side's history no longer reaches the failover)."""
    if held is None:
        return ids
    if held not in ids:
        return None
    return ids[ids.index(held) + 1 :]


@dataclass(frozen=True)
class Divergence:
    """The two sides' lineages compared from the snapshot held at the failover."""

    #: The replica's (DR's) snapshots after the held one, oldest first.
    replica_new: tuple[int, ...]
    #: The source's snapshots after the held one, oldest first.
    source_new: tuple[int, ...]
    #: The replica's snapshots the source lacks in its lineage: what goes home (oldest first).
    to_write: tuple[int, ...]
    #: The source's current snapshot is not in the replica's lineage while the replica
    #: changed too: both sides committed, and neither history contains the other.
    conflict: bool


def diverge(
    source: tuple[int, ...], replica: tuple[int, ...], held: int | None
) -> Divergence | str:
    """Compare the lineages; a reason (a string) when a side's history does not reach the
    snapshot held at the failover."""
    replica_new = after(replica, held)
    if replica_new is None:
        return f"the replica's history no longer contains snapshot {held}, held at the failover"
    source_new = after(source, held)
    if source_new is None:
        return f"the source's history no longer contains snapshot {held}, held at the failover"
    source_current = source[-1] if source else None
    if source_current is None or source_current in replica:
        # The source is at the held snapshot, or at one of the replica's own snapshots an
        # earlier failback already wrote home: what it lacks is the rest of the lineage.
        start = replica.index(source_current) + 1 if source_current is not None else 0
        return Divergence(replica_new, source_new, replica[start:], conflict=False)
    return Divergence(replica_new, source_new, replica_new, conflict=bool(replica_new))
