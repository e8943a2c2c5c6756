"""What the deployed Failback function does for one config (``lambdas/failback.py``).

``ferry failback --environment`` invokes it under its own least-privilege role; the
operator's process reads no catalog and no data:

- ``plan`` (``--dry-run``): the checks and each table's changes since the failover; nothing
  is written.
- ``run``: the checks, then ``ferry.failover.config_failback``'s steps as far as one invocation
  goes. The reverse config is written below the work bucket's ``configs/failback/`` (every
  function of the pipeline reads configs there) and replicated by the stack's own
  replication state machine, which this function starts (``StackReverse``): it answers
  ``COPYING`` with the execution. Invoked again once that execution has succeeded, it
  restores the original tables, un-promotes the replicas and answers ``DONE``.

Every step is recorded (the tables' journals, the reverse run's record beside the
baselines), so an invocation again after any failure converges: a reverse run still running
is waited for, not started twice; one that failed is started anew (what it committed is not
copied again). The triggers are turned on again by the failover switch, which the command
invokes afterwards (this function's role may not).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ferry.catalog import Catalog
from ferry.config import ReplicationConfig, TableReplication
from ferry.core.event_id import new_event_id
from ferry.failover import Prefer
from ferry.failover.baseline import FAILOVER_FOLDER
from ferry.failover.config_failback import fail_back
from ferry.failover.stack_failover import AlreadySuspended, replications_of
from ferry.statemachine.failover_payloads import FailbackInput, FailbackResult
from ferry.storage import fs

#: Where the reverse configs are written in the work bucket: below ``configs/``, which every
#: function of the pipeline may read (``infra/functions.py``).
REVERSE_FOLDER = "configs/failback"
#: The replication state machine's states that count a table as done (its ``summary``).
_DONE = ("succeeded", "unchanged")


class ReversePending(Exception):
    """The reverse run is under way on the state machine: the failback goes on once it has
    succeeded (not an error: the function answers ``COPYING``)."""

    def __init__(self, execution_arn: str, config_uri: str):
        super().__init__(execution_arn)
        self.execution_arn = execution_arn
        self.config_uri = config_uri


@dataclass(frozen=True)
class ReverseOutcome:
    """A table's outcome of the reverse run, as ``ferry.failover.config_failback`` reads it."""

    source_table: str
    ok: bool = True
    error_type: str | None = None
    error: str | None = None


class StackReverse:
    """``ferry.failover.config_failback.ReverseRun`` on the replication state machine.

    The execution started for a reverse config is recorded in ``record_folder``; asked
    again for the same config, its outcome is read rather than a second one started.
    """

    def __init__(self, sfn: Any, state_machine_arn: str, record_folder: str):
        self.sfn = sfn
        self.state_machine_arn = state_machine_arn
        self.record_folder = record_folder

    def __call__(
        self, config_uri: str, names: Sequence[str], adopt: frozenset[str]
    ) -> list[ReverseOutcome]:
        record_uri = fs.join(self.record_folder, f"{config_uri.rsplit('/', 1)[-1]}.run.json")
        record = json.loads(fs.read_bytes(record_uri)) if fs.exists(record_uri) else None
        if record is not None and record.get("configUri") == config_uri:
            described = self.sfn.describe_execution(executionArn=record["executionArn"])
            status = described["status"]
            if status == "RUNNING":
                raise ReversePending(record["executionArn"], config_uri)
            if status == "SUCCEEDED":
                return self._outcomes(described, names)
            # Failed, stopped or timed out: a new run goes on from what that one committed.
        execution_input = {"configUri": config_uri, "tables": list(names), "adopt": sorted(adopt)}
        arn = self.sfn.start_execution(
            stateMachineArn=self.state_machine_arn,
            name=f"failback-{new_event_id()}",
            input=json.dumps(execution_input),
        )["executionArn"]
        fs.write_bytes(
            record_uri, json.dumps({"configUri": config_uri, "executionArn": arn}).encode()
        )
        raise ReversePending(arn, config_uri)

    @staticmethod
    def _outcomes(described: dict[str, Any], names: Sequence[str]) -> list[ReverseOutcome]:
        """Every table succeeded (or had nothing to do), as the execution's summary counts."""
        summary = (json.loads(described.get("output") or "{}") or {}).get("summary") or {}
        done = sum(int(summary.get(key) or 0) for key in _DONE)
        if summary.get("failed") or done < len(names):
            return [
                ReverseOutcome(
                    name, ok=False, error_type="ReverseRunIncomplete",
                    error=f"execution {described['executionArn']} counted {summary}",
                )  # fmt: skip
                for name in names
            ]
        return [ReverseOutcome(name) for name in names]


def run(
    request: FailbackInput,
    config: ReplicationConfig,
    source: Catalog,
    replica: Catalog,
    work_uri: str,
    key_of: Callable[[TableReplication], str],
    reverse: StackReverse,
    forget_reverse: Callable[[TableReplication], None],
) -> FailbackResult:
    """``plan`` or ``run`` the config's failback (see the module)."""
    replications = replications_of(config, request.tables)
    try:
        report = fail_back(
            config,
            request.config_uri,
            replications,
            source,
            replica,
            AlreadySuspended(),
            work_uri,
            key_of,
            reverse,
            prefer=Prefer(request.prefer) if request.prefer else None,
            dry_run=request.action == "plan",
            forget_reverse=forget_reverse,
            reverse_folder=fs.join(work_uri, REVERSE_FOLDER),
        )
    except ReversePending as pending:
        return FailbackResult(
            status="COPYING", execution_arn=pending.execution_arn,
            reverse_config=pending.config_uri,
        )  # fmt: skip
    return FailbackResult(
        status="PLANNED" if request.action == "plan" else "DONE",
        reverse_config=report.reverse_config,
        reverse_text=report.reverse_text,
        tables=[t.to_dict() for t in report.tables],
    )


def record_folder(work_uri: str) -> str:
    """Where the reverse runs are recorded: beside the baselines."""
    return fs.join(work_uri, FAILOVER_FOLDER)
