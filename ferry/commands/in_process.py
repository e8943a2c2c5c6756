"""``ferry replicate``: the state machine's own definition, driven in this process.

The in-process driver does not have an orchestration of its own: it walks
``ferry/statemachine/replication.asl.json`` — the file the CDK deploys and the emulator runs
— state by state, and at each Task runs the same state module (``ferry/states/<state>.py``)
the state's Lambda handler runs, with the payload the state's ``Parameters`` build,
validated into the same input model, and its result as the same JSON. Choices, ``Wait``
(slept for real, at most ``LONGEST_WAIT_SECONDS``), ``Retry``, ``Catch``, ``ResultSelector``
and ``ResultPath`` are applied as Step Functions applies them (for the subset of Amazon
States Language the definition uses; anything else is refused loudly, and a unit test holds
the definition to that subset). So both drivers take the same states in the same order,
choose the same copier and leave the same replica.

Where the state machine starts an EMR Serverless job run, this driver runs the same Spark
job: with ``spark-submit`` in local mode, or on EMR Serverless when the config has an
``emr-serverless`` section. The S3 server-side copy's Map runs its batches here, one after
another, each with the copier's own thread pool.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from copy import deepcopy
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ferry import statemachine
from ferry.copying.copier import Progress
from ferry.core.errors import FerryError, ReplicationInterruptedError, StateError
from ferry.core.faults import InjectedFault
from ferry.statemachine.outcomes import write_map_results
from ferry.storage import fs

logger = logging.getLogger(__name__)

LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
S3_GET_OBJECT = "arn:aws:states:::s3:getObject"
EMR_SERVERLESS_SYNC = "arn:aws:states:::emr-serverless:startJobRun.sync"
#: How this driver names the placeholders it fills (``${PlanFunctionArn}`` → ``step:Plan``).
_STEP_PREFIX = "step:"
#: The longest a Wait state sleeps here (``Wait for a copy slot`` asks again after it).
LONGEST_WAIT_SECONDS = 60.0


class SparkRunner(Protocol):
    """Runs the Spark copy job to its end; raises ``StateError`` when the job failed."""

    def run(self, name: str, entry_point_arguments: list[str]) -> dict[str, Any]: ...


class States(Protocol):
    """What the driver runs each Task's state with: ``ferry.states.context.StateContext``,
    whose ``run_state`` runs the function's state module (``ferry.statemachine.STATES``)."""

    def run_state(self, function: str, payload: Any, *extra: Any) -> Any: ...


class Observer(Protocol):
    """Told what the driver does (the CLI shows it)."""

    def state_entered(self, table: str | None, state: str) -> None: ...

    def copy_progress(self, table: str, plan: dict[str, Any]) -> Progress | None: ...

    def copy_finished(self, table: str) -> None: ...

    def table_finished(
        self, table: str, result: Any, states: list[str], seconds: float
    ) -> None: ...


class _Silent:
    def state_entered(self, table: str | None, state: str) -> None:
        pass

    def copy_progress(self, table: str, plan: dict[str, Any]) -> Progress | None:
        return None

    def copy_finished(self, table: str) -> None:
        pass

    def table_finished(self, table: str, result: Any, states: list[str], seconds: float) -> None:
        pass


@dataclass
class Execution:
    """What one run of the definition did: every state entered, and the final output."""

    status: str = "RUNNING"
    error: str | None = None
    cause: str | None = None
    output: Any = None
    #: (table or None for the top level, state name) in the order they were entered.
    states: list[tuple[str | None, str]] = field(default_factory=list)

    def table_states(self, table: str) -> list[str]:
        return [state for owner, state in self.states if owner == table]


def substitutions(entry_point: str = "emr_jobs/copy_files.py") -> dict[str, str]:
    """Placeholders filled so that each Task names the step it runs."""
    values = {f"{name}FunctionArn": f"{_STEP_PREFIX}{name}" for name in statemachine.ALL_FUNCTIONS}
    values.update(
        {
            "SparkApplicationId": "in-process",
            "SparkJobRoleArn": "in-process",
            "CopyJobEntryPoint": entry_point,
            "SparkSubmitParameters": "",
        }
    )
    return values


