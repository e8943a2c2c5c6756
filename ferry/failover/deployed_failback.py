"""``ferry failback --environment``: the failback through the deployed stack.

The Failback function (``ferry.failover.stack_failback``) does the work under its own
least-privilege role; the operator's process reads no catalog and no data. It is invoked
until it is done:

1. ``run``: the checks and the changes (one line and nothing changed when a check fails),
   then the reverse run started on the replication state machine: ``COPYING``;
2. the command follows that execution (each state as it is entered); one that does not
   succeed is one line, and ``ferry failback`` again goes on from what it committed;
3. ``run`` again: the original tables restored, the replicas un-promoted: ``DONE``;
4. the FailoverSwitch function turns the config's triggers on again.

``--dry-run`` asks ``plan`` once and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ferry.config import ReplicationConfig
from ferry.core.errors import FerryError
from ferry.failover import Prefer
from ferry.failover.config_failback import FailbackReport, TableFailback
from ferry.failover.deployed import DeployedSwitch
from ferry.statemachine.failover_payloads import FailbackInput, FailbackResult

#: The stack output naming the function.
FUNCTION_OUTPUT = "FailbackFunctionArn"

#: Follows an execution to its end: (status, its error as one line).
FollowRun = Callable[[str], tuple[str, str]]


def fail_back(
    switch: DeployedSwitch,
    config: ReplicationConfig,
    tables: Sequence[str],
    follow_run: FollowRun,
    *,
    prefer: Prefer | None = None,
    dry_run: bool = False,
) -> FailbackReport:
    """Fail the config's ``tables`` (source names) back through the stack (see the module)."""
    uri = switch.request("resume", config, tables).config_uri
    request = FailbackInput(
        action="plan" if dry_run else "run",
        config_uri=uri,
        tables=list(tables),
        prefer=prefer.value if prefer else None,
    )
    answer = _ask(switch, request)
    followed: set[str] = set()
    while answer.status == "COPYING":
        arn = answer.execution_arn or ""
        if arn in followed:  # succeeded, yet the function would start it again
            raise FerryError(f"the reverse run {arn} succeeded but the failback did not go on")
        followed.add(arn)
        status, error = follow_run(arn)
        if status != "SUCCEEDED":
            raise FerryError(
                f"bringing DR's changes home failed: the reverse run {arn} ended {status}"
                + (f": {error}" if error else "")
                + "; run ferry failback again to continue"
            )
        answer = _ask(switch, request)
    report = FailbackReport(
        [TableFailback(**table) for table in answer.tables],
        answer.reverse_config,
        answer.reverse_text,
    )
    if not dry_run:
        report.switch = switch.resume(config, tables)
    return report


def _ask(switch: DeployedSwitch, request: FailbackInput) -> FailbackResult:
    answer = switch.call(FUNCTION_OUTPUT, "failback function", request.model_dump(mode="json"))
    return FailbackResult.model_validate(answer)
