"""``ferry replicate``: replicate the tables of a config in this process, and say how it went.

The replication runs the state machine's own definition with the in-process driver
(``ferry.commands.in_process``): the same steps, in the same order, choosing the same copier.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from ferry.commands import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    check_regions,
    check_work_location,
    load_selected,
)
from ferry.core.errors import ConfigError, FerryError, describe_error
from ferry.storage import fs
from ferry.storage.aws import AwsClients

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from ferry.config import ReplicationConfig
    from ferry.states.context import StateContext

logger = logging.getLogger("ferry")


def run_replicate(
    config_path: Path,
    tables: Sequence[str] = (),
    dry_run: bool = False,
    as_json: bool = False,
    work_uri: str | None = None,
    home: Path = Path(".ferry"),
    state_table: str | None = None,
    lock_lease: timedelta | None = None,
) -> int:
    """Replicate the config's tables in this process: the state machine's steps, in order.

    Replica locks and the snapshot ledger live in the DynamoDB table ``state_table``, else
    in ``<home>/state.sqlite3`` (``ferry.lifecycle.replica_state``).
    """
    from ferry.catalog.held_catalogs import HeldCatalogs
    from ferry.commands.in_process import InProcessDriver
    from ferry.states.context import StateContext

    # Every check first, each one line: nothing is created (no home, no work folder, no
    # state file) before all of them have passed.
    config = load_selected(config_path, tables)
    home = home.resolve()
    work = work_uri or fs.local_uri(home / "work")
    if config.emr_serverless is not None and fs.scheme_of(work) not in fs.S3_SCHEMES:
        raise UsageError(
            "the config runs Spark on EMR Serverless, which reads the manifest from S3: "
            "give --work-uri s3://bucket/prefix"
        )
    aws = AwsClients()
    check_regions(config, config_path, aws)
    state = open_state(home, state_table, aws, lock_lease)  # checked even in a dry run
    if not dry_run:
        check_work_location(work, aws)
    out, err = (None, None) if as_json else _consoles()
    # Each catalog is opened once and its connections held for every state of the run,
    # closed when the run ends (``ferry.catalog.held_catalogs``).
    with HeldCatalogs() as catalogs:
        context = StateContext(work, aws, state=None if dry_run else state, catalogs=catalogs)
        if dry_run:
            outcomes = _previews(context, config, config_path, tables, None if as_json else out)
        else:
            observer = _Observer(
                out, err, _mode_of(config), bars=err is not None and err.is_terminal
            )
            driver = InProcessDriver(context, _spark_runner(config, aws, home), observer=observer)
            execution = driver.run(
                {"configUri": str(config_path.resolve()), "tables": list(tables)}
            )
            outcomes = observer.outcomes
    if not dry_run and execution.status != "SUCCEEDED" and not outcomes:
        # Resolve tables failed: its error, as one line (a config mistake exits with 2).
        name, message = describe_error({"Error": execution.error, "Cause": execution.cause})
        if name == ConfigError.__name__:
            raise ConfigError(message)
        raise FerryError(f"{name}: {message}")
    failed = sum(1 for o in outcomes if not o.ok)
    if as_json:
        print(
            json.dumps(
                {
                    "dryRun": dry_run,
                    "workUri": work,
                    "succeeded": len(outcomes) - failed,
                    "failed": failed,
                    "tables": [o.to_dict() for o in outcomes],
                },
                indent=2,
            )
        )
    elif out is not None:
        _print_summary(out, outcomes, dry_run)
    return EXIT_FAILED if failed else EXIT_OK


def _consoles() -> tuple[Console, Console]:
    """Where a run is told to people (``--json`` prints without rich)."""
    from rich.console import Console

    # Data is printed as it is: no markup (escaped), no :emoji: codes, no highlighting.
    return (
        Console(highlight=False, soft_wrap=True, emoji=False),
        Console(stderr=True, highlight=False, emoji=False),
    )


def _previews(
    context: StateContext, config: ReplicationConfig, config_path: Path, tables: Sequence[str],
    out: Console | None,
) -> list:  # fmt: skip
    """A dry run: what each selected table's run would do, printed to ``out`` as it comes."""
    from ferry.commands.table_outcomes import preview_outcome
    from ferry.states import plan as plan_state

    config_uri = str(config_path.resolve())
    outcomes = []
    # Resolve tables' own expansion: a pattern's tables are listed from the source catalog.
    for replication in context.select_tables(config, list(tables), str(config_path)):
        name = replication.source_table.qualified_name
        try:
            preview = plan_state.preview(
                context, config_uri, name, replication.replica_qualified_name
            )
        except FerryError as error:
            outcome = _failed_preview(replication, error)
        else:
            outcome = preview_outcome(
                name, replication.replica_qualified_name,
                replication.replication_mode.value, preview,
            )  # fmt: skip
        outcomes.append(outcome)
        if out is not None:
            _print_outcome(out, outcome)
    return outcomes


