"""``ferry replicate``: replicate the tables of a config in this process, and say how it went."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from ferry.aws import AwsClients
from ferry.commands import EXIT_FAILED, EXIT_OK, UsageError
from ferry.errors import ConfigError


def run_replicate(
    config_path: Path, tables: Sequence[str] = (), dry_run: bool = False, as_json: bool = False
) -> int:
    from ferry.catalog.factory import open_catalog
    from ferry.config import load_config
    from ferry.notify import notifier_for
    from ferry.replication import Replicator

    config = load_config(config_path)
    try:
        selected = config.select(list(tables))
    except ConfigError as error:
        raise UsageError(f"--table {error}") from None
    aws = AwsClients()
    notifier = notifier_for(config.sns_event_listener, aws)
    out = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False)
    observer = _ProgressObserver(err) if err.is_terminal and not as_json else None
    outcomes = []
    with (
        open_catalog(config.source_catalog, aws) as source,
        open_catalog(config.replica_catalog, aws) as replica,
    ):
        replicator = Replicator(config, source, replica, notifier, observer=observer)
        for replication in selected:
            outcome = replicator.replicate_table(replication, dry_run=dry_run)
            outcomes.append(outcome)
            if not as_json:
                _print_outcome(out, outcome)
    failed = sum(1 for o in outcomes if not o.ok)
    if as_json:
        print(
            json.dumps(
                {
                    "dryRun": dry_run,
                    "succeeded": len(outcomes) - failed,
                    "failed": failed,
                    "tables": [o.to_dict() for o in outcomes],
                },
                indent=2,
            )
        )
    else:
        _print_summary(out, outcomes, dry_run)
    return EXIT_FAILED if failed else EXIT_OK


class _ProgressObserver:
    """A byte progress bar per table copy, on a terminal only."""

    def __init__(self, console: Console):
        self.console = console
        self.progress: Progress | None = None

    def copy_started(self, plan):
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(binary_units=True),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self.progress.start()
        task = self.progress.add_task(
            f"copying {plan.source_table.qualified_name} ({len(plan.manifest.tasks)} files)",
            total=plan.manifest.total_bytes,
        )
        progress = self.progress
        return lambda n: progress.advance(task, n)

    def copy_finished(self, plan):
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def human_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"


def _print_outcome(console: Console, outcome) -> None:
    from ferry.replication import Status

    head = f"{outcome.source_table} → {outcome.replica_table}  [{outcome.mode}]"
    seconds = (outcome.finished - outcome.started).total_seconds()
    if outcome.status is Status.FAILED:
        console.print(f"[red]✗[/red] {head}  failed: {outcome.error_type}: {outcome.error}")
        return
    if outcome.kind == "view":
        counts = "view, metadata only"
    elif outcome.kind == "partitioned table":
        counts = (
            f"{plural(outcome.partitions, 'partition')} ({outcome.partitions_added} new, "
            f"{outcome.partitions_altered} updated), {plural(outcome.files, 'file')}, "
            f"{human_bytes(outcome.bytes)}"
        )
    else:
        counts = f"unpartitioned, {plural(outcome.files, 'file')}, {human_bytes(outcome.bytes)}"
    where = outcome.replica_location
    if outcome.status is Status.PLANNED:
        console.print(f"[cyan]•[/cyan] {head}  would replicate {counts}")
        if where:
            console.print(f"    would point at {where}")
        if outcome.partition_filter:
            console.print(f"    partition filter: {outcome.partition_filter}")
        return
    console.print(f"[green]✓[/green] {head}  {counts} in {seconds:.1f} s")
    console.print(
        f"    event {outcome.event_id}" + (f", replica location {where}" if where else "")
    )


def _print_summary(console: Console, outcomes, dry_run: bool) -> None:
    failed = sum(1 for o in outcomes if not o.ok)
    done = len(outcomes) - failed
    verb = "planned" if dry_run else "replicated"
    partitions = plural(sum(o.partitions for o in outcomes), "partition")
    files = plural(sum(o.files for o in outcomes), "file")
    size = human_bytes(sum(o.bytes for o in outcomes))
    console.print(
        f"{plural(len(outcomes), 'table')}: {done} {verb}, {failed} failed; "
        f"{partitions}, {files}, {size} {'to copy' if dry_run else 'copied'}"
    )
