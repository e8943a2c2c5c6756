"""The ``ferry`` command line's argument types: each checks one value and makes a mistake one
line (argparse's ``ArgumentTypeError``), before anything runs."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from ferry.commands import UsageError


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
    (``PT1H``, ``P1D``) above zero and at most ``ferry.replicas.ledger.LONGEST_LEASE``."""
    from ferry.core.duration import format_duration, parse_duration
    from ferry.replicas.ledger import LONGEST_LEASE

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
    from ferry.storage.fs import nearest_existing

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


def check_writable(home: Path) -> None:
    """The local runtime keeps its processes' state in ``home``: it must be writable (or
    creatable) before anything starts."""
    from ferry.storage.fs import why_not_creatable

    problem = why_not_creatable(home)
    if problem:
        raise UsageError(f"--home {home}: {problem}; the local runtime keeps its state there")
