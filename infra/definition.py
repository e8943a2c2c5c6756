"""The replication state machine: one ASL file, deployed by the CDK and run by the emulator.

``replication.asl.json`` is plain Amazon States Language (JSONPath) with ``${Name}``
placeholders for resource ARNs and settings, as the CDK's ``DefinitionSubstitutions``
fill them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DEFINITION_PATH = Path(__file__).parent / "statemachine" / "replication.asl.json"

#: Lambda functions by the placeholder prefix the definition uses, and their handlers.
FUNCTIONS = {
    "ResolveTables": "lambdas.resolve_tables.handler",
    "Plan": "lambdas.plan.handler",
    "InlineCopy": "lambdas.inline_copy.handler",
    "S3CopyBatch": "lambdas.s3_copy_batch.handler",
    "Commit": "lambdas.commit.handler",
    "NotifySuccess": "lambdas.notify_success.handler",
    "Abort": "lambdas.abort.handler",
    "Summarize": "lambdas.summarize.handler",
}

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9]+)\}")


def placeholders() -> set[str]:
    return set(_PLACEHOLDER.findall(DEFINITION_PATH.read_text()))


def render(substitutions: dict[str, str]) -> str:
    """The definition with every placeholder filled; a missing one is an error."""
    text = DEFINITION_PATH.read_text()
    missing = placeholders() - set(substitutions)
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


def load(substitutions: dict[str, str]) -> dict[str, Any]:
    return json.loads(render(substitutions))