class InProcessDriver:
    """Runs a definition with the states' ``context``, here, one table after another.

    The replication definition by default; ``definition_path`` names another (the
    housekeeping definition, ``ferry housekeeping``), which needs no Spark runner.
    """

    def __init__(
        self,
        context: States,
        spark: SparkRunner | None,
        *,
        observer: Observer | None = None,
        sleep: Callable[[float], None] = time.sleep,
        definition_path: Path = statemachine.DEFINITION_PATH,
    ):
        self.context = context
        self.spark = spark
        self.observer = observer or _Silent()
        self.sleep = sleep
        self.definition = statemachine.load(substitutions(), definition_path)
        self._table: str | None = None
        self._current: Any = None
        self._top: Any = None
        self._execution = Execution()

    # -- the run --------------------------------------------------------------------------

    def run(self, execution_input: dict[str, Any]) -> Execution:
        """Run the whole definition on ``execution_input`` (``configUri``, ``tables``)."""
        self._execution = execution = Execution()
        try:
            execution.output = self._run_states(self.definition, deepcopy(execution_input))
            execution.status = "SUCCEEDED"
        except StateError as error:
            execution.status, execution.error, execution.cause = "FAILED", error.error, error.cause
            execution.output = self._top
        return execution

    def _run_states(self, machine: dict[str, Any], data: Any, context: Any = None) -> Any:
        states = machine["States"]
        name = machine["StartAt"]
        while True:
            state = states[name]
            self._current = data
            if self._table is None:
                self._top = data
            self._execution.states.append((self._table, name))
            self.observer.state_entered(self._table, name)
            data, following = self._run_state(name, state, data, context)
            if following is None:
                return data
            name = following

    def _run_state(
        self, name: str, state: dict[str, Any], data: Any, context: Any
    ) -> tuple[Any, str | None]:
        kind = state["Type"]
        if kind == "Choice":
            return data, _choose(state, data)
        if kind == "Pass":
            if "Parameters" in state:
                result = _build(state["Parameters"], data, context)
            else:
                result = deepcopy(state["Result"]) if "Result" in state else data
            return _place(data, result, state.get("ResultPath", "$")), _next(state)
        if kind == "Succeed":
            return data, None
        if kind == "Wait":
            # Slept for real, as Step Functions waits; bounded, so a run never hangs here.
            seconds = _get(data, state["SecondsPath"]) if "SecondsPath" in state else None
            seconds = state.get("Seconds", 0) if seconds is None else seconds
            self.sleep(min(max(float(seconds), 0.0), LONGEST_WAIT_SECONDS))
            return data, _next(state)
        if kind == "Fail":
            raise StateError(
                _get(data, state["ErrorPath"]) if "ErrorPath" in state else state.get("Error"),
                _get(data, state["CausePath"]) if "CausePath" in state else state.get("Cause"),
            )
        if kind not in ("Task", "Map"):
            raise NotImplementedError(f"state {name}: type {kind} is not driven in process")
        attempts: dict[int, int] = {}
        while True:
            # The context object's State.RetryCount, as Step Functions gives it to a retry.
            state_context = {**(context or {}), "State": {"RetryCount": sum(attempts.values())}}
            try:
                result = self._execute(name, state, data, state_context)
                break
            except StateError as error:
                delay = _retry_delay(state.get("Retry", []), error.error, attempts)
                if delay is not None:
                    logger.info("%s: retrying after %s in %.1f s", name, error.error, delay)
                    self.sleep(delay)
                    continue
                catch = _catcher(state.get("Catch", []), error.error)
                if catch is None:
                    raise
                failure = {"Error": error.error, "Cause": error.cause}
                return _place(data, failure, catch.get("ResultPath", "$")), catch["Next"]
        if "ResultSelector" in state:
            result = _build(state["ResultSelector"], result, context)
        return _place(data, result, state.get("ResultPath", "$")), _next(state)

    # -- Task and Map -----------------------------------------------------------------------

    def _execute(self, name: str, state: dict[str, Any], data: Any, context: Any) -> Any:
        if state["Type"] == "Map":
            return self._map(name, state, data, context)
        resource = state["Resource"]
        parameters = _build(state.get("Parameters", {}), data, context)
        if resource == LAMBDA_INVOKE:
            function = parameters["FunctionName"]
            if not function.startswith(_STEP_PREFIX):
                raise NotImplementedError(f"state {name}: function {function} is not a step")
            return {"Payload": self._step(function.removeprefix(_STEP_PREFIX), parameters)}
        if resource == EMR_SERVERLESS_SYNC and self.spark is not None:
            submit = parameters["JobDriver"]["SparkSubmit"]
            return self.spark.run(parameters["Name"], list(submit["EntryPointArguments"]))
        raise NotImplementedError(f"state {name}: resource {resource} is not driven in process")

    def _step(self, function: str, parameters: dict[str, Any]) -> Any:
        payload = parameters["Payload"]
        progress_for = None
        if function in ("InlineCopy", "S3CopyBatch") and self._table is not None:
            progress_for = self.observer.copy_progress
        try:
            # As the handler does: the event validated into the state's input model, the
            # result returned as its JSON.
            step_input = statemachine.PAYLOADS[function][0].model_validate(payload)
            if function == "ResolveTables":
                result = self.context.run_state(function, step_input, 1)
            elif progress_for is not None:
                progress = progress_for(self._table or "", payload)
                result = self.context.run_state(function, step_input, progress)
            else:
                result = self.context.run_state(function, step_input)
            return result.model_dump(mode="json")
        except KeyboardInterrupt:
            raise
        except InjectedFault as error:
            raise StateError(
                error.error_name, _lambda_cause(error.error_name, str(error))
            ) from None
        except Exception as error:  # the handler's error, as Lambda reports it
            if not isinstance(error, FerryError):
                logger.exception("%s failed", function)
            name = type(error).__name__
            raise StateError(name, _lambda_cause(name, str(error))) from None
        finally:
            if progress_for is not None:
                self.observer.copy_finished(self._table or "")

    def _map(self, name: str, state: dict[str, Any], data: Any, context: Any) -> Any:
        """A Map's items, one after another; a Distributed Map's ``ResultWriter`` and failure
        tolerance as Step Functions applies them (its ``MaxConcurrency`` is one here)."""
        processor = state.get("ItemProcessor") or state["Iterator"]
        if "ItemReader" in state:
            reader = state["ItemReader"]
            if reader["Resource"] != S3_GET_OBJECT:
                raise NotImplementedError(f"state {name}: ItemReader {reader['Resource']}")
            where = _build(reader["Parameters"], data, context)
            # A local work folder (file://) has no bucket: the key is then the file's path.
            items = json.loads(fs.read_bytes(fs.object_uri(where["Bucket"], where["Key"])))
            items = items if isinstance(items, list) else [items]
        else:
            items = _get(data, state.get("ItemsPath", "$"))
        tolerated = state.get("ToleratedFailurePercentage", 0)
        children: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            # No execution runs the tables here: Plan's `$$.Execution.Id` is None, and the
            # replica's lock names this process instead (``ReplicaState.owner``).
            item_context = {
                "Execution": {"Id": None},
                "Map": {"Item": {"Index": index, "Value": item}},
            }
            value = (
                _build(state["ItemSelector"], data, item_context)
                if "ItemSelector" in state
                else item
            )
            started = _now()
            try:
                output = self._iteration(name, processor, value, item_context)
            except StateError as error:
                if not tolerated:
                    # As a Map Run whose failures pass its tolerance (none, by default).
                    raise StateError(
                        "States.ExceedToleratedFailureThreshold",
                        f"The specified tolerated failure threshold was exceeded: item {index} "
                        f"of {name} failed with {error.error}: {error.cause}",
                    ) from None
                children.append(
                    {"index": index, "input": value, "status": "FAILED", "start": started,
                     "stop": _now(), "error": error.error, "cause": error.cause}
                )  # fmt: skip
                continue
            children.append(
                {"index": index, "input": value, "status": "SUCCEEDED", "start": started,
                 "stop": _now(), "output": output}
            )  # fmt: skip
        failed = sum(1 for child in children if child["status"] == "FAILED")
        if failed and failed * 100 > tolerated * len(children):
            raise StateError(
                "States.ExceedToleratedFailureThreshold",
                f"{failed} of {len(children)} items of {name} failed",
            )
        if "ResultWriter" in state:
            target = _build(state["ResultWriter"]["Parameters"], data, context)
            return write_map_results(name, target["Bucket"], target.get("Prefix", ""), children)
        return [child.get("output") for child in children]

    def _iteration(self, name: str, processor: dict[str, Any], value: Any, context: Any) -> Any:
        table = value.get("sourceTable") if isinstance(value, dict) else None
        outer, self._table = self._table, table if self._table is None else self._table
        started = time.monotonic()
        try:
            result = self._run_states(processor, value, context)
            if outer is None and table is not None:
                self.observer.table_finished(
                    table, result, self._execution.table_states(table), time.monotonic() - started
                )
            return result
        except KeyboardInterrupt:
            if outer is None and self._table is not None:
                self._interrupted(processor, value, context)
            raise
        finally:
            self._table = outer

    def _interrupted(self, processor: dict[str, Any], value: Any, context: Any) -> None:
        """Ctrl-C in a table: run its abort (remove the unreferenced snapshot, FAILURE)."""
        abort = processor["States"].get("Abort table")
        if abort is None:
            return
        data = dict(self._current if isinstance(self._current, dict) else value)
        data["error"] = {
            "Error": ReplicationInterruptedError.__name__,
            "Cause": _lambda_cause(ReplicationInterruptedError.__name__, "interrupted (Ctrl-C)"),
        }
        entered = self._execution.table_states(self._table or "")
        data["failedState"] = entered[-1] if entered else None
        self._execution.states.append((self._table, "Abort table"))
        try:
            self._run_state("Abort table", abort, data, context)
        except StateError as error:  # the interruption is what the person sees
            logger.warning("abort after interruption failed: %s", error)


