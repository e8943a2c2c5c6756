"""``ferry housekeeping``'s arguments (``ferry.commands.cli`` adds them) and its handler: the
arguments turned into one call of the command, imported only when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ferry.commands.argument_types import dynamodb_table, home_folder, work_location


def add_parser(commands: argparse._SubParsersAction) -> None:
    """``ferry housekeeping``'s arguments."""
    housekeeping = commands.add_parser(
        "housekeeping",
        help="delete superseded snapshots past their grace period; find unknown folders",
    )
    housekeeping.add_argument("config", type=Path, help="the replication config (YAML)")
    housekeeping.add_argument(
        "--table",
        action="append",
        default=[],
        metavar="DB.TABLE",
        help="only the replica of this source table (repeatable)",
    )
    housekeeping.add_argument(
        "--dry-run", action="store_true", help="list what would be deleted; delete nothing"
    )
    housekeeping.add_argument(
        "--vacuum",
        action="store_true",
        help="also list folders below the table locations that neither the catalog nor the "
        "ledger knows",
    )
    housekeeping.add_argument(
        "--delete-orphans",
        action="store_true",
        help="with --vacuum (implied): hand those folders to the ledger, so that housekeeping "
        "deletes them once a grace period has passed (and nothing references them)",
    )
    housekeeping.add_argument("--json", action="store_true", help="print the report as JSON")
    housekeeping.add_argument(
        "--work-uri",
        type=work_location,
        help="where the report goes (default: file://<home>/work)",
    )
    housekeeping.add_argument(
        "--home", type=home_folder, default=".ferry", help="local state (default .ferry)"
    )
    housekeeping.add_argument(
        "--state-table",
        type=dynamodb_table,
        metavar="NAME",
        help="DynamoDB table holding the ledger (default: the local file ferry replicate keeps)",
    )
    housekeeping.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    housekeeping.set_defaults(handler=_housekeeping)


def _housekeeping(args: argparse.Namespace) -> int:
    from ferry.commands.housekeeping import run_housekeeping

    return run_housekeeping(
        args.config,
        args.table,
        dry_run=args.dry_run,
        vacuum=args.vacuum,
        delete_orphans=args.delete_orphans,
        as_json=args.json,
        work_uri=args.work_uri,
        home=args.home,
        state_table=args.state_table,
    )
