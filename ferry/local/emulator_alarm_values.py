"""The values the emulator's alarms read (``ferry.local.emulator_cloudwatch``): a statistic of
one period's datapoints, a metric math expression of the queries' values, and CloudWatch's
timestamps."""

from __future__ import annotations

import ast
import operator
from datetime import UTC, datetime
from typing import Any

_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: lambda a, b: a / b if b else float("nan"),
}


class UnsupportedAlarm(Exception):
    """What an alarm asks the emulator does not evaluate (a statistic, an expression)."""


def reduce_statistic(values: list[float], statistic: str) -> float | None:
    """``statistic`` (``Sum``, ``Average``, ``Minimum``, ``Maximum``, ``SampleCount``, or a
    percentile ``pNN``) of one period's ``values``; None when the period has none."""
    if not values:
        return None
    if statistic == "Sum":
        return sum(values)
    if statistic == "Average":
        return sum(values) / len(values)
    if statistic == "Minimum":
        return min(values)
    if statistic == "Maximum":
        return max(values)
    if statistic == "SampleCount":
        return float(len(values))
    if statistic.startswith("p"):
        ordered = sorted(values)
        rank = max(0, min(len(ordered) - 1, round(float(statistic[1:]) / 100 * len(ordered)) - 1))
        return ordered[rank]
    raise UnsupportedAlarm(f"the statistic {statistic}")


def evaluate_expression(expression: str, values: dict[str, float | None]) -> float | None:
    """A metric math expression of arithmetic on the queries' values in one period: None
    (no value) where a query it uses has none, unless ``FILL(id, number)`` gives one."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise UnsupportedAlarm(f"the expression {expression}") from None

    def walk(node: ast.AST) -> float | None:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = walk(node.left), walk(node.right)
            return None if left is None or right is None else _OPERATORS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = walk(node.operand)
            return None if operand is None else -operand
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in values:
            return values[node.id]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id.upper() == "FILL"
            and len(node.args) == 2
            and not node.keywords
        ):
            value, fill = walk(node.args[0]), walk(node.args[1])
            return fill if value is None else value
        raise UnsupportedAlarm(f"the expression {expression}")

    return walk(tree)


def dimension_name(dimension: Any) -> str:
    return dimension["Name"] if isinstance(dimension, dict) else dimension.name


def dimension_value(dimension: Any) -> str:
    return dimension["Value"] if isinstance(dimension, dict) else dimension.value


def epoch(value: Any) -> float:
    """Seconds since the epoch of a datetime, a number or an ISO 8601 text."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, int | float):
        return float(value)
    text = str(value).replace("Z", "+00:00")
    try:
        return epoch(datetime.fromisoformat(text))
    except ValueError:
        return float(text)


def iso(moment: float) -> str:
    """CloudWatch's timestamp of ``moment`` (seconds since the epoch)."""
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")
