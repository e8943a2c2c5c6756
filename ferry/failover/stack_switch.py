"""What the deployed FailoverSwitch function does for one config (``lambdas/failover_switch.py``).

``suspend``: turn the config's rules and schedules off (all of them, or none when only some
tables fail over), stop or wait for its running executions, then release the locks and
copy slots of its tables that no running execution still holds. ``resume``: turn them on.

Every trigger is looked up before any is changed, so a rule or a schedule that does not
exist, or that the function's role may not touch (another environment's), is one
``FailoverError`` line naming it and nothing was changed. Both are idempotent: a rule
already disabled is disabled again (EventBridge accepts it), a schedule already in the
asked state is not rewritten, a claim already released is not found.

A schedule is changed with ``UpdateSchedule``, which replaces the whole schedule (AWS's
scheduler guide): every field ``GetSchedule`` gave is sent back with the new ``State``;
Scheduler checks ``iam:PassRole`` of the target's role on it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from ferry.copying.budget.dynamodb import DynamoDbSlots
from ferry.core.errors import FailoverError
from ferry.failover import SwitchReport
from ferry.replicas.ledger import DynamoDbStateStore
from ferry.statemachine.failover_payloads import FailoverSwitchInput

#: What ``GetSchedule`` answers that ``UpdateSchedule`` takes back (all of it: UpdateSchedule
#: resets what it is not sent).
SCHEDULE_FIELDS = (
    "ActionAfterCompletion", "Description", "EndDate", "FlexibleTimeWindow", "KmsKeyArn",
    "ScheduleExpression", "ScheduleExpressionTimezone", "StartDate", "Target",
)  # fmt: skip
#: How often a wait for running executions asks again.
POLL_SECONDS = 2.0
#: How long a claim's holder, a run just stopped, is given to end its tables' executions.
STOPPING_SECONDS = 30.0
#: ``ferry execute``'s copies of a config: ``…/configs/<name>-<16 hex digits>.yml``.
_EXECUTE_COPY = re.compile(r"/configs/(?P<name>.+)-[0-9a-f]{16}\.yml$")


@dataclass(frozen=True)
class StackClients:
    """The AWS clients and the stack's resources the switch works on."""

    events: Any
    scheduler: Any
    stepfunctions: Any
    dynamodb: Any
    #: The replication state machine and the change window's (their runs of the config).
    state_machines: tuple[str, ...]
    state_table: str | None
    #: The environment's Scheduler group (``ferry-<environment>``).
    schedule_group: str
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic


def switch(request: FailoverSwitchInput, stack: StackClients) -> SwitchReport:
    """Suspend or resume the config's triggers (and, suspending, its runs and claims)."""
    enabled = request.action == "resume"
    schedules = _look_up(request, stack)
    triggers = _set_rules(stack.events, request.rules, enabled)
    triggers += _set_schedules(stack.scheduler, schedules, enabled)
    if enabled:
        return SwitchReport(triggers=tuple(triggers))
    notes = []
    if not request.every_table:
        notes.append(
            f"the triggers of {request.config_name} stay on: only {', '.join(request.tables)} "
            "fail over, and each run leaves a promoted replica out"
        )
    running = _runs(request, stack)
    stopped, awaited, still = [], [], []
    if request.cancel_runs:
        for arn in running:
            _stop(stack.stepfunctions, arn, request.config_name)
            stopped.append(arn)
    elif running:
        awaited, still = _wait(stack, running, request.wait_seconds)
        for arn in still:
            notes.append(f"{arn} still runs after {request.wait_seconds} s: its claims are kept")
    released, kept = _release_claims(request, stack)
    notes += kept
    return SwitchReport(
        triggers=tuple(triggers),
        stopped_runs=tuple(stopped),
        awaited_runs=tuple(awaited),
        released_claims=released,
        notes=tuple(notes),
    )


# -- triggers


def _look_up(request: FailoverSwitchInput, stack: StackClients) -> list[dict[str, Any]]:
    """Every rule described and every schedule read before anything changes; the schedules."""
    for rule in request.rules:
        try:
            stack.events.describe_rule(Name=rule)
        except ClientError as error:
            raise FailoverError(f"rule {rule}: {_refusal(error)}") from None
    found = []
    group = stack.schedule_group
    for name in request.schedules:
        try:
            found.append(stack.scheduler.get_schedule(Name=name, GroupName=group))
        except ClientError as error:
            raise FailoverError(f"schedule {group}/{name}: {_refusal(error)}") from None
    return found


def _refusal(error: ClientError) -> str:
    code = error.response.get("Error", {}).get("Code", "")
    message = error.response.get("Error", {}).get("Message", "") or str(error)
    if code == "ResourceNotFoundException":
        return "does not exist (was the config deployed under this name?); nothing was changed"
    if code in ("AccessDeniedException", "AccessDenied"):
        return f"not this environment's to change: {message}; nothing was changed"
    return f"{code}: {message}; nothing was changed"


