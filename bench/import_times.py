"""What the fixed-cost benches share: a fresh interpreter timed, and its imports by package.

``python -X importtime`` prints one line per module imported, with the microseconds spent
in the module itself (its *self* time, its own imports excluded). Summed by top-level
package, the self times say which packages a start-up pays for, without counting a module
twice.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_seconds(code: str, environment: dict[str, str] | None = None) -> float:
    """Wall seconds of ``python -c code`` in a fresh interpreter (it must exit 0)."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True,
        env=environment or child_environment(),
    )  # fmt: skip
    return time.perf_counter() - started


def median_seconds(
    code: str, runs: int, environment: dict[str, str] | None = None
) -> tuple[float, float]:
    """The median and the fastest of ``runs`` fresh interpreters running ``code``."""
    seconds = [python_seconds(code, environment) for _ in range(runs)]
    return statistics.median(seconds), min(seconds)


def heaviest_imports(
    code: str, environment: dict[str, str] | None = None, top: int = 6
) -> list[tuple[str, float]]:
    """The top-level packages ``python -X importtime -c code`` spends most in: (name, s)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], check=True, capture_output=True,
        text=True, env=environment or child_environment(),
    )  # fmt: skip
    by_package: dict[str, float] = defaultdict(float)
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = line.removeprefix("import time:").split("|")
        package = name.strip().split(".")[0]
        by_package[package] += int(own) / 1e6
    return sorted(by_package.items(), key=lambda item: -item[1])[:top]


def child_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment, with this checkout on the path, and ``extra``."""
    return {**os.environ, "PYTHONPATH": str(ROOT), **(extra or {})}


def shown(packages: list[tuple[str, float]]) -> str:
    return ", ".join(f"{name} {seconds:.2f}" for name, seconds in packages)
