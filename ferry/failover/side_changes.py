"""What changed on each side of a Hive table since its failover, read against the baseline.

- **changed in DR**: a replica partition new since the failover, or whose files'
  fingerprint now differs from the baseline's (writers replaced or added files);
- **dropped in DR**: a baseline partition the replica no longer has;
- **changed at the source**: a source partition new since the failover, dropped since, or
  whose fingerprint differs from the one the replica was copied from (the baseline's
  ``ferry.partition.fingerprint``);
- **changed on both**: changed (or dropped) in DR and changed at the source: a conflict,
  which only ``--prefer`` settles.

An unpartitioned table is one entry named ``""`` (its location's files).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ferry.failover import Prefer
from ferry.failover.baseline import Baseline


@dataclass(frozen=True)
class Side:
    """One side as it is now: each partition's name → (values, fingerprint of its files)."""

    partitions: Mapping[str, tuple[tuple[str, ...], str | None]]


@dataclass(frozen=True)
class TableChanges:
    source_table: str
    replica_table: str
    changed_in_dr: tuple[str, ...] = ()
    dropped_in_dr: tuple[str, ...] = ()
    changed_at_source: tuple[str, ...] = ()
    #: Partition name → its values, for every partition named above.
    values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def on_both(self) -> tuple[str, ...]:
        at_source = set(self.changed_at_source)
        return tuple(n for n in (*self.changed_in_dr, *self.dropped_in_dr) if n in at_source)

    def to_bring_home(self, prefer: Prefer | None) -> tuple[str, ...]:
        """DR's changed partitions that go to the source: those changed in DR only, and the
        conflicting ones too when the replica wins."""
        both = set(self.on_both)
        return tuple(n for n in self.changed_in_dr if n not in both or prefer is Prefer.REPLICA)

    def to_drop_at_source(self, prefer: Prefer | None) -> tuple[str, ...]:
        """Partitions DR dropped that the source drops too (under PROPAGATE_DELETES)."""
        both = set(self.on_both)
        return tuple(n for n in self.dropped_in_dr if n not in both or prefer is Prefer.REPLICA)

    def described(self) -> str:
        """What differs, in one line."""

        def names(items: tuple[str, ...]) -> str:
            shown = ", ".join(n or "(table)" for n in items[:5])
            return shown + (f" and {len(items) - 5} more" if len(items) > 5 else "") or "none"

        return (
            f"{self.source_table}: changed in DR {names(self.changed_in_dr)}; dropped in DR "
            f"{names(self.dropped_in_dr)}; changed at the source {names(self.changed_at_source)}; "
            f"on both {names(self.on_both)}"
        )

    def to_dict(self) -> dict:
        return {
            "sourceTable": self.source_table,
            "replicaTable": self.replica_table,
            "changedInDr": list(self.changed_in_dr),
            "droppedInDr": list(self.dropped_in_dr),
            "changedAtSource": list(self.changed_at_source),
            "onBoth": list(self.on_both),
        }


def compare(baseline: Baseline, replica: Side, source: Side) -> TableChanges:
    """Both sides now against the baseline (see the module's rules)."""
    before = {p.name: p for p in baseline.partitions}
    values = {name: v for name, (v, _) in replica.partitions.items()}
    values.update({name: v for name, (v, _) in source.partitions.items()})
    values.update({p.name: p.values for p in baseline.partitions})
    changed_in_dr = sorted(
        name
        for name, (_, printed) in replica.partitions.items()
        if name not in before or before[name].replica_fingerprint != printed
    )
    dropped_in_dr = sorted(name for name in before if name not in replica.partitions)
    changed_at_source = sorted(
        [
            name
            for name, (_, printed) in source.partitions.items()
            if name not in before or before[name].source_fingerprint != printed
        ]
        + [name for name in before if name not in source.partitions]
    )
    return TableChanges(
        baseline.source_table,
        baseline.replica_table,
        tuple(changed_in_dr),
        tuple(dropped_in_dr),
        tuple(changed_at_source),
        values,
    )
