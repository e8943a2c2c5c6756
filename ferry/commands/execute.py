"""``ferry execute``: start a replication on the state machine and, if asked, follow it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ferry.aws import AwsClients
from ferry.commands import EXIT_FAILED, EXIT_OK, UsageError, load_selected
from ferry.commands.local import local_pipeline
from ferry.execute import follow, start
from ferry.local import deploy


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
    """Start a replication of ``config_path`` on a state machine (default: the local runtime's)."""
    load_selected(config_path, tables)
    if state_machine_arn:
        if not work_uri:
            raise UsageError("--state-machine-arn needs --work-uri (the stack's work bucket)")
        aws = AwsClients()
    else:
        state_machine_arn, work_uri, aws = local_pipeline(home.resolve())
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
    if as_json:
        print(json.dumps(outcome.to_dict(), indent=2))
    elif outcome.status == "SUCCEEDED":
        print(f"SUCCEEDED in {outcome.seconds:.1f} s")
    else:
        for state, error, cause in outcome.failed_states:
            print(f"  ✗ {state} failed: {error}: {cause}")
        print(f"{outcome.status} in {outcome.seconds:.1f} s: {outcome.error}: {outcome.cause}")
    return EXIT_OK if outcome.status == "SUCCEEDED" else EXIT_FAILED
