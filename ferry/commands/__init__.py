"""What each ``ferry`` command runs, one module per command.

``ferry.cli`` parses the command line and calls them; ``ferry demo`` calls them as a person
would type the commands. A command returns its exit code: 0 every table succeeded; 1 any
table failed; 2 bad config or usage (nothing was run). ``run_command`` turns a mistake into
one line on stderr and its exit code, never a stack trace.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from ferry.errors import ConfigError, FerryError

if TYPE_CHECKING:
    from ferry.config import ReplicationConfig

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


def run_command(command: Callable[[], int]) -> int:
    """Run ``command``; a mistake or a failure becomes one line on stderr and an exit code."""
    try:
        return command()
    except (ConfigError, UsageError) as error:
        print(f"ferry: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except FerryError as error:
        print(f"ferry: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except (BotoCoreError, ClientError) as error:  # credentials, endpoint, permissions
        print(f"ferry: error: AWS: {error}", file=sys.stderr)
        return EXIT_FAILED
    except RuntimeError as error:  # the local runtime's start-up problems
        print(f"ferry: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("ferry: interrupted", file=sys.stderr)
        return 130
