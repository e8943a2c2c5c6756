"""``ferry execute``'s arguments (``ferry.commands.cli`` adds them) and its handler: the arguments
turned into one call of the command, imported only when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ferry.commands.argument_types import home_folder, s3_work_location, state_machine_arn


def add_parser(commands: argparse._SubParsersAction) -> None:
    """``ferry execute``'s arguments."""
    execute = commands.add_parser(
        "execute", help="replicate a config through the state machine (local by default)"
    )
    execute.add_argument("config", type=Path, help="the replication config (YAML)")
    execute.add_argument("--table", action="append", default=[], metavar="DB.TABLE")
    execute.add_argument(
        "--state-machine-arn",
        type=state_machine_arn,
        help="run on this state machine (default: the local runtime's)",
    )
    execute.add_argument(
        "--work-uri",
        type=s3_work_location,
        help="s3://bucket/prefix for the config and plans (with --state-machine-arn)",
    )
    execute.add_argument("--wait", action="store_true", help="follow the execution to its end")
    execute.add_argument("--json", action="store_true", help="print the outcome as JSON")
    execute.add_argument("--home", type=home_folder, default=".ferry", help="local runtime state")
    execute.set_defaults(handler=_execute)


def _execute(args: argparse.Namespace) -> int:
    from ferry.commands.execute import run_execute

    return run_execute(
        args.config,
        args.table,
        state_machine_arn=args.state_machine_arn,
        work_uri=args.work_uri,
        wait=args.wait,
        as_json=args.json,
        home=args.home.resolve(),
    )
