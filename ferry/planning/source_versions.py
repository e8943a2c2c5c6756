"""The source version a replica holds: what Plan read of the source, as Commit records it.

A version is what each kind of catalog already says cheaply about a table, read by Plan
with the table and its selected partitions (never from data files):

- a Hive metastore table: the latest of the table's and its selected partitions' create
  time / ``transient_lastDdlTime``, and how many partitions were selected;
- a Glue table: its ``VersionId``, the latest of its ``UpdateTime`` and its selected
  partitions' ``CreationTime``, and the partition count;
- an Iceberg table (in either catalog): its current snapshot id and that snapshot's time.

Commit writes it on the replica table (``ferry.source.version``), with the time Plan read
the source (``ferry.source.read-at``); the state store's outcome keeps the same pair for
the last success (``ferry.replicas.ledger.Outcome``), the nothing-to-do path included. Written as
``<kind>:key=value;key=value``: opaque to people, parsed back by ``ferry.freshness``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ferry.core.model import Partition, Table
from ferry.replicas.replica import LAST_REPLICATED, SOURCE_READ_AT, SOURCE_VERSION

HIVE, GLUE, ICEBERG = "hive", "glue", "iceberg"


@dataclass(frozen=True)
class SourceVersion:
    """One version of a source table (see the module's kinds)."""

    kind: str
    #: The latest change the catalog recorded (Iceberg: the current snapshot's time).
    changed_at: datetime | None
    #: How many partitions were selected (partitioned Hive and Glue tables).
    partitions: int | None = None
    #: Glue's ``VersionId`` of the table.
    version_id: str | None = None
    #: An Iceberg table's current snapshot (None: no snapshot yet).
    snapshot_id: int | None = None
    #: A digest of the selected partitions' values (``names_digest``): a status whose
    #: source has the same names need not list the replica's.
    names: str | None = None

    def __str__(self) -> str:
        fields: list[tuple[str, object]] = [
            ("snapshot", self.snapshot_id),
            ("version", self.version_id),
            ("changed", _text(self.changed_at) if self.changed_at else None),
            ("partitions", self.partitions),
            ("names", self.names),
        ]
        return f"{self.kind}:" + ";".join(f"{k}={v}" for k, v in fields if v is not None)

    @classmethod
    def parse(cls, text: str | None) -> SourceVersion | None:
        """The version ``str`` wrote; None for no text or text no Ferry wrote."""
        if not text or ":" not in text:
            return None
        kind, _, rest = text.partition(":")
        fields = dict(part.split("=", 1) for part in rest.split(";") if "=" in part)
        try:
            return cls(
                kind=kind,
                changed_at=_moment(fields["changed"]) if "changed" in fields else None,
                partitions=int(fields["partitions"]) if "partitions" in fields else None,
                version_id=fields.get("version"),
                snapshot_id=int(fields["snapshot"]) if "snapshot" in fields else None,
                names=fields.get("names"),
            )
        except ValueError:
            return None


def of_table(table: Table, partitions: Sequence[Partition], glue: bool) -> SourceVersion:
    """A Hive or Glue table's version, from the table and the partitions Plan selected."""
    times = [t for t in (table.changed_at, *(p.changed_at for p in partitions)) if t]
    return SourceVersion(
        kind=GLUE if glue else HIVE,
        changed_at=max(map(_utc, times)) if times else None,
        partitions=len(partitions) if table.is_partitioned else None,
        version_id=table.version_id if glue else None,
        names=names_digest(p.values for p in partitions) if table.is_partitioned else None,
    )


def names_digest(values: Iterable[tuple[str, ...]]) -> str:
    """A short digest of a set of partition values, whatever their order."""
    text = "\n".join("\x1f".join(v) for v in sorted(set(values)))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def of_iceberg(current_snapshot_id: int | None, snapshot_ms: int | None) -> SourceVersion:
    """An Iceberg table's version: its current snapshot and when it was committed."""
    changed = datetime.fromtimestamp(snapshot_ms / 1000, UTC) if snapshot_ms else None
    return SourceVersion(ICEBERG, changed, snapshot_id=current_snapshot_id)


def recorded_parameters(version: str | None, read_at: datetime | None) -> dict[str, str]:
    """What Commit writes on the replica table of the source it replicated."""
    recorded = {}
    if version:
        recorded[SOURCE_VERSION] = version
    if read_at:
        recorded[SOURCE_READ_AT] = _text(read_at)
    return recorded


def held_by(parameters: Mapping[str, str]) -> tuple[str | None, datetime | None]:
    """The source version a replica table's parameters say it holds, and when it was read.

    A replica written before Commit recorded them has its ``ferry.last.replicated``: when
    its plan ran, a moment after it read the source.
    """
    read_at = parameters.get(SOURCE_READ_AT) or parameters.get(LAST_REPLICATED)
    try:
        moment = _moment(read_at) if read_at else None
    except ValueError:
        moment = None
    return parameters.get(SOURCE_VERSION), moment


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _text(moment: datetime) -> str:
    return _utc(moment).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _moment(text: str) -> datetime:
    return _utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
