"""``ferry resume EVENT``: continue a table's failed attempt without re-copying what it copied.

The event's run folder under the work location holds its plan: the config it ran with and
the table it replicated. When that attempt may be continued
(``ferry.lifecycle.attempts.resumable``), the table is replicated again in this process, as ``ferry
replicate`` does, and its Plan adopts the attempt. Otherwise one line says why, and nothing is
changed.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from ferry.commands import check_regions, load_selected
from ferry.core.errors import NotResumableError
from ferry.storage import fs
from ferry.storage.aws import AwsClients

_EVENT = re.compile(r"^[A-Za-z0-9_.-]+$")


def run_resume(
    event_id: str,
    config_path: Path | None = None,
    *,
    as_json: bool = False,
    work_uri: str | None = None,
    home: Path = Path(".ferry"),
    state_table: str | None = None,
    lock_lease: timedelta | None = None,
) -> int:
    """Continue event ``event_id``'s failed attempt; the exit code (as ``ferry replicate``)."""
    from ferry.commands.replicate import open_state, run_replicate
    from ferry.planning.plan_document import read_plan
    from ferry.planning.runs import RunLocations
    from ferry.states import plan as plan_state
    from ferry.states.context import StateContext

    home = home.resolve()
    work = work_uri or fs.local_uri(home / "work")
    if not _EVENT.match(event_id):
        raise NotResumableError(f"event {event_id!r}: not resumable: not an event id")
    where = RunLocations.for_event(work, event_id)
    if not fs.exists(where.plan):
        raise NotResumableError(
            f"event {event_id}: not resumable: no plan of it under {work}/runs "
            "(an unknown event, or one that never planned)"
        )
    document = read_plan(where.plan)
    plan = document.plan
    if config_path is None:
        if fs.scheme_of(document.config_uri) != "file" and "://" in document.config_uri:
            raise NotResumableError(
                f"event {event_id}: its config is {document.config_uri}: give the config file "
                "(ferry resume EVENT CONFIG)"
            )
        config_path = Path(document.config_uri.removeprefix("file://"))
    source_table = plan.source_table.qualified_name
    replica_table = plan.replication.replica_qualified_name
    config = load_selected(config_path, [source_table])
    aws = AwsClients()
    check_regions(config, config_path, aws)
    state = open_state(home, state_table, aws, lock_lease)
    context = StateContext(work, aws, state=state)
    replication = config.replication_of(source_table, replica_table)
    attempt, why = plan_state.resumable_attempt(context, config, replication, event_id)
    if attempt is None:
        raise NotResumableError(f"event {event_id} ({replica_table}): not resumable: {why}")
    newest, _ = plan_state.resumable_attempt(context, config, replication)
    if newest is not None and newest.event_id != event_id:
        raise NotResumableError(
            f"event {event_id} ({replica_table}): not resumable: a later attempt of the same "
            f"table, event {newest.event_id}, is the one to continue"
        )
    return run_replicate(
        config_path,
        [source_table],
        as_json=as_json,
        work_uri=work,
        home=home,
        state_table=state_table,
        lock_lease=lock_lease,
    )