def _set_rules(events: Any, rules: list[str], enabled: bool) -> list[str]:
    for rule in rules:
        if enabled:
            events.enable_rule(Name=rule)
        else:
            events.disable_rule(Name=rule)
    return [f"rule {rule}" for rule in rules]


def _set_schedules(scheduler: Any, schedules: list[dict[str, Any]], enabled: bool) -> list[str]:
    state = "ENABLED" if enabled else "DISABLED"
    changed = []
    for schedule in schedules:
        if schedule.get("State") != state:
            fields = {k: schedule[k] for k in SCHEDULE_FIELDS if schedule.get(k) is not None}
            scheduler.update_schedule(
                Name=schedule["Name"], GroupName=schedule["GroupName"], State=state, **fields
            )
        changed.append(f"schedule {schedule['GroupName']}/{schedule['Name']}")
    return changed


# -- runs


def _runs(request: FailoverSwitchInput, stack: StackClients) -> list[str]:
    """The running executions of the config (of its failing-over tables, when some)."""
    found = []
    for machine in stack.state_machines:
        pages = stack.stepfunctions.get_paginator("list_executions").paginate(
            stateMachineArn=machine, statusFilter="RUNNING"
        )
        for page in pages:
            for execution in page["executions"]:
                described = stack.stepfunctions.describe_execution(
                    executionArn=execution["executionArn"]
                )
                if described["status"] == "RUNNING" and _of_config(request, described):
                    found.append(execution["executionArn"])
    return found


def _of_config(request: FailoverSwitchInput, execution: dict[str, Any]) -> bool:
    """The execution replicates the config: its deployed object, or a ``ferry execute`` copy
    of the same file name; and, for some tables, one of them (or all of its own)."""
    try:
        given = json.loads(execution.get("input") or "{}")
    except ValueError:
        return False
    uri = str(given.get("configUri", "")) if isinstance(given, dict) else ""
    copy = _EXECUTE_COPY.search(uri)
    if uri != request.config_uri and (copy is None or copy["name"] != request.config_name):
        return False
    if not request.tables:
        return True
    named = given.get("tables") or ([given["table"]] if given.get("table") else [])
    wanted = {t.lower() for t in request.tables}
    return not named or any(str(t).lower() in wanted for t in named)


def _stop(stepfunctions: Any, arn: str, config_name: str) -> None:
    try:
        stepfunctions.stop_execution(
            executionArn=arn,
            error=FailoverError.__name__,
            cause=f"ferry failover of {config_name}: its replicas are promoted",
        )
    except ClientError as error:  # ended meanwhile: nothing left to stop
        if error.response.get("Error", {}).get("Code") != "ExecutionDoesNotExist":
            raise


def _wait(stack: StackClients, running: list[str], seconds: int) -> tuple[list[str], list[str]]:
    """Wait up to ``seconds`` for the runs to end; (ended, still running)."""
    deadline = stack.monotonic() + seconds
    pending = list(running)
    while True:
        pending = [
            arn
            for arn in pending
            if stack.stepfunctions.describe_execution(executionArn=arn)["status"] == "RUNNING"
        ]
        if not pending or stack.monotonic() >= deadline:
            break
        stack.sleep(min(POLL_SECONDS, max(0.0, deadline - stack.monotonic())))
    return [arn for arn in running if arn not in pending], pending


# -- claims


def _release_claims(request: FailoverSwitchInput, stack: StackClients) -> tuple[int, list[str]]:
    """Release each replica's lock and its holder's copy slot (and place in line), unless the
    execution that holds them still runs; (how many were released, notes).

    A run stopped a moment ago may take seconds to end its tables' child executions: they
    are waited for up to ``STOPPING_SECONDS``."""
    if not stack.state_table or not request.replicas:
        return 0, []
    locks = DynamoDbStateStore(stack.dynamodb, stack.state_table)
    slots = DynamoDbSlots(stack.dynamodb, stack.state_table)
    released, notes = 0, []
    for replica in request.replicas:
        lease = locks.lease(replica)
        if lease is None:
            continue
        patience = STOPPING_SECONDS if request.cancel_runs else 0.0
        if not _ended(stack, lease.owner, patience):
            notes.append(f"{replica}: its lock is held by {lease.owner}, which still runs: kept")
            continue
        if slots.release(lease.holder):
            released += 1
        if locks.release(replica, lease.holder):
            released += 1
    return released, notes


def _ended(stack: StackClients, owner: str | None, patience: float) -> bool:
    """The holder of a claim no longer runs (or is no execution: a crashed process's claim,
    which a failover releases); waited for up to ``patience`` seconds."""
    if not owner or not owner.startswith("arn:aws:states:"):
        return True
    deadline = stack.monotonic() + patience
    while True:
        try:
            status = stack.stepfunctions.describe_execution(executionArn=owner)["status"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
                return True
            raise
        if status != "RUNNING":
            return True
        if stack.monotonic() >= deadline:
            return False
        stack.sleep(POLL_SECONDS)
