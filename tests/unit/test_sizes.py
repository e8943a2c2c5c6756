"""Modules stay under ~400 lines and functions under ~80 (the CDK constructs' ``__init__``
included), in ``ferry/``, ``lambdas/``, ``emr_jobs/`` and ``infra/``: anything over fails,
named with its size, until it is split.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("ferry", "lambdas", "emr_jobs", "infra")
MODULE_LINES = 400
FUNCTION_LINES = 80


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


def _over(sizes: dict, limit: int, kind: str) -> list[str]:
    return [
        f"{kind} {key}: {lines} lines, over {limit}: split it"
        for key, lines in sorted(sizes.items())
        if lines > limit
    ]


def test_no_module_over_400_lines():
    modules, _ = _sizes()
    assert _over(modules, MODULE_LINES, "module") == []


def test_no_function_over_80_lines():
    _, functions = _sizes()
    assert _over(functions, FUNCTION_LINES, "function") == []


def test_the_check_names_what_is_over_and_its_size():
    sizes = {"a.py": 401, "b.py": 400, "c.py": 12}
    assert _over(sizes, MODULE_LINES, "module") == ["module a.py: 401 lines, over 400: split it"]


def test_the_walk_sees_every_folder_and_the_functions_by_class_and_nesting():
    modules, functions = _sizes()
    assert {name.split("/")[0] for name in modules} == set(FOLDERS)
    assert ("ferry/states/commit.py", "run") in functions
    tree = ast.parse("class A:\n    def f(self):\n        def g():\n            pass\n")
    assert _functions(tree) == [("A.f", 3), ("A.f.g", 2)]
