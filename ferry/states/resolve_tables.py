"""State `Resolve tables`: validate the config; one Map item per table, each with its own
event id. A ``table-name-pattern`` is expanded here, against the source catalog: each table
it matches is an item of its own (``ferry.planning.selection``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from ferry.config import ReplicationConfig, TableReplication
from ferry.core.errors import ConfigError
from ferry.core.event_id import new_event_id
from ferry.planning.runs import RunLocations
from ferry.replicas.replica import promoted_replicas
from ferry.statemachine.payloads import trigger_time
from ferry.statemachine.replication_payloads import (
    ResolveTablesInput,
    ResolveTablesResult,
    TableItem,
)
from ferry.states.context import StateContext
from ferry.storage import fs

logger = logging.getLogger(__name__)


def run(
    context: StateContext, payload: ResolveTablesInput | Mapping[str, Any], max_concurrency: int
) -> ResolveTablesResult:
    """The config's tables, critical first, written where the Map's ItemReader reads them."""
    payload = ResolveTablesInput.model_validate(payload)
    config = context.load(payload.config_uri)
    items = []
    triggered = trigger_time(payload.trigger)
    replications = context.select_tables(config, payload.tables or [], payload.config_uri)
    adopt = {name.lower() for name in payload.adopt}
    unknown = adopt - {r.replica_qualified_name.lower() for r in replications}
    if unknown:
        raise ConfigError(
            f"adopt: {sorted(unknown)[0]} is not a replica table of this run; nothing "
            "is adopted that the run does not replicate"
        )
    replications = leave_out_promoted(context, config, replications)
    # Critical tables first, then normal, then bulk: the Map starts them in this order.
    for replication in sorted(replications, key=lambda r: r.priority.rank):
        started = context.clock()
        items.append(
            TableItem(
                config_uri=payload.config_uri,
                source_table=replication.source_table.qualified_name,
                replica_table=replication.replica_qualified_name,
                event_id=context.event_ids(started),
                start_time=started,
                trigger_time=triggered or started,
                adopt=replication.replica_qualified_name.lower() in adopt,
            )
        )
    # The list goes to S3, read by the Map's ItemReader: a config that selects thousands
    # of tables would not fit in a state (256 KiB).
    where = RunLocations.for_event(context.work_uri, f"run-{new_event_id(context.clock)}")
    fs.write_bytes(where.tables, json.dumps([i.model_dump(mode="json") for i in items]).encode())
    tables_bucket, tables_key = fs.object_location(where.tables)
    return ResolveTablesResult(
        tables_bucket=tables_bucket,
        tables_key=tables_key,
        results_prefix=fs.object_location(where.results)[1],
        count=len(items),
        max_concurrency=max_concurrency,
    )


def leave_out_promoted(
    context: StateContext, config: ReplicationConfig, replications: list[TableReplication]
) -> list[TableReplication]:
    """The replications whose replica ``ferry failover`` did not promote; each promoted one
    is left out of the run with a note (writers own it; the run neither fails nor alarms
    for it). A replica catalog that cannot be read leaves nothing out: Plan refuses a
    promoted replica anyway."""
    if not replications:
        return replications
    try:
        with context.open(config.replica_catalog) as replica:
            promoted = promoted_replicas(replica, replications)
    except Exception as error:  # noqa: BLE001 - Plan checks each table again
        logger.info("promoted replicas not checked: %s", error)
        return replications
    for name, value in promoted.items():
        logger.warning("%s: left out of the run: promoted by ferry failover (%s)", name, value)
    return [r for r in replications if r.replica_qualified_name.lower() not in promoted]
