"""The AWS emulator's EventBridge Scheduler fires rate schedules, as AWS does (moto never does).

A schedule with a ``rate(N minutes|hours|days)`` expression and a Lambda or Step Functions
target fires in the emulator: first at its ``StartDate`` or, without one, right after it is
created ("your schedule starts invoking the target immediately", AWS's schedule-types
guide), then every period until its ``EndDate``; a disabled schedule does not fire, nor
makes up for the periods it missed once enabled again (it fires at its next period). A
firing is authorized as AWS's: EventBridge Scheduler assumes the target's role (its trust
policy must allow ``scheduler.amazonaws.com``, with the schedule group as ``aws:SourceArn``),
which must allow ``lambda:InvokeFunction`` or ``states:StartExecution`` on the target. The
target's ``Input`` is sent with Scheduler's context keywords filled in
(``<aws.scheduler.scheduled-time>``, ``<aws.scheduler.schedule-arn>``,
``<aws.scheduler.execution-id>``, ``<aws.scheduler.attempt-number>``): a function is invoked
asynchronously (``ferry.local.emulator_lambda``), a state machine starts an execution.

``cron(...)`` and ``at(...)`` schedules, and other targets, are not fired: they are logged
once as such. A firing that fails is retried (the target's ``RetryPolicy``; a refusal is
not), then its input goes to the target's dead-letter queue (``DeadLetterConfig``), sent
with the schedule's role, with Scheduler's message attributes (``ERROR_CODE``,
``ERROR_MESSAGE``, ``SCHEDULE_ARN``, ``SCHEDULED_TIME``, ``TARGET_ARN``,
``EXECUTION_ID``); it is logged, and counted as AWS counts it (``AWS/Scheduler``
``TargetErrorCount`` by ``ScheduleGroup``). Every firing is a fail point,
``scheduler.<service>`` (``ferry.core.faults``). The clock is one thread of the emulator's
process: stopping the emulator stops the firing.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ferry.core import faults
from ferry.local import emulator_dead_letters, emulator_lambda, emulator_metrics
from ferry.local.authorization import Authorizer, Caller, Check
from ferry.local.ticker import Ticker

logger = logging.getLogger(__name__)

_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
#: How often the clock looks at the schedules (AWS fires within the minute that is due).
TICK_SECONDS = 1.0


def rate_seconds(expression: str) -> int | None:
    """The period of a ``rate(...)`` expression in seconds; None for any other expression."""
    found = _RATE.match(expression.strip())
    if found is None:
        return None
    return int(found.group(1)) * _UNIT_SECONDS[found.group(2).rstrip("s")]


@dataclass
class _Timing:
    """When a schedule is next due, for the definition it was computed from."""

    definition: tuple[Any, ...]
    due: float


class Scheduler:
    """Fires the emulator's rate schedules, from a thread of the emulator's process."""

    def __init__(self, authorizer: Authorizer | None, fault_file: faults.FaultFile | None = None):
        self.authorizer = authorizer
        self.fault_file = fault_file
        self._timings: dict[str, _Timing] = {}
        self._told: set[tuple[str, str]] = set()
        self._clock = Ticker("scheduler", TICK_SECONDS, lambda: self.tick(time.time()))

    def start(self) -> None:
        self._clock.start()

    def stop(self) -> None:
        self._clock.stop()

    def tick(self, now: float) -> None:
        """Fire every schedule that is due at ``now`` (epoch seconds)."""
        from moto.scheduler.models import scheduler_backends

        for account, regions in list(scheduler_backends.items()):
            for region, backend in list(regions.items()):
                for group in list(backend.schedule_groups.values()):
                    for schedule in list(group.schedules.values()):
                        self._consider(schedule, account, region, now)

    def _consider(self, schedule: Any, account: str, region: str, now: float) -> None:
        period = rate_seconds(schedule.schedule_expression)
        if period is None:
            self._tell_once(schedule.arn, f"{schedule.schedule_expression} is not fired locally")
            return
        service = schedule.target["Arn"].split(":")[2]
        if service not in ("lambda", "states"):
            self._tell_once(schedule.arn, f"a {service} target is not fired locally")
            return
        start = _epoch(schedule.start_date)
        definition = (schedule.schedule_expression, start)
        timing = self._timings.get(schedule.arn)
        if timing is None or timing.definition != definition:
            timing = self._timings[schedule.arn] = _Timing(definition, start or now)
        if not _enabled(schedule):
            # A disabled schedule does not fire, and does not make up on its re-enabling for
            # the periods it missed: it fires next at its next period.
            while timing.due <= now:
                timing.due += period
            return
        if now < timing.due:
            return
        end = _epoch(schedule.end_date)
        if end is not None and now > end:
            return
        due = timing.due
        while timing.due <= now:  # a late clock fires once, not once per missed period
            timing.due += period
        retries = int((schedule.target.get("RetryPolicy") or {}).get("MaximumRetryAttempts", 0))
        for attempt in range(retries + 1):
            try:
                self.fire(schedule, account, region, due)
                return
            except PermissionError as refused:
                logger.warning("schedule %s refused: %s", schedule.arn, refused)
                error: Exception = refused
                break
            except Exception as failed:
                logger.warning(
                    "schedule %s could not invoke %s (attempt %d): %s",
                    schedule.arn, schedule.target["Arn"], attempt + 1, failed,
                )  # fmt: skip
                error = failed
        self.dead_letter(schedule, account, region, due, error)

    def dead_letter(
        self, schedule: Any, account: str, region: str, due: float, error: Exception
    ) -> None:
        """Count a target error; the target's input to its dead-letter queue, if any."""
        emulator_metrics.count(
            account, region, "AWS/Scheduler", {"ScheduleGroup": schedule.group_name},
            {"TargetErrorCount": 1},
        )  # fmt: skip
        target = schedule.target
        queue = (target.get("DeadLetterConfig") or {}).get("Arn")
        if not queue or not target.get("RoleArn"):
            logger.error("schedule %s dropped its invocation: %s", schedule.arn, error)
            return
        attributes = {
            "ERROR_CODE": "AccessDenied"
            if isinstance(error, PermissionError)
            else getattr(error, "error_name", type(error).__name__),
            "ERROR_MESSAGE": str(error)[:1000],
            "SCHEDULE_ARN": schedule.arn,
            "SCHEDULED_TIME": datetime.fromtimestamp(int(due), UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "TARGET_ARN": target["Arn"],
            "EXECUTION_ID": str(uuid.uuid4()),
        }
        sender = emulator_dead_letters.role_session(target["RoleArn"], "scheduler")
        try:
            body = _filled(target.get("Input") or "{}", schedule.arn, due)
        except ValueError:
            body = target.get("Input") or "{}"
        emulator_dead_letters.send(self.authorizer, sender, queue, body, attributes)

    def fire(self, schedule: Any, account: str, region: str, due: float) -> None:
        """Invoke ``schedule``'s target as EventBridge Scheduler does, for the time ``due``;
        the delivery is a fail point, ``scheduler.<service>`` (``ferry.core.faults``)."""
        target = schedule.target
        arn = target["Arn"]
        service = arn.split(":")[2]
        if self.fault_file is not None:
            self.fault_file.refresh()
        faults.point(f"scheduler.{service}")
        if self.authorizer is not None:
            action = "lambda:InvokeFunction" if service == "lambda" else "states:StartExecution"
            group = f"arn:aws:scheduler:{region}:{account}:schedule-group/{schedule.group_name}"
            check = Check(action, arn)
            _authorize(self.authorizer, target.get("RoleArn"), group, check, region)
        payload = _filled(target.get("Input") or "{}", schedule.arn, due)
        if service == "lambda":
            emulator_lambda.invoke_asynchronously(arn, payload, f"schedule {schedule.name}")
            return
        from moto.stepfunctions.responses import get_backend

        machine = arn.split(":")
        name = str(uuid.uuid4())
        execution = get_backend(machine[4], machine[3]).start_execution(arn, name, payload)
        logger.info("schedule %s started %s", schedule.name, execution.execution_arn)

    def _tell_once(self, arn: str, what: str) -> None:
        if (arn, what) not in self._told:
            self._told.add((arn, what))
            logger.info("schedule %s: %s", arn, what)


def _enabled(schedule: Any) -> bool:
    """The schedule's state is ENABLED; an ``UpdateSchedule`` without ``State`` leaves it
    ENABLED (Scheduler's default: moto keeps no state at all then)."""
    return (schedule.state or "ENABLED") == "ENABLED"


def _authorize(
    authorizer: Authorizer, role_arn: str | None, group_arn: str, check: Check, region: str
) -> None:
    if not role_arn:
        raise PermissionError("the schedule's target has no role")
    authorizer.assume(role_arn, "scheduler.amazonaws.com", "scheduler", region, group_arn)
    account = role_arn.split(":")[4]
    session = f"arn:aws:sts::{account}:assumed-role/{role_arn.rsplit('/', 1)[-1]}/scheduler"
    denial = authorizer.authorize(Caller(role_arn, session, account), [check], region)
    if denial is not None:
        raise PermissionError(denial.message)


def _filled(template: str, schedule_arn: str, due: float) -> str:
    """The target's input with EventBridge Scheduler's context keywords replaced."""
    values = {
        "<aws.scheduler.scheduled-time>": datetime.fromtimestamp(int(due), UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        ),
        "<aws.scheduler.schedule-arn>": schedule_arn,
        "<aws.scheduler.execution-id>": str(uuid.uuid4()),
        "<aws.scheduler.attempt-number>": "1",
    }
    for keyword, value in values.items():
        template = template.replace(keyword, value)
    json.loads(template)  # Scheduler sends JSON; a broken input is this firing's error
    return template


def _epoch(value: Any) -> float | None:
    """A schedule's date as moto holds it (epoch seconds, or ISO text) in epoch seconds."""
    if value in (None, ""):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return float(value)
    except ValueError:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def install(
    authorizer: Authorizer | None = None, fault_file: faults.FaultFile | None = None
) -> Scheduler:
    """Start firing the emulator's rate schedules; the caller stops the returned clock."""
    scheduler = Scheduler(authorizer, fault_file)
    scheduler.start()
    return scheduler
