"""The data flow of the in-process driver (``ferry.commands.in_process``): the subset of Amazon
States Language's JSONPath, intrinsics, Choice rules, ``Retry`` and ``Catch`` that the
definitions use, applied as Step Functions applies them. Anything else is refused loudly
(``NotImplementedError``); a unit test holds the definitions to this subset."""

from __future__ import annotations

import json
import re
from typing import Any

PATH = re.compile(r"^\$\$?(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ARRAY = re.compile(r"^States\.Array\((.*)\)$")


def path_value(data: Any, path: str, context: Any = None) -> Any:
    """The value at a reference path: ``$`` the state's data, ``$$`` the context object."""
    if not PATH.match(path):
        raise NotImplementedError(f"path {path} is not driven in process")
    value = context if path.startswith("$$") else data
    for part in [p for p in path.lstrip("$").split(".") if p]:
        value = value[part]
    return value


def build(template: Any, data: Any, context: Any) -> Any:
    """Parameters / ResultSelector / ItemSelector: keys ending ``.$`` are paths or intrinsics."""
    if isinstance(template, dict):
        built = {}
        for key, value in template.items():
            if key.endswith(".$"):
                built[key[:-2]] = _evaluate(value, data, context)
            else:
                built[key] = build(value, data, context)
        return built
    if isinstance(template, list):
        return [build(item, data, context) for item in template]
    return template


def _evaluate(expression: str, data: Any, context: Any) -> Any:
    array = _ARRAY.match(expression)
    if array:
        arguments = [a.strip() for a in array.group(1).split(",")]
        return [
            path_value(data, a, context) if a.startswith("$") else a.strip("'") for a in arguments
        ]
    return path_value(data, expression, context)


def place_result(data: Any, result: Any, path: str | None) -> Any:
    """ResultPath: null keeps the input, ``$`` replaces it, ``$.a.b`` sets a field."""
    if path is None:
        return data
    if path == "$":
        return result
    if not PATH.match(path) or path.startswith("$$"):
        raise NotImplementedError(f"ResultPath {path} is not driven in process")
    placed = dict(data)
    target = placed
    parts = path[2:].split(".")
    for part in parts[:-1]:
        target[part] = dict(target.get(part) or {})
        target = target[part]
    target[parts[-1]] = result
    return placed


def next_state(state: dict[str, Any]) -> str | None:
    return None if state.get("End") else state["Next"]


def choose(state: dict[str, Any], data: Any) -> str:
    for choice in state["Choices"]:
        value = path_value(data, choice["Variable"])
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


def retry_delay(
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


def catcher(catchers: list[dict[str, Any]], error: str) -> dict[str, Any] | None:
    return next((c for c in catchers if _matches(c["ErrorEquals"], error)), None)


def lambda_cause(error_type: str, message: str) -> str:
    """A Lambda function's error payload, as Step Functions puts it in ``Cause``."""
    return json.dumps({"errorMessage": message, "errorType": error_type})
