"""The ``ferry`` command line.

Exit codes: 0 every table succeeded; 1 any table failed; 2 bad config or usage (nothing
was run). Mistakes get one line on stderr, never a stack trace.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from botocore.exceptions import BotoCoreError, ClientError
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
from ferry.errors import ConfigError, FerryError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

logger = logging.getLogger("ferry")


class UsageError(FerryError):
    """The command line is wrong; nothing was run."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line (and exit code 2), like every other mistake."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


def port(text: str) -> int:
    """An argparse type: a TCP port number, 1-65535 (int() alone would accept 70000)."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port number (1-65535)")
    return number


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="ferry: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return args.handler(args)
    except (ConfigError, UsageError) as error:
        print(f"ferry: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except FerryError as error:
        print(f"ferry: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except (BotoCoreError, ClientError) as error:  # credentials, endpoint, permissions
        print(f"ferry: error: AWS: {error}", file=sys.stderr)
        return EXIT_FAILED
    except RuntimeError as error:  # the local runtime's start-up problems
        print(f"ferry: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("ferry: interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ferry", description="Replicate Hive tables, data and metadata, between catalogs."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    replicate = commands.add_parser("replicate", help="replicate the tables of a config file")
    replicate.add_argument("config", type=Path, help="the replication config (YAML)")
    replicate.add_argument(
        "--table",
        action="append",
        default=[],
        metavar="DB.TABLE",
        help="replicate only this source table (repeatable)",
    )
    replicate.add_argument("--dry-run", action="store_true", help="plan and report; write nothing")
    replicate.add_argument("--json", action="store_true", help="print the outcome as JSON")
    replicate.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    replicate.set_defaults(handler=_replicate)

    execute = commands.add_parser(
        "execute", help="replicate a config through the state machine (local by default)"
    )
    execute.add_argument("config", type=Path, help="the replication config (YAML)")
    execute.add_argument("--table", action="append", default=[], metavar="DB.TABLE")
    execute.add_argument(
        "--state-machine-arn", help="run on this state machine (default: the local runtime's)"
    )
    execute.add_argument(
        "--work-uri", help="s3://bucket/prefix for the config and plans (with --state-machine-arn)"
    )
    execute.add_argument("--wait", action="store_true", help="follow the execution to its end")
    execute.add_argument("--json", action="store_true", help="print the outcome as JSON")
    execute.add_argument("--home", type=Path, default=Path(".ferry"), help="local runtime state")
    execute.set_defaults(handler=_execute)

    local = commands.add_parser("local", help="the local runtime: metastores and AWS emulator")
    local.add_argument("action", choices=["up", "down", "status", "trigger"])
    local.add_argument("config", type=Path, nargs="?", help="with trigger: the config to run")
    local.add_argument("--bucket", help="with trigger: the source bucket to watch")
    local.add_argument("--prefix", default="", help="with trigger: only keys with this prefix")
    local.add_argument("--suffix", default="_SUCCESS", help="with trigger: marker suffix")
    local.add_argument(
        "--home", type=Path, default=Path(".ferry"), help="state folder (default .ferry)"
    )
    local.add_argument("--source-port", type=port, default=9083)
    local.add_argument("--replica-port", type=port, default=9084)
    local.add_argument("--aws-port", type=port, default=5000)
    local.add_argument("--json", action="store_true", help="print the settings as JSON")
    local.set_defaults(handler=_local)

    demo = commands.add_parser("demo", help="replicate sample tables on the local runtime")
    demo.add_argument(
        "--home", type=Path, default=Path(".ferry"), help="state folder (default .ferry)"
    )
    demo.add_argument("--source-port", type=port, default=9083)
    demo.add_argument("--replica-port", type=port, default=9084)
    demo.add_argument("--aws-port", type=port, default=5000)
    demo.set_defaults(handler=_demo)
    return parser


# -- replicate ------------------------------------------------------------------------------


def _replicate(args: argparse.Namespace) -> int:
    return run_replicate(args.config, args.table, dry_run=args.dry_run, as_json=args.json)


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


# -- local ----------------------------------------------------------------------------------


def _execute(args: argparse.Namespace) -> int:
    from ferry.config import load_config
    from ferry.execute import follow, start
    from ferry.local import deploy

    config = load_config(args.config)  # a bad config stops here, before anything starts
    try:
        config.select(list(args.table))
    except ConfigError as error:
        raise UsageError(f"--table {error}") from None
    if args.state_machine_arn:
        if not args.work_uri:
            raise UsageError("--state-machine-arn needs --work-uri (the stack's work bucket)")
        state_machine_arn, work_uri, aws = args.state_machine_arn, args.work_uri, AwsClients()
    else:
        state_machine_arn, work_uri, aws = _local_pipeline(args.home.resolve())
    config_uri = deploy.upload_config(aws.client("s3"), work_uri, args.config)
    sfn = aws.client("stepfunctions", aws.region_of_arn(state_machine_arn))
    name = deploy.execution_name()
    execution_input = {"configUri": config_uri, **({"tables": args.table} if args.table else {})}
    execution_arn = start(sfn, state_machine_arn, name, execution_input)
    if not args.wait:
        print(json.dumps({"executionArn": execution_arn}) if args.json else execution_arn)
        return EXIT_OK
    if not args.json:
        print(f"execution {name} started")
    outcome = follow(
        sfn,
        execution_arn,
        on_state=(lambda s: None) if args.json else (lambda s: print(f"  → {s}")),
    )
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2))
    elif outcome.status == "SUCCEEDED":
        print(f"SUCCEEDED in {outcome.seconds:.1f} s")
    else:
        for state, error, cause in outcome.failed_states:
            print(f"  ✗ {state} failed: {error}: {cause}")
        print(f"{outcome.status} in {outcome.seconds:.1f} s: {outcome.error}: {outcome.cause}")
    return EXIT_OK if outcome.status == "SUCCEEDED" else EXIT_FAILED


def _local_pipeline(home: Path) -> tuple[str, str, AwsClients]:
    """The local runtime's state machine, work location and clients, or a clear error."""
    import boto3

    from ferry.local import deploy, emulator, processes

    process = processes.read_process(home, "aws")
    pipeline = deploy.Pipeline.load(home)
    if process is None or not process.is_running() or pipeline is None:
        raise FerryError(
            f"the local runtime is not running in {home}; start it with `ferry local up`"
        )
    session = boto3.session.Session(
        aws_access_key_id=emulator.EMULATOR_ENVIRONMENT["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=emulator.EMULATOR_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"],
        region_name=emulator.EMULATOR_ENVIRONMENT["AWS_DEFAULT_REGION"],
    )
    aws = AwsClients(emulator.endpoint_url(process.port), session=session)
    return pipeline.state_machine_arn, pipeline.work_uri, aws


