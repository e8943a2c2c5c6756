"""What each ``ferry`` command runs, one module per command.

``ferry.commands.cli`` parses the command line and calls them; ``ferry demo``
(``ferry.commands.demo``) calls them as a person would type the commands. A command returns
its exit code: 0 every table succeeded; 1 any table failed; 2 bad config or usage (nothing
was run). ``run_command`` turns a mistake into one line on stderr and its exit code, never a
stack trace.

Beside each command (``<command>.py``, its command line in ``<command>_arguments.py``) are
what only the commands use: the in-process driver of ``ferry replicate`` (``in_process``,
its data flow ``in_process_data_flow``, the tables' outcomes ``table_outcomes``), the
doctor's checks (``doctor_checks``, ``doctor_findings``, ``doctor_network``,
``doctor_regions``, ``doctor_check_modes``, ``doctor_spark``), the dead letters sent again
(``dead_letters``), the deployed stack's switch (``deployed_switch``) and the demo's reader of
tables (``reader``). The commands are
the only layer that imports the local runtime (``ferry.local``): what runs below them is given
what it needs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from botocore.exceptions import BotoCoreError, ClientError

from ferry.core.errors import ConfigError, FailoverError, FerryError, StateStoreError

if TYPE_CHECKING:
    from ferry.config import ReplicationConfig
    from ferry.storage.aws import AwsClients

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(FerryError):
    """The command line is wrong; nothing was run."""


def print_warnings(config: ReplicationConfig) -> None:
    """Each Circus Train key the config sets that Ferry does not use: one line, once.

    ``ferry: warning: <file>: <key>: <what Ferry does instead>`` on stderr.
    """
    for warning in config.warnings:
        print(f"ferry: warning: {warning}", file=sys.stderr)


def load_selected(
    config_path: Path, tables: Sequence[str], *, replicates: bool = True
) -> ReplicationConfig:
    """The config, its warnings printed, with ``--table`` checked against it (exit 2).

    A command that ``replicates`` refuses a housekeeping-only config (no
    ``table-replications``) with one line, before its warnings: nothing would run.
    """
    from ferry.config import load_config

    config = load_config(config_path)  # a bad config stops here, before anything starts
    if replicates and config.housekeeping_only:
        raise UsageError(
            f"{config_path}: the config holds only housekeeping settings (no "
            "table-replications): nothing to replicate"
        )
    print_warnings(config)
    try:
        config.select(list(tables))
    except ConfigError as error:
        raise UsageError(f"--table {error}") from None
    return config


def _error_line(error: object) -> None:
    """``ferry: error: …`` on stderr, always one line (a message that spans lines is joined)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    print("ferry: error: " + " ".join(lines), file=sys.stderr)


_NO_REGION = (
    "not given, and the AWS SDK has no default region (AWS_REGION, AWS_DEFAULT_REGION or the "
    "profile's region)"
)


def check_regions(config: ReplicationConfig, config_path: Path, aws: AwsClients) -> None:
    """Each AWS service the config names has a region here: its own, or the SDK's default.

    Without one, every table would fail at its first call; this is one line, before any.
    The SDK's default (``aws.region``) is asked only for a service that names no region of
    its own: a config of Hive metastores alone makes no AWS session for it.
    """
    missing = [
        f"{key}.glue.region"
        for key, catalog in (
            ("source-catalog", config.source_catalog),
            ("replica-catalog", config.replica_catalog),
        )
        if catalog.glue is not None and not catalog.glue.region
    ]
    if config.emr_serverless is not None and not config.emr_serverless.region:
        missing.append("emr-serverless.region")
    if missing and not aws.region:
        raise ConfigError(f"{config_path}: {missing[0]}: {_NO_REGION}; give one")


def check_work_location(work_uri: str, aws: AwsClients) -> None:
    """Refuse a work location that cannot be written before anything is written there.

    A local one must be a folder, or one that can be created; an S3 one a bucket that
    exists (``HeadBucket``; a refusal still says the bucket exists).
    """
    from ferry.storage import fs

    where = f"work location {work_uri}"
    if fs.scheme_of(work_uri) == "file":
        problem = fs.why_not_creatable(urlparse(work_uri).path)
        if problem:
            raise UsageError(f"{where}: {problem}")
        return
    if fs.scheme_of(work_uri) not in fs.S3_SCHEMES:
        return
    bucket = urlparse(work_uri).netloc
    try:
        aws.probe_client("s3", aws.region or "us-east-1").head_bucket(Bucket=bucket)
    except ClientError as error:
        if str(error.response.get("Error", {}).get("Code")) in ("404", "NoSuchBucket", "NotFound"):
            raise UsageError(f"{where}: the bucket {bucket} does not exist") from None
    except BotoCoreError as error:  # no answer within the probe's timeouts, no credentials
        raise UsageError(f"{where}: S3 did not answer: {error}") from None


def run_command(command: Callable[[], int]) -> int:
    """Run ``command``; a mistake or a failure becomes one line on stderr and an exit code."""
    try:
        return command()
    except (ConfigError, UsageError, StateStoreError, FailoverError) as error:
        _error_line(error)
        return EXIT_USAGE
    except FerryError as error:
        _error_line(error)
        return EXIT_FAILED
    except (BotoCoreError, ClientError) as error:  # credentials, endpoint, permissions
        _error_line(f"AWS: {error}")
        return EXIT_FAILED
    except RuntimeError as error:  # not Ferry's own (LocalRuntimeError is): still one line
        _error_line(error)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("ferry: interrupted", file=sys.stderr)
        return 130
