"""``ferry local``'s arguments (``ferry.commands.cli`` adds them) and its handler: the arguments
turned into one call of the command, imported only when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ferry.commands import UsageError
from ferry.commands.argument_types import check_writable, home_folder, port
from ferry.core import node


def add_parser(commands: argparse._SubParsersAction) -> None:
    """``ferry local``'s arguments."""
    local = commands.add_parser("local", help="the local runtime: metastores and AWS emulator")
    local.add_argument("action", choices=["up", "down", "status", "trigger"])
    local.add_argument(
        "config",
        type=Path,
        nargs="?",
        help="with trigger: the config whose declared triggers to install",
    )
    local.add_argument(
        "--home", type=home_folder, default=".ferry", help="state folder (default .ferry)"
    )
    local.add_argument("--source-port", type=port, default=9083)
    local.add_argument("--replica-port", type=port, default=9084)
    local.add_argument("--aws-port", type=port, default=5000)
    local.add_argument("--json", action="store_true", help="print the settings as JSON")
    local.add_argument(
        "--purge",
        action="store_true",
        help="with down: also remove the saved state (emulated AWS, metastores): the next up "
        "starts empty",
    )
    local.set_defaults(handler=_local)


def _local(args: argparse.Namespace) -> int:
    from ferry.commands.local import run_local, run_local_trigger
    from ferry.local import runtime

    home = args.home.resolve()
    if args.action == "up":
        check_writable(home)
        node.quiet_jsii()  # up synthesizes the local environment's stack with the CDK
    if args.action == "trigger":
        if args.config is None:
            raise UsageError("local trigger needs CONFIG, the config whose triggers to install")
        return run_local_trigger(args.config, home)
    ports = {
        runtime.SOURCE: args.source_port,
        runtime.REPLICA: args.replica_port,
        runtime.AWS: args.aws_port,
    }
    if args.purge and args.action != "down":
        raise UsageError("--purge goes with `ferry local down` only")
    return run_local(args.action, home, ports, as_json=args.json, purge=args.purge)