def _local(args: argparse.Namespace) -> int:
    from ferry.local import deploy, runtime

    home = args.home.resolve()
    if args.action == "trigger":
        return _local_trigger(args, home)
    if args.action == "down":
        stopped = runtime.down(home)
        print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
        return EXIT_OK
    if args.action == "up":
        ports = {
            runtime.SOURCE: args.source_port,
            runtime.REPLICA: args.replica_port,
            runtime.AWS: args.aws_port,
        }
        started = time.monotonic()
        services = runtime.up(home, ports)
        if not args.json:
            print(f"local runtime up in {time.monotonic() - started:.1f} s (state in {home})")
    else:
        services = runtime.status(home)
    settings = runtime.environment(services)
    if args.json:
        print(
            json.dumps(
                {
                    "services": [s.__dict__ | {"url": s.url} for s in services],
                    "environment": settings,
                },
                indent=2,
            )
        )
        return EXIT_OK
    labels = {
        runtime.SOURCE: "source metastore",
        runtime.REPLICA: "replica metastore",
        runtime.AWS: "AWS emulator",
    }
    for service in services:
        state = f"{service.url}  (pid {service.pid})" if service.running else "not running"
        print(f"  {labels[service.name]:<18} {state}")
    pipeline = deploy.Pipeline.load(home)
    if pipeline is not None and all(s.running for s in services):
        print(f"  {'state machine':<18} {pipeline.state_machine_arn}")
        print(f"  {'work location':<18} {pipeline.work_uri}")
    if settings:
        print("\nsettings for your shell:")
        for key, value in settings.items():
            print(f"  export {key}={value}")
    return EXIT_OK if args.action == "up" or all(s.running for s in services) else EXIT_FAILED


def _local_trigger(args: argparse.Namespace, home: Path) -> int:
    from ferry.config import load_config
    from ferry.local import deploy

    if args.config is None or not args.bucket:
        raise UsageError("local trigger needs CONFIG and --bucket")
    load_config(args.config)
    state_machine_arn, work_uri, aws = _local_pipeline(home)
    config_uri = deploy.upload_config(aws.client("s3"), work_uri, args.config)
    rule = deploy.add_s3_trigger(
        aws, state_machine_arn, config_uri, args.bucket, args.prefix, args.suffix
    )
    print(
        f"an object s3://{args.bucket}/{args.prefix}…{args.suffix} now starts a replication "
        f"of {args.config} (rule {rule})"
    )
    return EXIT_OK


# -- demo -----------------------------------------------------------------------------------


def _demo(args: argparse.Namespace) -> int:
    from ferry import demo

    return demo.run(
        args.home.resolve(),
        {"source": args.source_port, "replica": args.replica_port, "aws": args.aws_port},
    )


if __name__ == "__main__":
    sys.exit(main())
