"""The ``ferry`` command line: parse the arguments, run the command (``ferry.commands``).

Exit codes: 0 every table succeeded; 1 any table failed; 2 bad config or usage (nothing
was run). Mistakes get one line on stderr, never a stack trace.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from ferry.commands import (
    EXIT_USAGE,
    doctor_arguments,
    execute_arguments,
    housekeeping_arguments,
    local_arguments,
    plan_arguments,
    redrive_arguments,
    replicate_arguments,
    resume_arguments,
    run_command,
    status_arguments,
)
from ferry.commands.argument_types import (
    check_writable,
    home_folder,
    port,
)
from ferry.commands.failover_arguments import add_parsers as add_failover_parsers
from ferry.core import node


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line (and exit code 2), like every other mistake."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ferry`` with ``argv`` (default: this process's arguments); its exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # --help, or a mistake already printed as one line
        return done.code if isinstance(done.code, int) else EXIT_USAGE
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="ferry: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    # Where S3 is gets decided here, once: the standard AWS variables, as boto3 reads them.
    # Ferry uses no pydantic plugin: without this, pydantic looks for plugins in the entry
    # points of every installed distribution when the first model is built (a few hundredths
    # of a second of every command). A value a person sets is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from ferry.storage import fs  # here: a usage error needs no pyarrow

    fs.configure(fs.S3Settings.from_environment(os.environ))
    # Fail points, armed only on purpose (tests, failure drills): see ferry/core/faults.py.
    if os.environ.get("FERRY_FAULTS"):
        from ferry.core import faults

        faults.arm(*faults.parse(os.environ["FERRY_FAULTS"]))
    return run_command(lambda: args.handler(args))


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ferry", description="Replicate Hive tables, data and metadata, between catalogs."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # In the order of ``ferry --help``; each command's arguments sit beside it.
    for arguments in (
        plan_arguments,
        replicate_arguments,
        housekeeping_arguments,
        execute_arguments,
        local_arguments,
        doctor_arguments,
        redrive_arguments,
        resume_arguments,
    ):
        arguments.add_parser(commands)
    _add_demo(commands)
    status_arguments.add_parser(commands)
    add_failover_parsers(commands)
    return parser


def _add_demo(commands: argparse._SubParsersAction) -> None:
    """``ferry demo``'s arguments (here: the demo runs the commands, so it sits above them)."""
    demo = commands.add_parser("demo", help="replicate sample tables on the local runtime")
    demo.add_argument(
        "--home", type=home_folder, default=".ferry", help="state folder (default .ferry)"
    )
    demo.add_argument("--source-port", type=port, default=9083)
    demo.add_argument("--replica-port", type=port, default=9084)
    demo.add_argument("--aws-port", type=port, default=5000)
    demo.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from ferry.commands import demo

    check_writable(args.home.resolve())
    node.quiet_jsii()  # the demo starts the local runtime, which synthesizes with the CDK
    return demo.run(
        args.home.resolve(),
        {"source": args.source_port, "replica": args.replica_port, "aws": args.aws_port},
    )


if __name__ == "__main__":
    sys.exit(main())
