"""``ferry redrive``'s arguments (``ferry.commands.cli`` adds them) and its handler: the arguments
turned into one call of the command, imported only when it runs."""

from __future__ import annotations

import argparse

from ferry.commands.argument_types import home_folder


def add_parser(commands: argparse._SubParsersAction) -> None:
    """``ferry redrive``'s arguments."""
    redrive = commands.add_parser(
        "redrive",
        help="send a dead-letter queue's messages again (a failed catalog event, poll, "
        "rule or schedule delivery), or redrive a replication's execution that timed out, "
        "was stopped or failed, once the cause is fixed",
    )
    redrive.add_argument(
        "queue",
        metavar="QUEUE|EXECUTION_ARN",
        help="the dead-letter queue (its name, URL or ARN), or an execution's ARN",
    )
    redrive.add_argument("--region", help="the queue's region (default: the SDK's)")
    redrive.add_argument(
        "--environment",
        metavar="NAME",
        help="'local': the execution is the local runtime's; NAME: it must be one of "
        "ferry-NAME-replication (on AWS, with your credentials; its region is its ARN's)",
    )
    redrive.add_argument(
        "--home", type=home_folder, default=".ferry", help="the local runtime's state folder"
    )
    redrive.add_argument("--wait", action="store_true", help="follow the execution to its end")
    redrive.add_argument("--json", action="store_true", help="print the outcome as JSON")
    redrive.set_defaults(handler=_redrive)


def _redrive(args: argparse.Namespace) -> int:
    from ferry.commands.redrive import run_redrive

    return run_redrive(
        args.queue,
        args.region,
        environment=args.environment,
        home=args.home,
        wait=args.wait,
        as_json=args.json,
    )
