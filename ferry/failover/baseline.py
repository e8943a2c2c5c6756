"""The baseline: what each replica held when ``ferry failover`` promoted it.

Failback compares both sides with it: a replica partition whose files' fingerprint now
differs from the baseline's was changed in DR; a source partition whose fingerprint differs
from the one the replica was copied from (``ferry.partition.fingerprint``) was changed at the
source. For a Hive table: every replica partition's name, values, location, the fingerprint
of its own files at the failover (listed then) and the source fingerprint it was replicated
from; an unpartitioned table is one entry named ``""``. For an Iceberg replica: its current
snapshot id.

Where it is kept: one JSON document per replica table in the work area,
``<work>/failover/<replica key digest>.json`` (the work area of ``ferry replicate --home``,
or ``--work-uri``), written before the table is marked promoted and named by the replica's
key (``ferry.replicas.ledger.replica_key``), so failback finds it with no other record. 10,000
partitions are about 3 MB. The work area lives where the state store does, on the DR side:
it survives the primary's loss.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ferry.catalog import Catalog
from ferry.core.errors import FailoverError
from ferry.core.model import Partition, Table, partition_name
from ferry.iceberg.recognise import is_iceberg, metadata_location
from ferry.replicas.replica import (
    PARTITION_FINGERPRINT,
    SOURCE_READ_AT,
    SOURCE_VERSION,
    TABLE_FINGERPRINT,
)
from ferry.storage import fingerprint, fs

#: The folder of the work area that holds the baselines and failback journals.
FAILOVER_FOLDER = "failover"


@dataclass(frozen=True)
class PartitionBaseline:
    """One replica partition (or an unpartitioned table: ``name`` ``""``) at the failover."""

    name: str
    values: tuple[str, ...]
    location: str | None
    #: The fingerprint of the replica's own files at the failover (listed then).
    replica_fingerprint: str | None
    #: The source fingerprint the replica was copied from (``ferry.partition.fingerprint``).
    source_fingerprint: str | None


@dataclass(frozen=True)
class Baseline:
    """What one replica table held when it was promoted."""

    failover_id: str
    source_table: str
    replica_table: str
    partitioned: bool
    source_version: str | None = None
    source_read_at: str | None = None
    #: An Iceberg replica's current snapshot id (its failback keeps ids from there).
    iceberg_snapshot_id: int | None = None
    partitions: tuple[PartitionBaseline, ...] = field(default=())

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Baseline:
        raw: dict[str, Any] = json.loads(data)
        partitions = tuple(
            PartitionBaseline(**{**p, "values": tuple(p["values"])}) for p in raw["partitions"]
        )
        return cls(**{**raw, "partitions": partitions})

    def by_values(self) -> dict[tuple[str, ...], PartitionBaseline]:
        return {p.values: p for p in self.partitions}


def baseline_uri(work_uri: str, replica_key: str) -> str:
    """Where the baseline of the replica named ``replica_key`` is kept."""
    digest = hashlib.sha256(replica_key.encode()).hexdigest()[:24]
    return fs.join(work_uri, FAILOVER_FOLDER, f"{digest}.json")


def save(uri: str, baseline: Baseline) -> None:
    fs.write_bytes(uri, baseline.to_json())


def load(uri: str) -> Baseline | None:
    """The baseline at ``uri``, or None when there is none."""
    if not fs.exists(uri):
        return None
    try:
        return Baseline.from_json(fs.read_bytes(uri))
    except (ValueError, KeyError, TypeError) as error:
        raise FailoverError(f"the failover baseline {uri} cannot be read: {error}") from None


def fingerprints_of(locations: list[str], threads: int = 8) -> dict[str, str]:
    """The data fingerprint of each location's files, as Plan computes a source's."""
    found = [location for location in locations if location]
    return {k: str(v) for k, v in fingerprint.of_locations(found, threads).items()}


def capture(
    replica: Catalog,
    table: Table,
    source_table: str,
    failover_id: str,
    threads: int = 8,
) -> Baseline:
    """What ``table`` (a replica about to be promoted) holds now."""
    common = dict(
        failover_id=failover_id,
        source_table=source_table,
        replica_table=table.qualified_name,
        partitioned=table.is_partitioned,
        source_version=table.parameters.get(SOURCE_VERSION),
        source_read_at=table.parameters.get(SOURCE_READ_AT),
    )
    if is_iceberg(table):
        return Baseline(**common, iceberg_snapshot_id=_iceberg_snapshot_id(table))
    if not table.is_partitioned:
        printed = fingerprints_of([table.location] if table.location else [], threads)
        entry = PartitionBaseline(
            "",
            (),
            table.location,
            printed.get(table.location or ""),
            table.parameters.get(TABLE_FINGERPRINT),
        )
        return Baseline(**common, partitions=(entry,))
    partitions = replica.list_partitions(table)
    printed = fingerprints_of([p.location for p in partitions if p.location], threads)
    return Baseline(
        **common,
        partitions=tuple(_entry(table, p, printed) for p in partitions),
    )


def _entry(table: Table, partition: Partition, printed: dict[str, str]) -> PartitionBaseline:
    return PartitionBaseline(
        partition_name(table.partition_keys, partition.values),
        partition.values,
        partition.location,
        printed.get(partition.location or ""),
        partition.parameters.get(PARTITION_FINGERPRINT),
    )


def _iceberg_snapshot_id(table: Table) -> int | None:
    """The current snapshot id of an Iceberg table, from its metadata file."""
    location = metadata_location(table)
    if location is None:
        return None
    try:
        metadata = json.loads(fs.read_bytes(location))
    except (OSError, ValueError):
        return None
    snapshot = metadata.get("current-snapshot-id")
    return None if snapshot in (None, -1) else int(snapshot)
