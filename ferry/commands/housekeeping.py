"""``ferry housekeeping``: delete superseded snapshots past their grace period, and say so.

It runs the housekeeping state machine's own definition
(``ferry/statemachine/housekeeping.asl.json``) with the in-process driver: the same step
(``ferry.states.housekeeping``) the pipeline's Lambda runs, with its retry policy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from ferry.commands import EXIT_OK, check_regions, check_work_location, load_selected
from ferry.core.errors import ConfigError, FerryError, describe_error
from ferry.storage import fs
from ferry.storage.aws import AwsClients


def run_housekeeping(
    config_path: Path,
    tables: Sequence[str] = (),
    *,
    dry_run: bool = False,
    vacuum: bool = False,
    delete_orphans: bool = False,
    as_json: bool = False,
    work_uri: str | None = None,
    home: Path = Path(".ferry"),
    state_table: str | None = None,
) -> int:
    """Housekeeping of the config's replica tables, here; the exit code.

    The ledger is the one ``ferry replicate`` keeps: ``<home>/state.sqlite3``, or the
    DynamoDB table ``state_table`` (the pipeline's).
    """
    from ferry import statemachine
    from ferry.commands.in_process import InProcessDriver
    from ferry.commands.replicate import open_state
    from ferry.states.context import StateContext

    # Every check first: nothing is created before all of them have passed.
    config = load_selected(config_path, tables, replicates=False)
    home = home.resolve()
    aws = AwsClients()
    check_regions(config, config_path, aws)
    work = work_uri or fs.local_uri(home / "work")
    state = open_state(home, state_table, aws)
    check_work_location(work, aws)
    context = StateContext(work, aws, state=state)
    driver = InProcessDriver(context, None, definition_path=statemachine.HOUSEKEEPING_PATH)
    execution = driver.run(
        {
            "configUri": str(config_path.resolve()),
            "tables": list(tables),
            "dryRun": dry_run,
            "vacuum": vacuum or delete_orphans,
            "deleteOrphans": delete_orphans,
        }
    )
    if execution.status != "SUCCEEDED":
        name, line = describe_error({"Error": execution.error, "Cause": execution.cause})
        if name == ConfigError.__name__:
            raise ConfigError(line)
        raise FerryError(f"housekeeping failed: {name}: {line}")
    result = execution.output["housekeeping"]
    report = json.loads(fs.read_bytes(result["reportUri"]))
    report["reportUri"] = result["reportUri"]
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        console = Console(highlight=False, soft_wrap=True, emoji=False)
        if config.housekeeping_only:
            # Circus Train's housekeeping-only config: housekeeping deletes only below the
            # table-locations of a config's replications, and this one has none.
            console.print(
                f"nothing to housekeep: {escape(str(config_path))} has no table-replications; "
                "Ferry housekeeps each replica table with the config that replicates it"
            )
        print_report(console, report)
    return EXIT_OK


_MARKS = {
    "deleted": "[green]✓ deleted     [/green]",
    "would delete": "[cyan]• would delete[/cyan]",
    "kept": "= kept        ",
    "found": "[yellow]? unknown     [/yellow]",
    "ledgered": "[cyan]→ ledgered    [/cyan]",
    "would ledger": "[cyan]• would ledger[/cyan]",
}


def print_report(console: Console, report: dict[str, Any]) -> None:
    """What housekeeping did (or would do), table by table, for people (everything from
    the report escaped: a ``[/…]`` in a path is text, never rich markup)."""
    if report["dryRun"]:
        console.print("dry run: nothing was deleted")
    totals = {"deleted": 0, "kept": 0, "orphans": 0, "orphansLedgered": 0}
    for table in report["tables"]:
        head = escape(f"{table['replicaTable']}")
        if table["skipped"]:
            console.print(f"{head}: skipped: {escape(str(table['skipped']))}")
            continue
        console.print(
            f"{head} ({escape(str(table['location']))}): grace period {table['gracePeriod']}, "
            f"orphaned-data-strategy {table['strategy']}"
        )
        for outcome in table["ledger"] + table["orphanFolders"]:
            path = _below(outcome["path"], table["location"])
            console.print(
                f"  {_MARKS[outcome['action']]} {escape(path)}  ({escape(outcome['reason'])})"
            )
        if not table["ledger"] and not table["orphanFolders"]:
            console.print(
                "  nothing in the ledger" + (" and no unknown folder" if report["vacuum"] else "")
            )
        for key in totals:
            totals[key] += table[key]
    dry = report["dryRun"]
    line = (
        f"{'would delete' if dry else 'deleted'} {_count(totals['deleted'], 'superseded location')}"
        f", {'would keep' if dry else 'kept'} {totals['kept']}"
    )
    if report["vacuum"]:
        line += f"; vacuum: {_count(totals['orphans'], 'unknown folder')}"
        if report["deleteOrphans"]:
            line += (
                f", {totals['orphansLedgered']} {'would be ' if dry else ''}handed to the "
                "ledger (deleted once a grace period has passed)"
            )
        elif totals["orphans"]:
            line += " (--delete-orphans deletes them once a grace period has passed)"
    console.print(line)
    console.print(f"report: {escape(report['reportUri'])}")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _below(path: str, location: str | None) -> str:
    """A path as people read it under its table's heading: relative to the table location."""
    relative = fs.relative_path(path, location) if location else None
    return f"…/{relative}" if relative else path
