"""An Iceberg table with nothing to replicate, told from the two catalog entries alone.

A replica's catalog entry, as Ferry's Commit wrote it, records what the replica was built
from and what it was registered as:

- ``ferry.iceberg.metadata.location``: the replica's own ``metadata_location`` Ferry
  committed (``ferry.iceberg.recognise``; another writer's commit moves
  ``metadata_location`` away from it, and the run is refused before anything is read);
- ``ferry.iceberg.source.metadata.location``: the source's ``metadata_location`` that
  replica metadata replicates;
- ``ferry.iceberg.registration``: a digest of what the entry was registered from (the
  source's entry and the replication's config, as they shape the replica's parameters) and
  of the entry as registered (its definition, as ``ferry.planning.diff`` compares tables).

When all three still hold — the source's current metadata is the one replicated, the
replica's is the one Ferry committed, and neither the source's entry, the config nor the
replica's entry changed since — the replica is up to date and reads as a run would leave
it: Plan decides "nothing to do" without reading either metadata.json, and without
pyiceberg. Anything else (a replica registered before Ferry recorded these or by
``ferry failback``, a source that moved, an entry someone altered) is planned from the
metadata as before (``ferry.planning.iceberg_plan``). The records are bookkeeping, never a
difference between two entries (``ferry.planning.diff``): the next Commit writes them, and a
replica found up to date from its metadata is not written for them alone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from datetime import UTC, datetime
from typing import Any

from ferry.core.model import Table
from ferry.iceberg.iceberg_run import IcebergRun
from ferry.iceberg.recognise import (
    COMMITTED_METADATA_LOCATION,
    REGISTRATION,
    SOURCE_METADATA_LOCATION,
)
from ferry.planning.diff import definition
from ferry.planning.iceberg_checks import check_iceberg, metadata_locations
from ferry.planning.replication_plan import (
    PlanInputs,
    ReplicationPlan,
    build_plan,
    replica_parameters_for,
)
from ferry.replicas.replica import (
    LAST_REPLICATED,
    REPLICATION_EVENT,
    SOURCE_VERSION,
    check_replica_location,
)
from ferry.storage.fs import normalise

#: Any fixed time: the digest leaves out when a run wrote, and by which event.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def plan_unchanged(inputs: PlanInputs, source_table: Table) -> ReplicationPlan | None:
    """The plan of an up-to-date Iceberg replica, decided from the catalog entries (see the
    module), or None when that cannot be told without reading the metadata.

    Every check of an Iceberg plan that needs no metadata runs first, with the same errors
    (``ferry.planning.iceberg_checks``): a replica another writer committed to is refused
    here, as it is when the metadata is read."""
    replication, replica_before = inputs.replication, inputs.replica_before
    check_iceberg(replication, source_table, replica_before)
    check_replica_location(source_table, replication)
    source_metadata, replica_metadata = metadata_locations(source_table, replica_before)
    if replica_before is None or replica_metadata is None:
        return None
    recorded = replica_before.parameters
    committed = recorded.get(COMMITTED_METADATA_LOCATION)
    replicated = recorded.get(SOURCE_METADATA_LOCATION)
    version = recorded.get(SOURCE_VERSION)
    if committed is None or replicated is None or version is None:
        return None
    if normalise(committed) != normalise(replica_metadata):
        return None
    if normalise(replicated) != normalise(source_metadata):
        return None  # the source moved: its new snapshots are read from its metadata
    if recorded.get(REGISTRATION) != digest(inputs, source_table, replica_before):
        return None  # the source's entry, the config or the replica's entry changed
    # The replica as it is, with this run's bookkeeping (which no comparison looks at).
    bookkeeping = replica_parameters_for(inputs, source_table, {}, None, inputs.clock())
    replica_table = replace(
        replica_before,
        parameters={
            **recorded,
            REPLICATION_EVENT: bookkeeping[REPLICATION_EVENT],
            LAST_REPLICATED: bookkeeping[LAST_REPLICATED],
        },
    )
    return build_plan(
        inputs,
        source_table,
        replica_table,
        table_data_changed=False,
        iceberg=IcebergRun(replica_metadata, replica_metadata),
        source_version=version,  # recorded by the Commit that replicated ``replicated``
    )


def recorded(inputs: PlanInputs, source_table: Table, replica_table: Table) -> Table:
    """``replica_table`` (as a run registers it) with what the next run's ``plan_unchanged``
    compares: the source's metadata location it replicates and the registration's digest."""
    source_metadata, _ = metadata_locations(source_table, None)
    parameters = {**replica_table.parameters, SOURCE_METADATA_LOCATION: source_metadata}
    registered = replace(replica_table, parameters=parameters)
    parameters[REGISTRATION] = digest(inputs, source_table, registered)
    return replace(registered, parameters=parameters)


def digest(inputs: PlanInputs, source_table: Table, replica_table: Table) -> str:
    """A digest of what an Iceberg replica's entry is registered from — the source's entry
    as it shapes the replica's (its parameters with Ferry's own and the configured table
    properties, owner, description, storage formats; both catalogs' kinds) — and of the
    entry itself as readers see it (``definition``: no per-run bookkeeping, nor these
    records)."""
    parameters = replica_parameters_for(
        inputs, source_table, source_table.parameters, source_table.location, _EPOCH
    )
    for key in (REPLICATION_EVENT, LAST_REPLICATED):
        parameters.pop(key, None)
    source = source_table.storage
    entry = definition(replica_table)  # without bookkeeping: these records among it
    document = {
        "from": {
            "parameters": parameters,
            "owner": source_table.owner,
            "description": source_table.description,
            "formats": [source.input_format, source.output_format, source.serde_library],
            "kinds": [str(inputs.source.kind), str(inputs.replica.kind)],
        },
        "as": _plain(entry),
    }
    text = json.dumps(document, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(table: Table) -> dict[str, Any]:
    """The table as plain values, without what the catalog reports of it and is never part
    of what "the same table" means (its change time and version)."""
    plain = asdict(table)
    plain.pop("changed_at", None)
    plain.pop("version_id", None)
    return plain
