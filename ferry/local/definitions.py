"""What CreateStateMachine refuses: a definition the local runtime will not create.

AWS validates a state machine's definition when it is created or updated, and refuses a
wrong one with ``InvalidDefinition`` (CloudFormation then rolls the stack back). moto does
not: it stores anything and fails, or worse runs, at execution time. The local runtime
checks every definition before it creates the state machine:

- the Amazon States Language itself, by a maintained validator: ``asl-validator`` (pinned in
  ``ferry/local/iam/package-lock.json``), run by ``ferry/local/iam/validate-definition.mjs``
  in Node.js as the IAM simulator is (the schema of every state, JSONPath, reference paths
  and intrinsic functions, transitions and terminal states);
- the rules of Step Functions it does not cover: a field given twice in the JSON text, or
  twice once ``.$`` is stripped, in any payload template (``Parameters``, ``ResultSelector``,
  ``ItemSelector``, an ``ItemReader``'s or a ``ResultWriter``'s ``Parameters``); a ``.sync``
  or ``.waitForTaskToken`` resource of an integration that has no such pattern; a Task's
  ``HeartbeatSeconds`` not below its ``TimeoutSeconds``; state names of more than 80
  characters; a definition over 1 MiB.

A refused definition is one line naming the state machine, the state and the field, as
``InvalidDefinition`` does on AWS.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ferry.core.errors import LocalRuntimeError

NODE_DIR = Path(__file__).resolve().parent / "iam"
SCRIPT = NODE_DIR / "validate-definition.mjs"
PACKAGE = NODE_DIR / "node_modules" / "asl-validator"

#: Step Functions' quotas: a definition's size, a state's name.
MAX_DEFINITION_BYTES = 1024 * 1024
MAX_STATE_NAME = 80
#: The payload templates of a state (where ``.$`` fields are evaluated), by their path.
TEMPLATES = (
    ("Parameters",),
    ("ResultSelector",),
    ("ItemSelector",),
    ("ItemReader", "Parameters"),
    ("ResultWriter", "Parameters"),
)
#: The optimized integrations that run a job (``.sync``, ``.sync:2``), by service and action
#: (AWS's "Run a Job" integration pattern); no ``aws-sdk:`` integration has one.
SYNC_ACTIONS = {
    "athena": {"startQueryExecution"},
    "batch": {"submitJob"},
    "bedrock": {"createModelCustomizationJob"},
    "codebuild": {
        "startBuild",
        "startBuildBatch",
        "deleteReport",
        "stopBuild",
        "stopBuildBatch",
        "retryBuild",
        "retryBuildBatch",
        "batchDeleteBuilds",
    },
    "databrew": {"startJobRun"},
    "ecs": {"runTask"},
    "eks": {"runJob", "createCluster", "createNodegroup", "deleteCluster", "deleteNodegroup"},
    "elasticmapreduce": {"createCluster", "terminateCluster", "addStep", "cancelStep"},
    "emr-containers": {"startJobRun", "createVirtualCluster", "deleteVirtualCluster"},
    "emr-serverless": {
        "startJobRun",
        "createApplication",
        "startApplication",
        "stopApplication",
        "deleteApplication",
        "cancelJobRun",
    },
    "glue": {"startJobRun"},
    "sagemaker": {
        "createTrainingJob",
        "createTransformJob",
        "createProcessingJob",
        "createHyperParameterTuningJob",
    },
    "states": {"startExecution"},
}


class InvalidDefinitionError(LocalRuntimeError):
    """A definition Step Functions would refuse (one line)."""


def validator_problem() -> str | None:
    """Why the validator cannot run here (one line), or None."""
    if shutil.which("node") is None:
        return "Node.js is required for the local runtime's definition checks (node not found)"
    if not PACKAGE.is_dir():
        return f"the definition validator is not installed ({PACKAGE} missing): run make setup"
    return None


def check_definition(machine: str, definition: str) -> None:
    """Raise ``InvalidDefinitionError`` when Step Functions would refuse ``definition``."""
    problems = definition_problems(definition)
    if problems:
        raise InvalidDefinitionError(f"state machine {machine}: invalid definition: {problems[0]}")


def definition_problems(definition: str) -> list[str]:
    """Every reason Step Functions would refuse ``definition`` (each naming a state and a
    field where there is one); empty when it is valid."""
    if len(definition.encode()) > MAX_DEFINITION_BYTES:
        return [f"the definition has {len(definition.encode())} bytes; at most 1 MiB"]
    duplicates: list[str] = []
    try:
        document = json.loads(definition, object_pairs_hook=_pairs_noting(duplicates))
    except ValueError as error:
        return [f"not JSON: {error}"]
    if not isinstance(document, dict) or not isinstance(document.get("States"), dict):
        return ["no States"]
    problems = [f"field {key!r} appears twice in one object" for key in duplicates]
    for path, name, state in _states(document):
        problems += _state_problems(path, name, state)
    if problems:
        return problems
    return _validator_problems(definition)


def _pairs_noting(duplicates: list[str]) -> Any:
    """A ``json.loads`` hook that notes each key given twice in one object (Python keeps the
    last; Step Functions refuses the definition)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                duplicates.append(key)
            seen[key] = value
        return seen

    return pairs


