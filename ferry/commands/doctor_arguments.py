"""``ferry doctor``'s arguments (``ferry.commands.cli`` adds them) and its handler: the arguments
turned into one call of the command, imported only when it runs."""

from __future__ import annotations

import argparse

from ferry.commands.argument_types import home_folder
from ferry.core import node


def add_parser(commands: argparse._SubParsersAction) -> None:
    """``ferry doctor``'s arguments."""
    doctor = commands.add_parser(
        "doctor",
        help="check what a deploy of an environment needs (bootstrap, secret, network, "
        "metastores, Spark), with your AWS credentials",
    )
    doctor.add_argument(
        "--environment",
        required=True,
        metavar="NAME",
        help="infra/environments/NAME.yml; 'local': the local runtime",
    )
    doctor.add_argument(
        "--home", type=home_folder, default=".ferry", help="the local runtime's state folder"
    )
    doctor.add_argument(
        "--spark-job", action="store_true", help="also run a tiny job on the Spark application"
    )
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from ferry.commands.doctor import run_doctor

    node.quiet_jsii()  # the doctor reads the settings with the CDK app's modules
    return run_doctor(args.environment, home=args.home, as_json=args.json, spark_job=args.spark_job)
