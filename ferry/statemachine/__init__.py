"""The state machines: one ASL file each, deployed by the CDK (``infra/``), run by the
emulator and walked by ``ferry replicate`` (``ferry.commands.in_process``).

``replication.asl.json`` is plain Amazon States Language (JSONPath) with ``${Name}``
placeholders for resource ARNs and settings, as the CDK's ``DefinitionSubstitutions``
fill them. ``housekeeping.asl.json`` is the second, small definition: one Task that
deletes superseded snapshots, run on a schedule (``HOUSEKEEPING_FUNCTIONS``).
``catalog_changes.asl.json``, the third, is one table's change window (``ferry.feeds``):
wait, claim the changes, run the replication state machine, close or follow up
(``CHANGES_FUNCTIONS``). The feeds' own two functions start it: the intake of AWS Glue's
events and the Hive poller (``FEED_FUNCTIONS``); no definition invokes them.

Each Lambda task is one function (its handler in ``lambdas/<state>.py``), which runs one
state module (``ferry/states/<state>.py``, ``STATES``) on one input model and returns one
result model (one module per group of functions: ``replication_payloads``,
``housekeeping_payloads``, ``feed_payloads``, ``check_payloads``, ``failover_payloads``, each
keeping the rules of ``payloads``); ``PAYLOADS`` names them, and a test holds the
definition's paths to the models' fields.

Each definition carries its own ``TimeoutSeconds`` (the replication 24 h, housekeeping 2 h,
the change window 50 h: its wait, a replication and a follow-up), and every Task and Map of
each one has a ``Retry`` and a ``Catch``.

Beside the definitions: what travels between their states (``payloads`` and the
``*_payloads`` modules), the tables' items
and outcomes as the Map over the tables reads and writes them (``outcomes``), and an
execution started and followed (``executions``) or redriven (``execution_redrive``).
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

from ferry.core.errors import transient_errors

DEFINITION_PATH = Path(__file__).parent / "replication.asl.json"
HOUSEKEEPING_PATH = Path(__file__).parent / "housekeeping.asl.json"
CHANGES_PATH = Path(__file__).parent / "catalog_changes.asl.json"

#: Lambda functions by the placeholder prefix the definition uses, and their handlers.
FUNCTIONS = {
    "ResolveTables": "lambdas.resolve_tables.handler",
    "Plan": "lambdas.plan.handler",
    "InlineCopy": "lambdas.inline_copy.handler",
    "S3CopyBatch": "lambdas.s3_copy_batch.handler",
    "CopySlot": "lambdas.copy_slot.handler",
    "Commit": "lambdas.commit.handler",
    "NotifySuccess": "lambdas.notify_success.handler",
    "Abort": "lambdas.abort.handler",
    "Summarize": "lambdas.summarize.handler",
}

#: The housekeeping definition's functions, as above.
HOUSEKEEPING_FUNCTIONS = {"Housekeeping": "lambdas.housekeeping.handler"}

#: The change window definition's functions (their state modules run ``ferry.feeds``).
CHANGES_FUNCTIONS = {
    "ClaimChanges": "lambdas.claim_changes.handler",
    "CloseWindow": "lambdas.close_window.handler",
}
#: The functions that start the change window: an EventBridge rule's target (AWS Glue's
#: events) and a schedule's (the Hive poller). No definition invokes them.
FEED_FUNCTIONS = {
    "CatalogEvents": "lambdas.catalog_events.handler",
    "CatalogPoller": "lambdas.catalog_poller.handler",
}
#: The functions that watch the replicas instead of replicating: the freshness check, started
#: by a schedule (``ferry.freshness.metrics``). No definition invokes them.
CHECK_FUNCTIONS = {"FreshnessCheck": "lambdas.freshness_check.handler"}
#: What a rule or a schedule invokes, outside every execution: their failures go to a
#: dead-letter queue of their own and are alarmed on (``infra/functions.py``).
OUT_OF_BAND_FUNCTIONS = {**FEED_FUNCTIONS, **CHECK_FUNCTIONS}
#: The functions a person's command invokes, synchronously (``ferry failover`` and
#: ``ferry failback``: the failover switch, ``ferry.failover.stack_switch``; the failover's
#: checks, baselines and promotions, ``ferry.failover.stack_failover``; the failback,
#: ``ferry.failover.stack_failback``). No definition, rule
#: or schedule invokes them: their caller reads their error.
OPERATOR_FUNCTIONS = {
    "FailoverSwitch": "lambdas.failover_switch.handler",
    "Failover": "lambdas.failover.handler",
    "Failback": "lambdas.failback.handler",
}

#: The input and result model of each function's step (what travels in and out of its state):
#: the module of its group, and the two models' names in it (``payloads_of``).
_PAYLOADS: dict[str, tuple[str, str, str]] = {
    "ResolveTables": ("replication_payloads", "ResolveTablesInput", "ResolveTablesResult"),
    "Plan": ("replication_payloads", "PlanInput", "PlanResult"),
    "InlineCopy": ("replication_payloads", "PlannedRun", "InlineCopyResult"),
    "S3CopyBatch": ("replication_payloads", "CopyBatchInput", "CopyBatchResult"),
    "CopySlot": ("replication_payloads", "CopySlotInput", "CopySlotResult"),
    "Commit": ("replication_payloads", "PlannedRun", "CommitResult"),
    "NotifySuccess": ("replication_payloads", "PlannedRun", "NotifySuccessResult"),
    "Abort": ("replication_payloads", "AbortInput", "AbortResult"),
    "Summarize": ("replication_payloads", "SummarizeInput", "SummarizeResult"),
    "Housekeeping": ("housekeeping_payloads", "HousekeepingInput", "HousekeepingResult"),
    "ClaimChanges": ("feed_payloads", "ChangeWindowInput", "ClaimResult"),
    "CloseWindow": ("feed_payloads", "CloseWindowInput", "CloseWindowResult"),
    "CatalogEvents": ("feed_payloads", "CatalogEventInput", "IntakeResult"),
    "CatalogPoller": ("feed_payloads", "PollInput", "PollResult"),
    "FreshnessCheck": ("check_payloads", "FreshnessCheckInput", "FreshnessCheckResult"),
    "FailoverSwitch": ("failover_payloads", "FailoverSwitchInput", "FailoverSwitchResult"),
    "Failover": ("failover_payloads", "FailoverInput", "FailoverResult"),
    "Failback": ("failover_payloads", "FailbackInput", "FailbackResult"),
}


def payloads_of(function: str) -> tuple[type[BaseModel], type[BaseModel]]:
    """The input and result model of ``function``'s step, its group's module imported now:
    a run imports the payloads of the functions it runs, not every state machine's."""
    module, input_model, result_model = _PAYLOADS[function]
    group = importlib.import_module(f"{__name__}.{module}")
    return getattr(group, input_model), getattr(group, result_model)


