"""``ferry plan``: what a replication would copy and why, changing and locking nothing.

For each table: the partitions that are new, whose data changed, whose metadata changed, or
that were deleted at the source (with ``PROPAGATE_DELETES``), the files and bytes that would
be copied, and the copier that would copy them — exactly what Plan would decide. For an
Iceberg table: the source snapshots the replica lacks (their ids), the files and bytes to
copy, and how many metadata files a run would write (of them, the manifests the copier
rewrites). With a ``permissions`` section: the grants and LF-tags the replica would be given
or lose, and the source principals and tags no mapping covers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from ferry.commands import EXIT_FAILED, EXIT_OK, check_regions, load_selected
from ferry.commands.replicate import human_bytes, plural
from ferry.core.errors import FerryError
from ferry.planning.grants_preview import preview_lines
from ferry.storage.aws import AwsClients

#: At most this many partitions are listed per kind of change (all of them with --json).
SHOWN = 20


def run_plan(config_path: Path, tables: Sequence[str] = (), as_json: bool = False) -> int:
    from ferry.states import plan as plan_state
    from ferry.states.context import StateContext

    config = load_selected(config_path, tables)
    aws = AwsClients()
    check_regions(config, config_path, aws)
    # Plan writes nothing: no work location is used.
    context = StateContext("file:///nowhere", aws)
    # The tables of the run, as a replication resolves them: a table-name-pattern's from the
    # source catalog, each one a replication of its own (two writing one replica: exit 2).
    selected = context.select_tables(config, list(tables), str(config_path))
    # Data is printed as it is: no markup (escaped), no :emoji: codes, no highlighting.
    out = Console(highlight=False, soft_wrap=True, emoji=False)
    report: list[dict[str, Any]] = []
    for replication in selected:
        entry: dict[str, Any] = {
            "sourceTable": replication.source_table.qualified_name,
            "replicaTable": replication.replica_qualified_name,
            "mode": replication.replication_mode.value,
        }
        try:
            entry.update(
                plan_state.preview(
                    context,
                    str(config_path.resolve()),
                    entry["sourceTable"],
                    entry["replicaTable"],
                    probe=False,
                )
            )
        except FerryError as error:
            entry.update({"error": type(error).__name__, "cause": str(error)})
        report.append(entry)
        if not as_json:
            _print(out, entry)
    failed = sum(1 for entry in report if "error" in entry)
    if as_json:
        print(json.dumps({"tables": report, "failed": failed}, indent=2))
    return EXIT_FAILED if failed else EXIT_OK


def _print(console: Console, entry: dict[str, Any]) -> None:
    """One table's plan, for people (what came from data or an error escaped)."""
    head = escape(f"{entry['sourceTable']} → {entry['replicaTable']}  [{entry['mode']}]")
    if "error" in entry:
        error = f"{entry['error']}: {entry['cause']}"
        console.print(f"[red]✗[/red] {head}  {escape(error)}")
        return
    if entry["dropTable"]:
        console.print(
            f"[yellow]-[/yellow] {head}  the source table is gone: would drop the replica"
        )
        return
    if entry["unchanged"]:
        console.print(f"[green]=[/green] {head}  unchanged: nothing to copy or alter")
        _print_permissions(console, entry)
        return
    copy = (
        f"would copy {plural(entry['files'], 'file')}, {human_bytes(entry['bytes'])} "
        f"({entry['copier']} copier)"
        if entry["files"]
        else "would copy nothing (metadata only)"
    )
    console.print(f"[cyan]•[/cyan] {head}  {copy}")
    if entry["overwrite"]:
        console.print("    the replica table would be dropped and created anew (FULL_OVERWRITE)")
    if entry["kind"] == "partitioned table":
        counts = _counts(entry["changes"])
        summary = ", ".join(f"{count} {change}" for change, count in counts.items())
        console.print(
            f"    partitions: {summary or 'none changed'}; {entry['partitionsUnchanged']} unchanged"
        )
        for change in counts:
            values = [c for c in entry["changes"] if c["change"] == change]
            for item in values[:SHOWN]:
                size = f"  {plural(item['files'], 'file')}, {human_bytes(item['bytes'])}"
                console.print(
                    f"      {change:<17} {escape(item['name'])}" + (size if item["files"] else "")
                )
            if len(values) > SHOWN:
                console.print(f"      … and {len(values) - SHOWN} more {change}")
    elif entry["iceberg"] is not None:
        iceberg = entry["iceberg"]
        ids = iceberg["snapshotIds"]
        shown = ", ".join(str(i) for i in ids[:SHOWN]) + (
            f", … and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
        )
        lacks = (
            f"the replica lacks {plural(len(ids), 'snapshot')} ({shown})"
            if ids
            else "the replica has every snapshot (metadata changed)"
        )
        rewrites = iceberg["manifestRewrites"]
        console.print(
            f"    Iceberg: {lacks}; would write {plural(iceberg['metadataFiles'], 'metadata file')}"
            + (f" ({plural(rewrites, 'manifest')} rewritten by the copier)" if rewrites else "")
        )
    elif entry["kind"] == "table" and entry["files"]:
        console.print("    the table's data changed")
    if entry["partitionFilter"]:
        console.print(f"    partition filter: {escape(entry['partitionFilter'])}")
    if entry.get("statistics"):
        console.print(f"    {statistics_line(entry['statistics'])}")
    for notice in entry.get("notices") or ():
        console.print(f"    [yellow]![/yellow] {escape(notice)}")
    _print_permissions(console, entry)


def _print_permissions(console: Console, entry: dict[str, Any]) -> None:
    """The grants the replica would get or lose (what no mapping covers is a notice)."""
    for line in preview_lines(entry.get("permissions"), unmapped=False):
        console.print(f"    permissions: {escape(line)}")


def _counts(changes: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for change in changes:
        counts[change["change"]] = counts.get(change["change"], 0) + 1
    return counts


def statistics_line(counts: dict[str, int]) -> str:
    """What a plan writes of column statistics and keys, in one line."""
    parts = []
    if counts["tableColumns"]:
        parts.append(f"column statistics of the table ({plural(counts['tableColumns'], 'column')})")
    if counts["partitions"]:
        parts.append(f"column statistics of {plural(counts['partitions'], 'partition')}")
    if counts["keysToAdd"]:
        parts.append(f"{plural(counts['keysToAdd'], 'key')} to add")
    if counts["keysToDrop"]:
        parts.append(f"{plural(counts['keysToDrop'], 'key')} to drop")
    return "would write " + ", ".join(parts)
