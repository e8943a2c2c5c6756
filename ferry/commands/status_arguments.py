"""``ferry status``'s arguments (``ferry.commands.cli`` adds them) and its handler: the arguments
turned into one call of the command, imported only when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ferry.commands.argument_types import dynamodb_table, home_folder


def add_parser(commands: argparse._SubParsersAction) -> None:
    """``ferry status``'s arguments."""
    status = commands.add_parser(
        "status",
        help="how fresh each replica of a config is against its RPO (reads catalogs and the "
        "state store only)",
    )
    status.add_argument("config", type=Path, help="the replication config (YAML)")
    status.add_argument(
        "--table", action="append", default=[], metavar="DB.TABLE", help="only this source table"
    )
    status.add_argument("--json", action="store_true", help="print the tables as JSON")
    status.add_argument(
        "--home",
        type=home_folder,
        default=".ferry",
        help="the local state ferry replicate keeps, or the local runtime's (default .ferry)",
    )
    status.add_argument(
        "--environment",
        metavar="NAME",
        help="a deployed environment's state (infra/environments/NAME.yml; 'local': the local "
        "runtime's pipeline)",
    )
    status.add_argument(
        "--state-table",
        type=dynamodb_table,
        metavar="NAME",
        help="the DynamoDB table ferry replicate --state-table used",
    )
    status.add_argument(
        "--governance",
        action="store_true",
        help="also compare each replica's column statistics, keys and grants with its "
        "source's (reads both catalogs as ferry plan does)",
    )
    status.set_defaults(handler=_status)


def _status(args: argparse.Namespace) -> int:
    from ferry.commands.status import run_status

    return run_status(
        args.config,
        args.table,
        as_json=args.json,
        home=args.home,
        environment=args.environment,
        state_table=args.state_table,
        governance=args.governance,
    )