def __getattr__(name: str) -> Any:
    """``PAYLOADS``: every function's pair of models (``payloads_of``), every group imported."""
    if name == "PAYLOADS":
        return {function: payloads_of(function) for function in _PAYLOADS}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Every function (what a deployment creates), and the definitions.
ALL_FUNCTIONS = {
    **FUNCTIONS,
    **HOUSEKEEPING_FUNCTIONS,
    **CHANGES_FUNCTIONS,
    **OUT_OF_BAND_FUNCTIONS,
    **OPERATOR_FUNCTIONS,
}
#: The state module each function's handler runs (``ferry/states/<state>.py``, named after
#: the handler's module ``lambdas/<state>.py``): the same module the in-process driver
#: (``ferry.commands.in_process``) runs for the replication and housekeeping definitions' functions.
STATES = {
    function: "ferry.states." + handler.split(".")[1] for function, handler in ALL_FUNCTIONS.items()
}
DEFINITIONS = (DEFINITION_PATH, HOUSEKEEPING_PATH, CHANGES_PATH)

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9]+)\}")


#: Lambda's own transient errors (AWS's best practice is to retry them all).
LAMBDA_SERVICE_ERRORS = (
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
)
#: A function that ran out of time (newer runtimes report Sandbox.Timedout, older ones
#: Lambda.Unknown). Every step is safe to run again for the same event, so all retry them.
LAMBDA_TIMEOUT_ERRORS = ("Sandbox.Timedout", "Lambda.Unknown")


def retry_policy() -> list[dict[str, Any]]:
    """The one Retry policy of every Lambda step, derived from Ferry's transient errors."""
    return [
        {
            "ErrorEquals": [*transient_errors(), *LAMBDA_SERVICE_ERRORS, *LAMBDA_TIMEOUT_ERRORS],
            "IntervalSeconds": 1,
            "MaxAttempts": 3,
            "BackoffRate": 2.0,
        }
    ]


def lambda_tasks(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: state
        for name, state in states(document).items()
        if state.get("Resource") == "arn:aws:states:::lambda:invoke"
    }


def write_retry_policy(path: Path = DEFINITION_PATH) -> None:
    """Rewrite every Lambda step's Retry in the definition file from ``retry_policy``."""
    document = json.loads(path.read_text())
    for state in lambda_tasks(document).values():
        state["Retry"] = retry_policy()
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def placeholders(path: Path = DEFINITION_PATH) -> set[str]:
    return set(_PLACEHOLDER.findall(path.read_text()))


def render(substitutions: dict[str, str], path: Path = DEFINITION_PATH) -> str:
    """The definition with every placeholder filled; a missing one is an error."""
    text = path.read_text()
    missing = placeholders(path) - set(substitutions)
    if missing:
        raise KeyError(f"no value for placeholders {sorted(missing)}")
    return _PLACEHOLDER.sub(lambda m: substitutions[m.group(1)], text)


def states(definition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every state of the definition, nested Map processors included, by name."""
    found: dict[str, dict[str, Any]] = {}
    for name, state in definition["States"].items():
        found[name] = state
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if processor:
            found.update(states(processor))
        for branch in state.get("Branches", []):
            found.update(states(branch))
    return found


def load(substitutions: dict[str, str], path: Path = DEFINITION_PATH) -> dict[str, Any]:
    return json.loads(render(substitutions, path))


def timeout_seconds(path: Path = DEFINITION_PATH) -> int:
    """How long an execution of the definition at ``path`` may run (its ``TimeoutSeconds``).

    The replication's is also the replica locks' lease in the pipeline: a lock outlives no
    execution that could still hold it, and no execution outlives its lock.
    """
    return int(json.loads(path.read_text())["TimeoutSeconds"])
