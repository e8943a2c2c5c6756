"""``ferry replicate``'s arguments (``ferry.commands.cli`` adds them) and its handler: the arguments
turned into one call of the command, imported only when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ferry.commands.argument_types import dynamodb_table, home_folder, lease, work_location


def add_parser(commands: argparse._SubParsersAction) -> None:
    """``ferry replicate``'s arguments."""
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
    replicate.add_argument(
        "--work-uri",
        type=work_location,
        help="where plans, manifests and copy records go (default: file://.ferry/work; "
        "s3://… for Spark on EMR Serverless)",
    )
    replicate.add_argument(
        "--home", type=home_folder, default=".ferry", help="local state (default .ferry)"
    )
    replicate.add_argument(
        "--state-table",
        type=dynamodb_table,
        metavar="NAME",
        help="DynamoDB table of replica locks and the snapshot ledger "
        "(default: a local file, <home>/state.sqlite3)",
    )
    replicate.add_argument(
        "--lock-lease",
        type=lease,
        metavar="DURATION",
        help="how long a run holds its replica table's lock at most, ISO-8601 (default PT1H)",
    )
    replicate.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    replicate.set_defaults(handler=_replicate)


def _replicate(args: argparse.Namespace) -> int:
    from ferry.commands.replicate import run_replicate

    return run_replicate(
        args.config,
        args.table,
        dry_run=args.dry_run,
        as_json=args.json,
        work_uri=args.work_uri,
        home=args.home,
        state_table=args.state_table,
        lock_lease=args.lock_lease,
    )
