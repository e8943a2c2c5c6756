"""Modules stay under ~400 lines and functions under ~80 (the CDK constructs' ``__init__``
included), in ``ferry/``, ``lambdas/``, ``emr_jobs/`` and ``infra/``.

What is still over is listed below with its size today: the list only shrinks. An entry fails
the test when it grows beyond its listed size, and when it no longer exceeds the limit (delete
it then); anything new over the limit fails until it is split.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("ferry", "lambdas", "emr_jobs", "infra")
MODULE_LINES = 400
FUNCTION_LINES = 80

#: module → its lines today, for the modules still over ``MODULE_LINES``.
MODULES_OVER: dict[str, int] = {}

#: (module, qualified function) → its lines today, for the functions still over
#: ``FUNCTION_LINES``.
FUNCTIONS_OVER: dict[tuple[str, str], int] = {}


def _modules() -> list[Path]:
    return sorted(
        path
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if "node_modules" not in path.parts
    )


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int]]:
    """Every function of ``tree`` with its qualified name (``Class.method``,
    ``function.inner``) and its lines, decorators excluded."""
    found: list[tuple[str, int]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            found.append((name, node.end_lineno - node.lineno + 1))
            found.extend(_functions(node, f"{name}."))
        elif isinstance(node, ast.ClassDef):
            found.extend(_functions(node, f"{prefix}{node.name}."))
        else:
            found.extend(_functions(node, prefix))
    return found


def _sizes() -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    modules: dict[str, int] = {}
    functions: dict[tuple[str, str], int] = {}
    for path in _modules():
        name = path.relative_to(ROOT).as_posix()
        source = path.read_text()
        modules[name] = len(source.splitlines())
        for function, lines in _functions(ast.parse(source)):
            functions[(name, function)] = lines
    return modules, functions


def _check(sizes: dict, allowed: dict, limit: int, kind: str) -> list[str]:
    problems = []
    for key, lines in sorted(sizes.items()):
        if lines <= limit:
            continue
        if key not in allowed:
            problems.append(f"{kind} {key}: {lines} lines, over {limit}: split it")
        elif lines > allowed[key]:
            problems.append(f"{kind} {key}: {lines} lines, grew beyond its listed {allowed[key]}")
    for key, listed in sorted(allowed.items()):
        if sizes.get(key, 0) <= limit:
            problems.append(
                f"{kind} {key}: listed at {listed} lines but now {sizes.get(key, 'gone')}, "
                f"within {limit}: delete its entry"
            )
    return problems


def test_no_module_over_400_lines_but_those_listed():
    modules, _ = _sizes()
    assert _check(modules, MODULES_OVER, MODULE_LINES, "module") == []


def test_no_function_over_80_lines_but_those_listed():
    _, functions = _sizes()
    assert _check(functions, FUNCTIONS_OVER, FUNCTION_LINES, "function") == []


def test_the_check_fails_on_growth_on_a_new_one_and_on_a_stale_entry():
    """The guard itself: an entry that grew, one that is new, one that shrank within the limit."""
    sizes = {"a.py": 450, "b.py": 500, "c.py": 300}
    allowed = {"a.py": 440, "c.py": 420}
    problems = _check(sizes, allowed, MODULE_LINES, "module")
    assert problems == [
        "module a.py: 450 lines, grew beyond its listed 440",
        "module b.py: 500 lines, over 400: split it",
        "module c.py: listed at 420 lines but now 300, within 400: delete its entry",
    ]


def test_functions_are_named_by_class_and_nesting():
    tree = ast.parse("class A:\n    def f(self):\n        def g():\n            pass\n")
    assert _functions(tree) == [("A.f", 3), ("A.f.g", 2)]
