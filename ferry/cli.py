"""The ``ferry`` command line: parse the arguments, run the command (``ferry.commands``).

Exit codes: 0 every table succeeded; 1 any table failed; 2 bad config or usage (nothing
was run). Mistakes get one line on stderr, never a stack trace.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import NoReturn

from ferry import node
from ferry.commands import EXIT_USAGE, UsageError, run_command


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line (and exit code 2), like every other mistake."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


def port(text: str) -> int:
    """An argparse type: a TCP port number, 1-65535 (int() alone would accept 70000)."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port number (1-65535)")
    return number


def lease(text: str) -> timedelta:
    """An argparse type: how long a run holds its replica's lock, an ISO-8601 duration
    (``PT1H``, ``P1D``) above zero and at most ``ferry.ledger.LONGEST_LEASE``."""
    from ferry.duration import format_duration, parse_duration
    from ferry.ledger import LONGEST_LEASE

    try:
        length = parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if length <= timedelta(0):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a positive duration; a lock must be held for some time, e.g. PT1H"
        )
    if length > LONGEST_LEASE:
        raise argparse.ArgumentTypeError(
            f"{text!r} is longer than {format_duration(LONGEST_LEASE)}, the longest lease: a run "
            "that crashed would hold its replica table that long"
        )
    return length


def home_folder(text: str) -> Path:
    """An argparse type: a folder for Ferry's state, existing or not; never a file.

    Checked, not created: nothing is written before every check has passed. An existing one
    must be readable: every command reads its state there.
    """
    from ferry.fs import nearest_existing

    path = Path(text)
    folder, problem = nearest_existing(path)
    if problem:
        raise argparse.ArgumentTypeError(f"{text!r} cannot be reached: {problem}")
    if not folder.is_dir():
        if folder == path.absolute():
            raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
        raise argparse.ArgumentTypeError(f"{text!r} cannot be a folder: {folder} is a file")
    if folder == path.absolute() and not os.access(folder, os.R_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r} cannot be read (permission denied)")
    return path


_WORK_EXAMPLES = "give file:///absolute/path or s3://bucket/prefix"


def work_location(text: str) -> str:
    """An argparse type: where a run's plans and manifests go, ``file:///…`` or ``s3://…``."""
    return _work_location(text, ("file", "s3", "s3a", "s3n"), _WORK_EXAMPLES)


def s3_work_location(text: str) -> str:
    """An argparse type: a work location on S3 (what a deployed pipeline reads)."""
    return _work_location(text, ("s3", "s3a", "s3n"), "give s3://bucket/prefix")


def _work_location(text: str, schemes: Sequence[str], examples: str) -> str:
    from urllib.parse import urlsplit

    from ferry.config import check_bucket_name, check_location

    parsed = urlsplit(text)
    scheme = parsed.scheme.lower()
    if scheme == "file" and "://" not in text:  # Hive's file:/path
        raise argparse.ArgumentTypeError(
            f"{text!r}: write a local folder with three slashes, file:///{parsed.path.lstrip('/')}"
        )
    if not scheme or "://" not in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a URI; {examples}")
    if scheme not in schemes:
        raise argparse.ArgumentTypeError(
            f"{text!r}: scheme '{scheme}' is not supported; {examples}"
        )
    try:
        location = check_location(text)
        if scheme != "file":
            check_bucket_name(parsed.netloc)  # else S3 refuses the run's first write
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return location


_TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")


def dynamodb_table(text: str) -> str:
    """An argparse type: a DynamoDB table's name (3-255 of ``A-Z a-z 0-9 _ . -``)."""
    if not _TABLE_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a DynamoDB table name (3-255 letters, digits, '_', '.', '-')"
        )
    return text


_STATE_MACHINE_ARN = re.compile(
    r"arn:aws[a-z-]*:states:[a-z]{2}(?:-[a-z]+)+-\d+:\d{12}:stateMachine:[A-Za-z0-9_-]{1,80}"
)


def state_machine_arn(text: str) -> str:
    """An argparse type: a Step Functions state machine's ARN."""
    if not _STATE_MACHINE_ARN.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a state machine ARN "
            "(arn:aws:states:<region>:<12-digit account>:stateMachine:<name>)"
        )
    return text


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
    from ferry import fs  # here: a usage error needs no pyarrow

    fs.configure(fs.S3Settings.from_environment(os.environ))
    # Fail points, armed only on purpose (tests, failure drills): see ferry/faults.py.
    if os.environ.get("FERRY_FAULTS"):
        from ferry import faults

        faults.arm(*faults.parse(os.environ["FERRY_FAULTS"]))
    return run_command(lambda: args.handler(args))


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ferry", description="Replicate Hive tables, data and metadata, between catalogs."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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

    demo = commands.add_parser("demo", help="replicate sample tables on the local runtime")
    demo.add_argument(
        "--home", type=home_folder, default=".ferry", help="state folder (default .ferry)"
    )
    demo.add_argument("--source-port", type=port, default=9083)
    demo.add_argument("--replica-port", type=port, default=9084)
    demo.add_argument("--aws-port", type=port, default=5000)
    demo.set_defaults(handler=_demo)
    _add_status(commands)
    from ferry.commands.failover_arguments import add_parsers as add_failover_parsers

    add_failover_parsers(commands, (home_folder, work_location, dynamodb_table))
    return parser


# Each handler turns the arguments into one call of a command (imported when it runs).


def _plan(args: argparse.Namespace) -> int:
    from ferry.commands.plan import run_plan

    return run_plan(args.config, args.table, as_json=args.json)


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


def _local(args: argparse.Namespace) -> int:
    from ferry.commands.local import run_local, run_local_trigger
    from ferry.local import runtime

    home = args.home.resolve()
    if args.action == "up":
        _check_writable(home)
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


def _check_writable(home: Path) -> None:
    """The local runtime keeps its processes' state in ``home``: it must be writable (or
    creatable) before anything starts."""
    from ferry.fs import why_not_creatable

    problem = why_not_creatable(home)
    if problem:
        raise UsageError(f"--home {home}: {problem}; the local runtime keeps its state there")


def _doctor(args: argparse.Namespace) -> int:
    from ferry.commands.doctor import run_doctor

    node.quiet_jsii()  # the doctor reads the settings with the CDK app's modules
    return run_doctor(args.environment, home=args.home, as_json=args.json, spark_job=args.spark_job)


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


def _demo(args: argparse.Namespace) -> int:
    from ferry import demo

    _check_writable(args.home.resolve())
    node.quiet_jsii()  # the demo starts the local runtime, which synthesizes with the CDK
    return demo.run(
        args.home.resolve(),
        {"source": args.source_port, "replica": args.replica_port, "aws": args.aws_port},
    )


def _add_status(commands: argparse._SubParsersAction) -> None:
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
    )


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


if __name__ == "__main__":
    sys.exit(main())
