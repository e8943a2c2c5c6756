"""``ferry execute``: start a replication on the state machine and, if asked, follow it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from ferry.commands import EXIT_FAILED, EXIT_OK, UsageError, check_work_location, load_selected
from ferry.commands.local import local_pipeline
from ferry.config import ReplicationConfig
from ferry.core.errors import ConfigError, FerryError, describe_error
from ferry.local import deploy
from ferry.statemachine.executions import follow, start
from ferry.states.context import StateContext
from ferry.storage import fs
from ferry.storage.aws import AwsClients


def _print_table_states(states: list[str]) -> None:
    """One table's states, from its child execution of the Map over the tables."""
    print(f"    ↳ {' → '.join(states)}")


def run_execute(
    config_path: Path,
    tables: Sequence[str] = (),
    *,
    state_machine_arn: str | None = None,
    work_uri: str | None = None,
    wait: bool = False,
    as_json: bool = False,
    home: Path = Path(".ferry"),
) -> int:
    """Start a replication of ``config_path`` on a state machine (default: the local runtime's).

    What can be checked here is checked before the config is uploaded or anything started:
    the config, ``--table``, the work bucket, and the replica tables a table-name-pattern
    selects. A config the state machine refuses all the same (Resolve tables) is one line,
    exit code 2, as here.
    """
    config = load_selected(config_path, tables)
    if state_machine_arn:
        if not work_uri:
            raise UsageError("--state-machine-arn needs --work-uri (the stack's work bucket)")
        aws = AwsClients()
        _check_state_machine(state_machine_arn, aws)
        check_work_location(work_uri, aws)
    elif work_uri:
        raise UsageError(
            "--work-uri goes with --state-machine-arn; the local runtime uses its own work bucket"
        )
    else:
        state_machine_arn, work_uri, aws = local_pipeline(home.resolve())
        # The runtime --home selects, for pyarrow too: the Map's results are read through it.
        fs.configure(fs.S3Settings.of_clients(aws), aws)
    _check_replicas(config, tables, aws, config_path)
    config_uri = deploy.upload_config(aws.client("s3"), work_uri, config_path)
    sfn = aws.client("stepfunctions", aws.region_of_arn(state_machine_arn))
    name = deploy.execution_name()
    execution_input = {"configUri": config_uri, **({"tables": list(tables)} if tables else {})}
    execution_arn = start(sfn, state_machine_arn, name, execution_input)
    if not wait:
        print(json.dumps({"executionArn": execution_arn}) if as_json else execution_arn)
        return EXIT_OK
    if not as_json:
        print(f"execution {name} started")
    outcome = follow(
        sfn,
        execution_arn,
        on_state=(lambda s: None) if as_json else (lambda s: print(f"  → {s}")),
        on_child=(lambda states: None) if as_json else _print_table_states,
    )
    # The execution's error as one line: a Lambda's cause is its whole error payload.
    error, cause = describe_error({"Error": outcome.error, "Cause": outcome.cause})
    if outcome.status != "SUCCEEDED" and error == ConfigError.__name__ and not outcome.tables:
        raise ConfigError(cause)  # Resolve tables refused the config: nothing ran
    if as_json:
        print(json.dumps(outcome.to_dict(), indent=2))
    elif outcome.status == "SUCCEEDED":
        print(f"SUCCEEDED in {outcome.seconds:.1f} s")
    else:
        for state, failed, why in outcome.failed_states:
            print(f"  ✗ {state} failed: {failed}: {_one_line(why)}")
        print(f"{outcome.status} in {outcome.seconds:.1f} s: {error}: {_one_line(cause)}")
    return EXIT_OK if outcome.status == "SUCCEEDED" else EXIT_FAILED


def _check_state_machine(arn: str, aws: AwsClients) -> None:
    """The state machine exists (``DescribeStateMachine``, asked with short timeouts)."""
    sfn = aws.probe_client("stepfunctions", aws.region_of_arn(arn))
    try:
        sfn.describe_state_machine(stateMachineArn=arn)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code")
        if code == "StateMachineDoesNotExist":
            raise UsageError(f"--state-machine-arn {arn}: no such state machine") from None
        if code != "AccessDeniedException":  # allowed to start it, perhaps; start will say
            raise UsageError(f"--state-machine-arn {arn}: {error}") from None
    except BotoCoreError as error:
        raise UsageError(
            f"--state-machine-arn {arn}: Step Functions did not answer: {error}"
        ) from None


def _one_line(text: str) -> str:
    """The first line of an error's cause (a Lambda's stack trace never follows it)."""
    return text.splitlines()[0] if text else ""


def _check_replicas(
    config: ReplicationConfig, tables: Sequence[str], aws: AwsClients, config_path: Path
) -> None:
    """Refuse, before anything starts, two replications that would write one replica table.

    Which tables a table-name-pattern selects is known from the source catalog (read only
    when no ``--table`` names them). When it answers from here the check is made now (a
    ``ConfigError``, exit 2); when it does not (a metastore only the pipeline's network
    reaches) Resolve tables makes it.
    """
    try:
        StateContext("file:///nowhere", aws).select_tables(config, list(tables), str(config_path))
    except ConfigError:
        raise
    except (FerryError, BotoCoreError, ClientError):  # e.g. the catalog does not answer here
        return
