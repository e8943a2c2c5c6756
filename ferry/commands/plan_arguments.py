"""``ferry plan``'s arguments (``ferry.commands.cli`` adds them) and its handler: the arguments
turned into one call of the command, imported only when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(commands: argparse._SubParsersAction) -> None:
    """``ferry plan``'s arguments."""
    plan = commands.add_parser(
        "plan", help="what would be copied and why (changes and locks nothing)"
    )
    plan.add_argument("config", type=Path, help="the replication config (YAML)")
    plan.add_argument(
        "--table", action="append", default=[], metavar="DB.TABLE", help="only this source table"
    )
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    plan.set_defaults(handler=_plan)


def _plan(args: argparse.Namespace) -> int:
    from ferry.commands.plan import run_plan

    return run_plan(args.config, args.table, as_json=args.json)
