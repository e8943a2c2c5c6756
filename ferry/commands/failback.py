"""``ferry failback``: bring DR's changes home and restore the original direction."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ferry.commands import EXIT_OK
from ferry.commands.failover import open_replica, prepare
from ferry.failover import Prefer


def run_failback(
    config_path: Path,
    tables: Sequence[str] = (),
    *,
    prefer: Prefer | None = None,
    dry_run: bool = False,
    home: Path = Path(".ferry"),
    state_table: str | None = None,
    work_uri: str | None = None,
    environment: str | None = None,
    as_json: bool = False,
) -> int:
    """Fail the config's promoted replicas back (``ferry.failover.config_failback``)."""
    from ferry.commands.replicate import _spark_runner
    from ferry.failover.config_failback import fail_back, reverse_ledger_forgetter
    from ferry.lifecycle import replica_state

    prepared = prepare(config_path, tables, home, state_table, work_uri, environment)
    config, replications, work, aws, state, switch = (
        prepared.config, prepared.replications, prepared.work, prepared.aws, prepared.state,
        prepared.switch,
    )  # fmt: skip
    home = prepared.home

    def run_reverse(config_uri: str, names: Sequence[str], adopt: frozenset[str]) -> list:
        from ferry.commands.in_process import InProcessDriver
        from ferry.states.context import StateContext

        collected = _Outcomes()
        context = StateContext(work, aws, state=state, adopt=adopt)
        driver = InProcessDriver(context, _spark_runner(config, aws, home), observer=collected)
        driver.run({"configUri": config_uri, "tables": list(names)})
        return collected.outcomes

    if environment:
        report = _through_stack(switch, config, replications, prefer, dry_run, as_json)
        return _print(report, dry_run, as_json)
    with (
        open_replica(config, aws, replications) as replica,
        open_replica(config, aws, replications, side="source") as source,
    ):
        report = fail_back(
            config,
            config_path,
            replications,
            source,
            replica,
            switch,
            work,
            lambda r: replica_state.replica_of(config.replica_catalog, r, aws.region),
            run_reverse,
            prefer=prefer,
            dry_run=dry_run,
            forget_reverse=reverse_ledger_forgetter(state, config, aws.region),
        )
    return _print(report, dry_run, as_json)


def _through_stack(switch, config, replications, prefer, dry_run: bool, as_json: bool):
    """The failback by the deployed Failback function; its reverse run followed here."""
    from ferry.core.errors import describe_error
    from ferry.failover import deployed_failback
    from ferry.statemachine.executions import follow

    def follow_run(arn: str) -> tuple[str, str]:
        sfn = switch.client("stepfunctions", arn.split(":")[3])
        if not as_json:
            print(f"reverse run {arn.rsplit(':', 1)[-1]} started")
        outcome = follow(sfn, arn, on_state=(lambda s: None) if as_json else _entered)
        error, cause = describe_error({"Error": outcome.error, "Cause": outcome.cause})
        first = cause.splitlines()[0] if cause else ""
        return outcome.status, f"{error}: {first}" if error else ""

    names = [r.source_table.qualified_name for r in replications]
    return deployed_failback.fail_back(
        switch, config, names, follow_run, prefer=prefer, dry_run=dry_run
    )


def _entered(state: str) -> None:
    print(f"  → {state}")


def _print(report, dry_run: bool, as_json: bool) -> int:
    """What failback did (or would do), for people or as JSON."""
    if as_json:
        print(
            json.dumps(
                {
                    "dryRun": dry_run,
                    "reverseConfig": report.reverse_config,
                    "reverseText": report.reverse_text,
                    "tables": [t.to_dict() for t in report.tables],
                    "switch": report.switch.__dict__,
                },
                indent=2,
                default=list,
            )
        )
        return EXIT_OK
    out = Console(highlight=False, soft_wrap=True, emoji=False)
    for table in report.tables:
        changes = table.changes
        head = f"{table.replica_table} → {table.source_table}"
        if table.status == "ALREADY_FAILED_BACK":
            out.print(escape(f"= {head}  already failed back"))
            continue
        verb = "would bring" if dry_run else "brought"
        both = len(changes.get("onBoth", []))
        if "snapshotsHome" in changes:  # an Iceberg table: its snapshots, ids kept
            out.print(
                escape(
                    f"{'•' if dry_run else '✓'} {head}  {verb} "
                    f"{len(changes['snapshotsHome'])} snapshots home (ids kept: "
                    f"{', '.join(map(str, changes['snapshotsHome'])) or 'none'}); "
                    f"{changes['filesCopied']} files copied"
                )
            )
            continue
        out.print(
            escape(
                f"{'•' if dry_run else '✓'} {head}  {verb} {table.partitions_home} partitions "
                f"home; changed in DR {len(changes.get('changedInDr', []))}, at the source "
                f"{len(changes.get('changedAtSource', []))}, on both {both}"
            )
        )
        if changes.get("droppedInDr"):
            out.print(
                escape(
                    f"    dropped in DR: {', '.join(changes['droppedInDr'])} "
                    f"({table.partitions_dropped_at_source} dropped at the source)"
                )
            )
    if report.reverse_config:
        where = "would be written to" if dry_run else "written to"
        out.print(escape(f"reverse config {where} {report.reverse_config}"))
        if dry_run and report.reverse_text:
            out.print(escape(report.reverse_text))
    if not dry_run:
        out.print(escape(f"triggers: {len(report.switch.triggers)} started again"))
        for note in report.switch.notes:
            out.print(escape(f"    {note}"))
    return EXIT_OK


class _Outcomes:
    """Collects each table's outcome of the reverse run."""

    def __init__(self) -> None:
        self.outcomes: list = []

    def state_entered(self, table, state) -> None:
        pass

    def copy_progress(self, table, payload):
        return None

    def copy_finished(self, table) -> None:
        pass

    def table_finished(self, table, result, states, seconds) -> None:
        from ferry.commands.table_outcomes import outcome_of

        self.outcomes.append(outcome_of(result, states, seconds, "FULL"))