def _mode_of(config) -> Callable[[str], str | None]:
    """The replication mode of a source table of the run (one a pattern selected, too)."""

    def mode_of(table: str) -> str | None:
        try:
            return config.replication_of(table).replication_mode.value
        except ConfigError:
            return None

    return mode_of


def open_state(
    home: Path, state_table: str | None, aws: AwsClients, lock_lease: timedelta | None = None
):
    """The CLI's state store: DynamoDB when a table is named, else a file under ``home``.

    Checked before it is returned (``StateStore.check``: one line, exit 2, when it cannot be
    used), and nothing is created yet: the file and ``home`` are created on first use. The
    lock's owner is this process: a run killed with SIGKILL does not hold the replica for a
    whole lease (``ferry.lifecycle.replica_state.holder_is_gone``).
    """
    from ferry.lifecycle import replica_state
    from ferry.replicas.ledger import DynamoDbStateStore

    if state_table and not aws.region:
        raise UsageError(
            f"--state-table {state_table}: the AWS SDK has no default region (AWS_REGION, "
            "AWS_DEFAULT_REGION or the profile's region) to find the table in"
        )
    state = replica_state.open_state(
        home=home,
        state_table=state_table,
        dynamodb=aws.client("dynamodb") if state_table else None,
        lease=lock_lease or replica_state.DEFAULT_LEASE,
        owner=replica_state.this_process(),
    )
    if state_table:
        # Asked with short timeouts: a table that does not answer is one line in seconds.
        probe = DynamoDbStateStore(aws.probe_client("dynamodb", aws.region), state_table)
        probe.check(f"--state-table {state_table}")
    else:
        state.store.check()
    return state


def _failed_preview(replication, error: FerryError):
    from ferry.commands.table_outcomes import TableOutcome

    return TableOutcome(
        source_table=replication.source_table.qualified_name,
        replica_table=replication.replica_qualified_name,
        status="FAILED",
        event_id=None,
        mode=replication.replication_mode.value,
        error_type=type(error).__name__,
        error=str(error),
    )


def _spark_runner(config, aws: AwsClients, home: Path):
    from ferry.copying.spark_job import EmrServerlessSpark, LocalSpark

    settings = config.emr_serverless
    if settings is None:
        return LocalSpark(home / "spark")
    return EmrServerlessSpark(
        aws.client("emr-serverless", settings.region),
        settings.application_id,
        settings.execution_role_arn,
        settings.entry_point,
        settings.spark_submit_parameters or "",
    )


class _Observer:
    """Prints each table as it finishes (to ``out``; None: nothing, ``--json``); a byte
    progress bar per copy, on a terminal only."""

    def __init__(
        self,
        out: Console | None,
        err: Console | None,
        mode_of: Callable[[str], str | None],
        bars: bool,
    ):
        self.out, self.err, self.mode_of = out, err, mode_of
        self.bars = bars
        self.progress: Progress | None = None
        self.outcomes: list = []

    def state_entered(self, table: str | None, state: str) -> None:
        logger.info("%s: %s", table or "run", state)

    def copy_progress(self, table: str, payload: dict):
        if not self.bars or self.progress is not None:
            return None
        # Here: only a copy shown on a terminal draws a bar (a run with nothing to copy, or
        # --json, does without the import).
        from rich.markup import escape
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(binary_units=True),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=self.err,
            transient=True,
        )
        self.progress.start()
        task = self.progress.add_task(f"copying {escape(table)}", total=None)
        progress = self.progress
        return lambda n: progress.advance(task, n)

    def copy_finished(self, table: str) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def table_finished(self, table: str, result, states, seconds: float) -> None:
        from ferry.commands.table_outcomes import outcome_of

        outcome = outcome_of(result, states, seconds, self.mode_of(table))
        self.outcomes.append(outcome)
        if self.out is not None:
            _print_outcome(self.out, outcome)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def human_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"


