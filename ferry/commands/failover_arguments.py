"""The command lines of ``ferry failover`` and ``ferry failback`` (``ferry.commands.cli`` adds
them)."""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path

from ferry.commands.argument_types import dynamodb_table, home_folder, work_location


def wait_duration(text: str) -> timedelta:
    """An argparse type: how long to wait for running runs, an ISO-8601 duration."""
    from ferry.core.duration import parse_duration

    try:
        length = parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if length < timedelta(0):
        raise argparse.ArgumentTypeError(f"{text!r} is a negative duration")
    return length


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path, help="the replication config (YAML)")
    parser.add_argument(
        "--table", action="append", default=[], metavar="DB.TABLE",
        help="only this source table (repeatable)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.add_argument(
        "--work-uri", type=work_location,
        help="the work location, where baselines are kept (default: file://<home>/work)",
    )  # fmt: skip
    parser.add_argument(
        "--home", type=home_folder, default=Path(".ferry"), help="local state (default .ferry)"
    )
    parser.add_argument(
        "--state-table", type=dynamodb_table, metavar="NAME",
        help="DynamoDB table of replica locks and the snapshot ledger "
        "(default: a local file, <home>/state.sqlite3)",
    )  # fmt: skip
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")


def add_parsers(commands: argparse._SubParsersAction) -> None:
    """``failover`` and ``failback``, their home, work location and state table checked as
    the other commands check them (``ferry.commands.argument_types``)."""
    failover = commands.add_parser(
        "failover", help="promote the replicas of a config: writers may write to them"
    )
    _common(failover)
    failover.add_argument(
        "--cancel-runs", action="store_true", help="stop running replications of the tables"
    )
    failover.add_argument(
        "--wait", type=wait_duration, default=timedelta(0), metavar="DURATION",
        help="wait up to this long for running replications to end (ISO-8601, default PT0S)",
    )  # fmt: skip
    failover.add_argument(
        "--environment", metavar="NAME",
        help="stop the triggers of this deployed environment (default: ferry replicate's own)",
    )  # fmt: skip
    failover.set_defaults(handler=_failover)

    failback = commands.add_parser(
        "failback", help="bring what DR wrote home, then restore the original direction"
    )
    _common(failback)
    failback.add_argument(
        "--prefer", choices=("replica", "source"),
        help="the winner of a table changed on both sides since the failover",
    )  # fmt: skip
    failback.add_argument("--dry-run", action="store_true", help="say what would happen")
    failback.add_argument(
        "--environment", metavar="NAME",
        help="restart the triggers of this deployed environment (default: ferry replicate's own)",
    )  # fmt: skip
    failback.set_defaults(handler=_failback)


def _failover(args: argparse.Namespace) -> int:
    from ferry.commands.failover import run_failover

    return run_failover(
        args.config, args.table, cancel_runs=args.cancel_runs, wait=args.wait,
        home=args.home or Path(".ferry"), state_table=args.state_table,
        work_uri=args.work_uri, environment=args.environment, as_json=args.json,
    )  # fmt: skip


def _failback(args: argparse.Namespace) -> int:
    from ferry.commands.failback import run_failback
    from ferry.failover import Prefer

    return run_failback(
        args.config, args.table, prefer=Prefer(args.prefer) if args.prefer else None,
        dry_run=args.dry_run, home=args.home or Path(".ferry"), state_table=args.state_table,
        work_uri=args.work_uri, environment=args.environment, as_json=args.json,
    )  # fmt: skip
