"""What Plan read of the replica's partitions, handed to Commit so that it need not list them
again.

Commit compares every location the replica references before it writes with those it
references after (``ferry.lifecycle.commit_locations``). Plan has just listed every replica
partition for its diff; on a table of many partitions, listing them all again in Commit to
write a few cost as much as the diff's own read. So Plan leaves what it read under the run's
folder (``replica-as-planned.json``): the table's location and each partition's values and
location, keyed by the state of the replica table as Plan read it (its location, its
parameters — Ferry's event and claim, Hive's ``transient_lastDdlTime`` — and Glue's version).

Commit uses it only while the replica table is still in that state: a table someone altered
since, written by another event, claimed, or gone, or a document that is missing or
unreadable, makes Commit read the catalog as before. Commit's own guard against a replica
changed since Plan (``ferry.lifecycle.committing.check_unchanged_since_plan``) stands
whatever this document says. A partition someone else changed without touching the table is
handled as any change after the read is (``ferry.lifecycle.commit_locations``): the ledger
can only miss a location, never record one the replica still references, and housekeeping
reads the catalog again before it deletes anything.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ferry.catalog.locations import ReferencedLocations
from ferry.core.model import Partition, Table
from ferry.lifecycle.commit_locations import BeforeCommit
from ferry.storage import fs

#: In the run's folder: the replica's partitions as Plan read them.
REPLICA_AS_PLANNED = "replica-as-planned.json"


def replica_state(table: Table) -> str:
    """A digest of what any write to the replica table changes: its location, its
    parameters (Ferry's event and claim among them; Hive moves ``transient_lastDdlTime`` on
    every alter), when the catalog last changed it and Glue's ``VersionId``."""
    described = {
        "table": table.qualified_name.lower(),
        "location": table.location,
        "parameters": sorted(table.parameters.items()),
        "changedAt": table.changed_at.isoformat() if table.changed_at else None,
        "versionId": table.version_id,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def write_replica_as_planned(
    run_root: str, replica: Table, partitions: Mapping[tuple[str, ...], Partition]
) -> None:
    """Leave every replica partition Plan read (``replica``: the table as Plan read it)."""
    document = {
        "replica": replica_state(replica),
        "partitions": [
            [list(values), partition.location]
            for values, partition in partitions.items()
            if partition.location
        ],
    }
    fs.write_bytes(fs.join(run_root, REPLICA_AS_PLANNED), json.dumps(document).encode())


def read_replica_as_planned(run_root: str, current: Table | None) -> BeforeCommit | None:
    """What the replica references, as Plan read it, while ``current`` (the replica table
    read now) is still in the state Plan read; None when it is not, or there is no readable
    document (the caller then reads the catalog)."""
    if current is None or not current.is_partitioned:
        return None
    where = fs.join(run_root, REPLICA_AS_PLANNED)
    if not fs.exists(where):
        return None
    try:
        document: Any = json.loads(fs.read_bytes(where))
        if document["replica"] != replica_state(current):
            return None
        partitions = {tuple(values): location for values, location in document["partitions"]}
    except (ValueError, KeyError, TypeError):
        return None  # not a document Plan wrote whole: read the catalog instead
    locations = ReferencedLocations.of(current.location, list(partitions.values()), True)
    return BeforeCommit(locations.locations, current.location, partitions)
