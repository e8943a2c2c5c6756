"""``ferry failover``: promote a config's replicas and print what each holds (the RPO)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from ferry.commands import EXIT_OK, UsageError, load_selected
from ferry.config import ReplicationConfig, TableReplication
from ferry.copying.side_credentials import reach_sides
from ferry.core.errors import FailoverError
from ferry.failover import ReplicationSwitch
from ferry.storage import fs
from ferry.storage.aws import AwsClients

if TYPE_CHECKING:
    from ferry.failover.config_failover import FailoverReport


def selected_replications(
    config: ReplicationConfig, tables: Sequence[str]
) -> list[TableReplication]:
    """The named tables' replications (all of the config's when none is named). A
    ``table-name-pattern`` is expanded from the source catalog, which a failover cannot
    read: such tables are named with ``--table``."""
    if tables:
        return [config.replication_of(name) for name in tables]
    patterns = [r for r in config.table_replications if r.source_table.table_name is None]
    if patterns:
        raise UsageError(
            f"table-replications: {patterns[0].source_table.database_name}."
            f"{patterns[0].source_table.table_name_pattern} is a table-name-pattern, which "
            "only the source catalog can expand: name its tables with --table"
        )
    return list(config.table_replications)


def open_replica(config: ReplicationConfig, aws: AwsClients, replications, side: str = "replica"):
    """The config's replica (or source) catalog, checked to answer: ``FailoverError`` (one
    line) when it cannot be reached."""
    from ferry.catalog.factory import open_catalog

    catalog_config = config.replica_catalog if side == "replica" else config.source_catalog
    catalog = open_catalog(catalog_config, aws)
    database = (
        replications[0].replica_database
        if side == "replica"
        else replications[0].source_table.database_name
    )
    try:
        catalog.get_database(database)
    except Exception as error:  # noqa: BLE001 - any failure to answer is the finding
        catalog.close()
        what = "primary (source)" if side == "source" else "replica"
        raise FailoverError(
            f"the {what} catalog {catalog_config.name} cannot be reached: "
            f"{' '.join(str(error).split())[:200]}"
        ) from None
    return catalog


def switch_for(
    environment: str | None, home: Path, state_table: str | None, aws: AwsClients, state=None
) -> ReplicationSwitch:
    """The deployed stack's switch for ``--environment``, else the state store's own."""
    if environment:
        from ferry.commands.deployed_switch import switch_for as deployed_switch

        return deployed_switch(environment, home=home)
    from ferry.copying.budget.dynamodb import DynamoDbSlots
    from ferry.copying.budget.sqlite import SqliteSlots
    from ferry.core.clock import utc_now
    from ferry.failover.home_switch import HomeSwitch
    from ferry.lifecycle import replica_state

    slots = (
        DynamoDbSlots(aws.client("dynamodb"), state_table)
        if state_table
        else SqliteSlots(home / replica_state.LOCAL_STATE_FILE)
    )
    return HomeSwitch(
        state,
        slots,
        lambda config, replication: replica_state.replica_of(
            config.replica_catalog, replication, aws.region
        ),
        utc_now,
        replica_state.holder_is_gone,
    )


def run_failover(
    config_path: Path,
    tables: Sequence[str] = (),
    *,
    cancel_runs: bool = False,
    wait: timedelta = timedelta(0),
    home: Path = Path(".ferry"),
    state_table: str | None = None,
    work_uri: str | None = None,
    environment: str | None = None,
    as_json: bool = False,
) -> int:
    """Promote the config's replicas (``ferry.failover.config_failover``) and say what each
    holds."""
    from ferry.core.clock import utc_now
    from ferry.core.event_id import new_event_id
    from ferry.failover.config_failover import fail_over
    from ferry.lifecycle import replica_state

    prepared = prepare(config_path, tables, home, state_table, work_uri, environment)
    config, replications, work, aws, switch = (
        prepared.config,
        prepared.replications,
        prepared.work,
        prepared.aws,
        prepared.switch,
    )
    if environment:
        # Through the stack: its functions check, baseline and promote under their roles.
        from ferry.failover import deployed_failover

        names = [r.source_table.qualified_name for r in replications]
        report = deployed_failover.fail_over(
            switch, config, names, new_event_id(), cancel_runs=cancel_runs, wait=wait
        )
    else:
        with open_replica(config, aws, replications) as replica:
            report = fail_over(
                config,
                replications,
                replica,
                switch,
                work,
                lambda r: replica_state.replica_of(config.replica_catalog, r, aws.region),
                new_event_id(),
                utc_now,
                cancel_runs=cancel_runs,
                wait=wait,
            )
    if as_json:
        print(
            json.dumps(
                {
                    "failoverId": report.failover_id,
                    "tables": [t.to_dict() for t in report.tables],
                    "switch": report.switch.__dict__,
                },
                indent=2,
                default=list,
            )
        )
        return EXIT_OK
    _print_failover(report)
    return EXIT_OK


def _print_failover(report: FailoverReport) -> None:
    """Each promoted replica, what it holds, and what the switch did: a line each."""
    out = Console(highlight=False, soft_wrap=True, emoji=False)
    for table in report.tables:
        state_word = "already promoted" if table.already_promoted else "promoted"
        out.print(
            escape(
                f"✓ {table.replica_table} {state_word} ({table.promoted}); replica of "
                f"{table.source_table}"
            )
        )
        rpo = f"{table.rpo_seconds:.0f} s" if table.rpo_seconds is not None else "unknown"
        out.print(
            escape(
                f"    holds source version {table.source_version or 'unknown'}, read at "
                f"{table.source_read_at or 'unknown'} (RPO {rpo}); baseline {table.baseline_uri}"
            )
        )
    switch = report.switch
    out.print(
        escape(
            f"switch: {len(switch.triggers)} triggers stopped, {len(switch.stopped_runs)} runs "
            f"stopped, {len(switch.awaited_runs)} awaited, {switch.released_claims} claims "
            "released"
        )
    )
    for note in switch.notes:
        out.print(escape(f"    {note}"))


@dataclass
class Prepared:
    """What both commands start from: the config, its selected tables, the work area, the
    clients (a side in another account reached through its role) and the switch."""

    config: ReplicationConfig
    replications: list
    home: Path
    work: str
    aws: AwsClients
    state: Any
    switch: ReplicationSwitch


def prepare(
    config_path: Path,
    tables: Sequence[str],
    home: Path,
    state_table: str | None,
    work_uri: str | None,
    environment: str | None,
) -> Prepared:
    from ferry.commands.replicate import open_state

    config = load_selected(config_path, tables)
    replications = selected_replications(config, tables)
    home = home.resolve()
    aws = AwsClients()
    # A side in another account: its buckets are listed (the baseline, the changes, the
    # restore) with the role its catalog section names, as the steps reach them.
    reach_sides(config, aws)
    state = open_state(home, state_table, aws)
    switch = switch_for(environment, home, state_table, aws, state)
    if environment:
        # The deployed failover keeps the baselines in the stack's work bucket: failback
        # finds them there, and nowhere else.
        stack_work = switch.work_uri()
        if work_uri and work_uri.rstrip("/") != stack_work:
            raise UsageError(
                f"--work-uri {work_uri}: with --environment {environment} the work area is "
                f"the stack's, {stack_work} (the baselines are kept there)"
            )
        work = stack_work
    else:
        work = work_uri or fs.local_uri(home / "work")
    return Prepared(config, replications, home, work, aws, state, switch)