def _now() -> str:
    return datetime.now(UTC).isoformat()


# -- the data flow: a JSONPath subset, as the definition uses it ------------------------------

_PATH = re.compile(r"^\$\$?(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ARRAY = re.compile(r"^States\.Array\((.*)\)$")


def _get(data: Any, path: str, context: Any = None) -> Any:
    if not _PATH.match(path):
        raise NotImplementedError(f"path {path} is not driven in process")
    value = context if path.startswith("$$") else data
    for part in [p for p in path.lstrip("$").split(".") if p]:
        value = value[part]
    return value


def _build(template: Any, data: Any, context: Any) -> Any:
    """Parameters / ResultSelector / ItemSelector: keys ending ``.$`` are paths or intrinsics."""
    if isinstance(template, dict):
        built = {}
        for key, value in template.items():
            if key.endswith(".$"):
                built[key[:-2]] = _evaluate(value, data, context)
            else:
                built[key] = _build(value, data, context)
        return built
    if isinstance(template, list):
        return [_build(item, data, context) for item in template]
    return template


def _evaluate(expression: str, data: Any, context: Any) -> Any:
    array = _ARRAY.match(expression)
    if array:
        arguments = [a.strip() for a in array.group(1).split(",")]
        return [_get(data, a, context) if a.startswith("$") else a.strip("'") for a in arguments]
    return _get(data, expression, context)


def _place(data: Any, result: Any, path: str | None) -> Any:
    """ResultPath: null keeps the input, ``$`` replaces it, ``$.a.b`` sets a field."""
    if path is None:
        return data
    if path == "$":
        return result
    if not _PATH.match(path) or path.startswith("$$"):
        raise NotImplementedError(f"ResultPath {path} is not driven in process")
    placed = dict(data)
    target = placed
    parts = path[2:].split(".")
    for part in parts[:-1]:
        target[part] = dict(target.get(part) or {})
        target = target[part]
    target[parts[-1]] = result
    return placed


def _next(state: dict[str, Any]) -> str | None:
    return None if state.get("End") else state["Next"]


def _choose(state: dict[str, Any], data: Any) -> str:
    for choice in state["Choices"]:
        value = _get(data, choice["Variable"])
        if "StringEquals" in choice and value == choice["StringEquals"]:
            return choice["Next"]
        if "NumericGreaterThan" in choice and value > choice["NumericGreaterThan"]:
            return choice["Next"]
        if "BooleanEquals" in choice and value is choice["BooleanEquals"]:
            return choice["Next"]
        if not {"StringEquals", "NumericGreaterThan", "BooleanEquals"} & set(choice):
            raise NotImplementedError(f"choice rule {choice} is not driven in process")
    return state["Default"]


def _matches(names: list[str], error: str) -> bool:
    if "States.ALL" in names or error in names:
        return True
    # States.TaskFailed matches every error of a task except the States.* ones.
    return "States.TaskFailed" in names and not error.startswith("States.")


def _retry_delay(
    retriers: list[dict[str, Any]], error: str, attempts: dict[int, int]
) -> float | None:
    for index, retrier in enumerate(retriers):
        if _matches(retrier["ErrorEquals"], error):
            made = attempts.get(index, 0)
            if made >= retrier.get("MaxAttempts", 3):
                return None
            attempts[index] = made + 1
            return retrier.get("IntervalSeconds", 1) * retrier.get("BackoffRate", 2.0) ** made
    return None


def _catcher(catchers: list[dict[str, Any]], error: str) -> dict[str, Any] | None:
    return next((c for c in catchers if _matches(c["ErrorEquals"], error)), None)


def _lambda_cause(error_type: str, message: str) -> str:
    """A Lambda function's error payload, as Step Functions puts it in ``Cause``."""
    return json.dumps({"errorMessage": message, "errorType": error_type})


# -- what a run of `ferry replicate` reports ---------------------------------------------------


@dataclass(frozen=True)
class TableOutcome:
    """What happened to one table, for people (the CLI) and machines (``--json``)."""

    source_table: str
    replica_table: str | None
    status: str  # SUCCEEDED | UNCHANGED | FAILED | PLANNED
    event_id: str | None
    seconds: float = 0.0
    mode: str | None = None
    kind: str | None = None
    copier: str | None = None
    replica_location: str | None = None
    partitions_added: int = 0
    partitions_altered: int = 0
    files: int = 0
    bytes: int = 0
    partition_filter: str | None = None
    error_type: str | None = None
    error: str | None = None
    #: After a failure: the run's snapshot, and whether it was removed or kept (referenced).
    snapshot: str | None = None
    snapshot_removed: bool = False
    #: The states this table went through, in order.
    states: tuple[str, ...] = ()
    #: What a person should know about the run, one line each (``ReplicationPlan.notices``).
    notices: tuple[str, ...] = ()
    #: A failed attempt of the same event was continued (``ferry.lifecycle.attempts``): of ``files``
    #: and ``bytes``, what it had already copied (and was not copied again).
    resumed: bool = False
    reused_files: int = 0
    reused_bytes: int = 0

    @property
    def partitions(self) -> int:
        return self.partitions_added + self.partitions_altered

    @property
    def ok(self) -> bool:
        return self.status != "FAILED"

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["states"] = list(self.states)
        data["partitions"] = self.partitions
        return data


def outcome_of(
    result: dict[str, Any], states: list[str], seconds: float, mode: str | None
) -> TableOutcome:
    """A table's outcome from the Map iteration's output (success path or Abort's result)."""
    if result.get("status") == "FAILED":
        return TableOutcome(
            source_table=result["sourceTable"],
            replica_table=result.get("replicaTable"),
            status="FAILED",
            event_id=result.get("eventId"),
            seconds=seconds,
            mode=mode,
            error_type=result.get("error"),
            error=result.get("cause"),
            snapshot=result.get("snapshot"),
            snapshot_removed=bool(result.get("snapshotRemoved")),
            states=tuple(states),
        )
    plan, notified = result.get("plan") or {}, result.get("notified") or {}
    committed = (result.get("commit") or {}).get("result") or {}
    unchanged = notified.get("status") == "UNCHANGED"
    return TableOutcome(
        source_table=result["sourceTable"],
        replica_table=plan.get("replicaTable"),
        status=notified.get("status", "SUCCEEDED"),
        # A resumed run carries its attempt's event id (Plan's), not the item's.
        event_id=plan.get("eventId") or result.get("eventId"),
        seconds=seconds,
        mode=mode,
        kind=plan.get("kind"),
        copier=plan.get("copier"),
        replica_location=plan.get("replicaLocation"),
        partitions_added=committed.get("partitionsAdded", 0),
        partitions_altered=committed.get("partitionsAltered", 0),
        files=0 if unchanged else plan.get("files", 0),
        bytes=0 if unchanged else plan.get("bytes", 0),
        partition_filter=plan.get("partitionFilter"),
        states=tuple(states),
        notices=tuple(plan.get("notices") or ()),
        resumed=bool(plan.get("resumed")),
        reused_files=0 if unchanged else plan.get("reusedFiles") or 0,
        reused_bytes=0 if unchanged else plan.get("reusedBytes") or 0,
    )


def preview_outcome(
    source_table: str, replica_table: str, mode: str, preview: dict[str, Any]
) -> TableOutcome:
    """A dry run's outcome: what Plan would decide."""
    return TableOutcome(
        source_table=source_table,
        replica_table=replica_table,
        status="PLANNED",
        event_id=None,
        mode=mode,
        kind=preview["kind"],
        copier=preview["copier"],
        replica_location=preview["replicaLocation"],
        partitions_added=preview["partitionsToAdd"],
        partitions_altered=preview["partitionsToAlter"],
        files=preview["files"],
        bytes=preview["bytes"],
        partition_filter=preview["partitionFilter"],
    )
