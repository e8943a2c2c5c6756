"""``ferry resume``'s arguments (``ferry.commands.cli`` adds them) and its handler: the arguments
turned into one call of the command, imported only when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ferry.commands.argument_types import dynamodb_table, home_folder, lease, work_location


def add_parser(commands: argparse._SubParsersAction) -> None:
    """``ferry resume``'s arguments."""
    resume = commands.add_parser(
        "resume",
        help="continue a table's failed attempt (an event id) without re-copying its files",
    )
    resume.add_argument("event", help="the failed attempt's event id")
    resume.add_argument(
        "config", type=Path, nargs="?", help="the replication config (default: the event's)"
    )
    resume.add_argument("--json", action="store_true", help="print the outcome as JSON")
    resume.add_argument(
        "--work-uri", type=work_location, help="the work location (default: file://.ferry/work)"
    )
    resume.add_argument(
        "--home", type=home_folder, default=".ferry", help="local state (default .ferry)"
    )
    resume.add_argument(
        "--state-table",
        type=dynamodb_table,
        metavar="NAME",
        help="DynamoDB table of replica locks and the snapshot ledger",
    )
    resume.add_argument(
        "--lock-lease", type=lease, metavar="DURATION", help="as for replicate (default PT1H)"
    )
    resume.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    resume.set_defaults(handler=_resume)


def _resume(args: argparse.Namespace) -> int:
    from ferry.commands.resume import run_resume

    return run_resume(
        args.event,
        args.config,
        as_json=args.json,
        work_uri=args.work_uri,
        home=args.home,
        state_table=args.state_table,
        lock_lease=args.lock_lease,
    )
