"""State `Housekeeping` (its own state machine): delete superseded snapshots past their grace
period; the vacuum when asked (the rules themselves are ``ferry.lifecycle.retired_snapshots``; this
module is the state). Writes the full report under ``<work>/housekeeping/``; returns counts, the
first paths and the report's URI."""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

from ferry.lifecycle import retired_snapshots as rules
from ferry.lifecycle.housekeeping_report import Request
from ferry.statemachine.housekeeping_payloads import HousekeepingInput, HousekeepingResult
from ferry.states.context import StateContext
from ferry.storage import fs


def run(
    context: StateContext, payload: HousekeepingInput | Mapping[str, Any]
) -> HousekeepingResult:
    """Housekeep the config's replica tables; the report written, its summary returned."""
    payload = HousekeepingInput.model_validate(payload)
    config = context.load(payload.config_uri)
    replications = context.select_tables(config, payload.tables or [], payload.config_uri)
    now = context.clock()
    # No table to ask about (a housekeeping-only config, a pattern that matched
    # nothing): the replica catalog is not opened, and the report lists no table.
    with context.open(config.replica_catalog) if replications else nullcontext() as replica:
        report = rules.housekeep(
            config, replications, replica, context.state, now,
            lambda replication: context.replica_key(config, replication),
            Request.from_payload(payload.model_dump()),
        )  # fmt: skip
    where = fs.join(context.work_uri, "housekeeping", f"{context.event_ids(now)}.json")
    fs.write_bytes(where, json.dumps(report.to_dict(), indent=2).encode())
    return HousekeepingResult.model_validate(report.result(where))