def _states(
    document: dict[str, Any], path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    """(the states it is nested in, name, state) of every state, nested ones included."""
    found = []
    for name, state in (document.get("States") or {}).items():
        if not isinstance(state, dict):
            continue
        found.append((path, name, state))
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if isinstance(processor, dict):
            found += _states(processor, (*path, name))
        for branch in state.get("Branches") or []:
            if isinstance(branch, dict):
                found += _states(branch, (*path, name))
    return found


def _state_problems(path: tuple[str, ...], name: str, state: dict[str, Any]) -> list[str]:
    where = "state " + " > ".join(repr(s) for s in (*path, name))
    problems = []
    if len(name) > MAX_STATE_NAME:
        problems.append(f"{where}: the name has {len(name)} characters; at most {MAX_STATE_NAME}")
    for template in TEMPLATES:
        value: Any = state
        for part in template:
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, dict):
            problems += [f"{where}: {field}" for field in _twice(value, ".".join(template))]
    if state.get("Type") == "Task":
        problems += [f"{where}: {p}" for p in _resource_problems(state.get("Resource"))]
        timeout, heartbeat = state.get("TimeoutSeconds"), state.get("HeartbeatSeconds")
        if isinstance(timeout, int) and isinstance(heartbeat, int) and heartbeat >= timeout:
            problems.append(
                f"{where}: HeartbeatSeconds ({heartbeat}) must be below TimeoutSeconds ({timeout})"
            )
    return problems


def _twice(template: dict[str, Any], path: str) -> list[str]:
    """Fields of a payload template that are the same once ``.$`` is stripped."""
    found = []
    names: dict[str, str] = {}
    for key, value in template.items():
        bare = key.removesuffix(".$")
        if bare in names:
            found.append(
                f"field {path}.{bare} is given twice once '.$' is stripped "
                f"({names[bare]!r} and {key!r})"
            )
        names[bare] = key
        if isinstance(value, dict):
            found += _twice(value, f"{path}.{bare}")
    return found


def _resource_problems(resource: Any) -> list[str]:
    if not isinstance(resource, str) or not resource.startswith("arn:aws:states:::"):
        return []
    integration = resource.removeprefix("arn:aws:states:::")
    service, _, rest = integration.partition(":")
    action, _, pattern = rest.partition(".")
    if not pattern:
        return []
    if pattern in ("sync", "sync:2"):
        if service == "aws-sdk" or action not in SYNC_ACTIONS.get(service, set()):
            return [f"Resource {resource}: {service}:{action} has no .{pattern} integration"]
        if pattern == "sync:2" and service != "states":
            return [f"Resource {resource}: only states:startExecution has .sync:2"]
        return []
    if pattern == "waitForTaskToken":
        return []
    return [f"Resource {resource}: unknown integration pattern .{pattern}"]


def _validator_problems(definition: str) -> list[str]:
    problem = validator_problem()
    if problem:
        raise LocalRuntimeError(problem)
    done = subprocess.run(
        ["node", str(SCRIPT)],
        cwd=NODE_DIR,
        input=definition,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise LocalRuntimeError(f"the definition validator failed: {done.stderr.strip()[-300:]}")
    return [_described(error) for error in json.loads(done.stdout)["errors"]]


def _described(error: dict[str, Any]) -> str:
    """asl-validator's error, with the state and field its instance path names."""
    code, path, message = error.get("code"), error.get("path"), error.get("message", "")
    if not path:
        return f"{code}: {message}"
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.strip("/").split("/")]
    states = [parts[i + 1] for i, p in enumerate(parts[:-1]) if p == "States"]
    last = max((i for i, p in enumerate(parts[:-1]) if p == "States"), default=-1)
    field = ".".join(parts[last + 2 :]) if last >= 0 else ".".join(parts)
    detail = message.split(" is invalid. ", 1)[-1]
    if states:
        where = " > ".join(repr(s) for s in states)
        return f"state {where}: field {field or '(the state)'}: {detail} ({code})"
    return f"field {field}: {detail} ({code})"