def _print_outcome(console: Console, outcome) -> None:
    """One table's outcome, for people. Everything that came from data or an error is
    escaped: a ``[/…]`` in a path or a message is text, never rich markup."""
    from rich.markup import escape

    for notice in outcome.notices:
        console.print(f"[yellow]![/yellow] {escape(notice)}")
    head = escape(f"{outcome.source_table} → {outcome.replica_table}  [{outcome.mode}]")
    if outcome.status == "FAILED":
        error = f"{outcome.error_type}: {outcome.error}"
        console.print(f"[red]✗[/red] {head}  failed: {escape(error)}")
        # Kept (the replica references it, or it could not be removed): the error says which.
        if outcome.snapshot and outcome.snapshot_removed:
            console.print(f"    snapshot {escape(str(outcome.snapshot))} removed")
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
        shape = "Iceberg table" if outcome.kind == "Iceberg table" else "unpartitioned"
        counts = f"{shape}, {plural(outcome.files, 'file')}, {human_bytes(outcome.bytes)}"
    where = escape(outcome.replica_location) if outcome.replica_location else None
    if outcome.status == "PLANNED":
        console.print(f"[cyan]•[/cyan] {head}  would replicate {counts}{_by(outcome.copier)}")
        if where:
            console.print(f"    would point at {where}")
        if outcome.partition_filter:
            console.print(f"    partition filter: {escape(outcome.partition_filter)}")
        return
    if outcome.status == "UNCHANGED":
        console.print(f"[green]=[/green] {head}  unchanged: nothing to copy or commit")
        return
    console.print(
        f"[green]✓[/green] {head}  {counts} in {outcome.seconds:.1f} s{_by(outcome.copier)}"
    )
    console.print(
        f"    event {escape(str(outcome.event_id))}"
        + (f", replica location {where}" if where else "")
    )
    if outcome.resumed:
        console.print(f"    {escape(resumed_line(outcome))}")


def resumed_line(outcome) -> str:
    """A resumed run, in one line: what its failed attempt had copied, what this run did."""
    return (
        f"resumed event {outcome.event_id}: {plural(outcome.reused_files, 'file')} "
        f"({human_bytes(outcome.reused_bytes)}) already copied and verified; copied "
        f"{plural(outcome.files - outcome.reused_files, 'file')} "
        f"({human_bytes(outcome.bytes - outcome.reused_bytes)})"
    )


def _by(copier: str | None) -> str:
    """Which copier moved the data, for people."""
    names = {"inline": "inline copy", "s3": "S3 server-side copy", "spark": "Spark copy"}
    return f" ({names[copier]})" if copier in names else ""


def _print_summary(console: Console, outcomes, dry_run: bool) -> None:
    failed = sum(1 for o in outcomes if not o.ok)
    done = len(outcomes) - failed
    verb = "planned" if dry_run else "replicated"
    unchanged = sum(1 for o in outcomes if o.status == "UNCHANGED")
    partitions = plural(sum(o.partitions for o in outcomes), "partition")
    files = plural(sum(o.files for o in outcomes), "file")
    size = human_bytes(sum(o.bytes for o in outcomes))
    console.print(
        f"{plural(len(outcomes), 'table')}: {done - unchanged} {verb}, "
        + (f"{unchanged} unchanged, " if unchanged else "")
        + f"{failed} failed; "
        f"{partitions}, {files}, {size} {'to copy' if dry_run else 'copied'}"
    )
