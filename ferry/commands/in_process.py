"""``ferry replicate``: the state machine's own definition, driven in this process.

The in-process driver does not have an orchestration of its own: it walks
``ferry/statemachine/replication.asl.json`` — the file the CDK deploys and the emulator runs
— state by state, and at each Task runs the same state module (``ferry/states/<state>.py``)
the state's Lambda handler runs, with the payload the state's ``Parameters`` build,
validated into the same input model, and its result as the same JSON. Choices, ``Wait``
(slept for real, at most ``LONGEST_WAIT_SECONDS``), ``Retry``, ``Catch``, ``ResultSelector``
and ``ResultPath`` are applied as Step Functions applies them (for the subset of Amazon
States Language the definition uses, ``ferry.commands.in_process_data_flow``; anything else
is refused loudly, and a unit test holds the definition to that subset). So both drivers
take the same states in the same order, choose the same copier and leave the same replica.

Where the state machine starts an EMR Serverless job run, this driver runs the same Spark
job: with ``spark-submit`` in local mode, or on EMR Serverless when the config has an
``emr-serverless`` section. A Map runs up to its ``MaxConcurrency`` items at once (the S3
server-side copy's batches, 16, each with the copier's own thread pool), or one after another
where the definition names none (the tables; ``ferry.commands.in_process_map``). Each thread
keeps the table it is in, and the state it entered last, as its own.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ferry import statemachine
from ferry.commands.in_process_data_flow import (
    build,
    catcher,
    choose,
    lambda_cause,
    next_state,
    path_value,
    place_result,
    retry_delay,
)
from ferry.commands.in_process_map import concurrency, run_items
from ferry.commands.in_process_observer import Guarded, Observer, Silent
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
        self.observer = Guarded(observer or Silent())
        self.sleep = sleep
        self.definition = statemachine.load(substitutions(), definition_path)
        #: The table this thread is in, and the data of the state it entered last.
        self._place = _Place()
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
            table = self._place.table
            self._place.current = data
            if table is None:
                self._top = data
            self._execution.states.append((table, name))
            self.observer.state_entered(table, name)
            data, following = self._run_state(name, state, data, context)
            if following is None:
                return data
            name = following

    def _run_state(
        self, name: str, state: dict[str, Any], data: Any, context: Any
    ) -> tuple[Any, str | None]:
        kind = state["Type"]
        if kind == "Choice":
            return data, choose(state, data)
        if kind == "Pass":
            if "Parameters" in state:
                result = build(state["Parameters"], data, context)
            else:
                result = deepcopy(state["Result"]) if "Result" in state else data
            return place_result(data, result, state.get("ResultPath", "$")), next_state(state)
        if kind == "Succeed":
            return data, None
        if kind == "Wait":
            # Slept for real, as Step Functions waits; bounded, so a run never hangs here.
            seconds = path_value(data, state["SecondsPath"]) if "SecondsPath" in state else None
            seconds = state.get("Seconds", 0) if seconds is None else seconds
            self.sleep(min(max(float(seconds), 0.0), LONGEST_WAIT_SECONDS))
            return data, next_state(state)
        if kind == "Fail":
            raise StateError(
                path_value(data, state["ErrorPath"])
                if "ErrorPath" in state
                else state.get("Error"),
                path_value(data, state["CausePath"])
                if "CausePath" in state
                else state.get("Cause"),
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
                delay = retry_delay(state.get("Retry", []), error.error, attempts)
                if delay is not None:
                    logger.info("%s: retrying after %s in %.1f s", name, error.error, delay)
                    self.sleep(delay)
                    continue
                catch = catcher(state.get("Catch", []), error.error)
                if catch is None:
                    raise
                failure = {"Error": error.error, "Cause": error.cause}
                return place_result(data, failure, catch.get("ResultPath", "$")), catch["Next"]
        if "ResultSelector" in state:
            result = build(state["ResultSelector"], result, context)
        return place_result(data, result, state.get("ResultPath", "$")), next_state(state)

    # -- Task and Map -----------------------------------------------------------------------

    def _execute(self, name: str, state: dict[str, Any], data: Any, context: Any) -> Any:
        if state["Type"] == "Map":
            return self._map(name, state, data, context)
        resource = state["Resource"]
        parameters = build(state.get("Parameters", {}), data, context)
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
        table = self._place.table
        # A copy in a table shows its progress: one for all of the table's copy steps at once.
        shows_progress = function in ("InlineCopy", "S3CopyBatch") and table is not None
        progress = self.observer.copy_progress(table or "", payload) if shows_progress else None
        try:
            # As the handler does: the event validated into the state's input model, the
            # result returned as its JSON.
            step_input = statemachine.payloads_of(function)[0].model_validate(payload)
            if function == "ResolveTables":
                result = self.context.run_state(function, step_input, 1)
            elif shows_progress:
                result = self.context.run_state(function, step_input, progress)
            else:
                result = self.context.run_state(function, step_input)
            return result.model_dump(mode="json")
        except KeyboardInterrupt:
            raise
        except InjectedFault as error:
            raise StateError(error.error_name, lambda_cause(error.error_name, str(error))) from None
        except Exception as error:  # the handler's error, as Lambda reports it
            if not isinstance(error, FerryError):
                logger.exception("%s failed", function)
            name = type(error).__name__
            raise StateError(name, lambda_cause(name, str(error))) from None
        finally:
            if shows_progress:
                self.observer.copy_finished(table or "")

    def _map(self, name: str, state: dict[str, Any], data: Any, context: Any) -> Any:
        """A Map's items, up to its ``MaxConcurrency`` at once; a Distributed Map's
        ``ResultWriter`` and failure tolerance as Step Functions applies them
        (``ferry.commands.in_process_map``)."""
        processor = state.get("ItemProcessor") or state["Iterator"]
        if "ItemReader" in state:
            reader = state["ItemReader"]
            if reader["Resource"] != S3_GET_OBJECT:
                raise NotImplementedError(f"state {name}: ItemReader {reader['Resource']}")
            where = build(reader["Parameters"], data, context)
            # A local work folder (file://) has no bucket: the key is then the file's path.
            items = json.loads(fs.read_bytes(fs.object_uri(where["Bucket"], where["Key"])))
            items = items if isinstance(items, list) else [items]
        else:
            items = path_value(data, state.get("ItemsPath", "$"))
        contexts = [
            # No execution runs the tables here: Plan's `$$.Execution.Id` is None, and the
            # replica's lock names this process instead (``ReplicaState.owner``).
            {"Execution": {"Id": None}, "Map": {"Item": {"Index": index, "Value": item}}}
            for index, item in enumerate(items)
        ]
        selector = state.get("ItemSelector")
        values = [build(selector, data, each) for each in contexts] if selector else list(items)
        table, current = self._place.table, self._place.current

        def run_item(index: int, value: Any) -> Any:
            # On a thread of the Map's pool, the item starts where the Map is.
            self._place.table, self._place.current = table, current
            try:
                return self._iteration(name, processor, value, contexts[index])
            finally:
                self._place.table, self._place.current = table, current

        children = run_items(
            name,
            values,
            run_item,
            limit=concurrency(state),
            tolerated=state.get("ToleratedFailurePercentage", 0),
        )
        if "ResultWriter" in state:
            target = build(state["ResultWriter"]["Parameters"], data, context)
            return write_map_results(name, target["Bucket"], target.get("Prefix", ""), children)
        return [child.get("output") for child in children]

    def _iteration(self, name: str, processor: dict[str, Any], value: Any, context: Any) -> Any:
        table = value.get("sourceTable") if isinstance(value, dict) else None
        place = self._place
        outer = place.table
        place.table = table if outer is None else outer
        started = time.monotonic()
        try:
            result = self._run_states(processor, value, context)
            if outer is None and table is not None:
                self.observer.table_finished(
                    table, result, self._execution.table_states(table), time.monotonic() - started
                )
            return result
        except KeyboardInterrupt:
            if outer is None and place.table is not None:
                self._interrupted(processor, value, context)
            raise
        finally:
            place.table = outer

    def _interrupted(self, processor: dict[str, Any], value: Any, context: Any) -> None:
        """Ctrl-C in a table: run its abort (remove the unreferenced snapshot, FAILURE)."""
        abort = processor["States"].get("Abort table")
        if abort is None:
            return
        current = self._place.current
        data = dict(current if isinstance(current, dict) else value)
        data["error"] = {
            "Error": ReplicationInterruptedError.__name__,
            "Cause": lambda_cause(ReplicationInterruptedError.__name__, "interrupted (Ctrl-C)"),
        }
        table = self._place.table
        entered = self._execution.table_states(table or "")
        data["failedState"] = entered[-1] if entered else None
        self._execution.states.append((table, "Abort table"))
        try:
            self._run_state("Abort table", abort, data, context)
        except StateError as error:  # the interruption is what the person sees
            logger.warning("abort after interruption failed: %s", error)


class _Place(threading.local):
    """Where a thread of the driver is: the table it is in, the data of its last state."""

    table: str | None = None
    current: Any = None
