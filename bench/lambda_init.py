"""Each Lambda function's init time: its handler module imported in a fresh interpreter.

A Lambda cold start runs the interpreter, then imports the function's handler module
(``lambdas/<function>.py``) with the environment the function is deployed with; that init
is part of every catalog-event lag and every small run. For each function of the stack
(``ferry.statemachine.ALL_FUNCTIONS``) a fresh interpreter imports the handler module
``--runs`` times, with the deployed environment's variables (``infra/functions.py``: the
work location, the state table, the config secret, Powertools' service and namespace, the
function's name, so that Powertools' tracer is on as with ``Tracing.ACTIVE``). Beside it, in
the same run, the baseline: a fresh interpreter that imports ``boto3`` alone (what any
Python function that calls AWS pays), and one that runs nothing. Printed: each function's
median and fastest seconds, its ratio to the baseline's median, and the top-level packages
its import spends most in (``python -X importtime``, self time summed by package).

    make bench                    # or: .venv/bin/python bench/lambda_init.py --runs 5 [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from import_times import child_environment, heaviest_imports, median_seconds, shown  # noqa: E402

from ferry.statemachine import ALL_FUNCTIONS  # noqa: E402


def deployed_environment(function: str) -> dict[str, str]:
    """The variables ``infra/functions.py`` gives every function, with example values, and
    the ones Lambda itself sets."""
    return child_environment(
        {
            "AWS_LAMBDA_FUNCTION_NAME": f"ferry-dev-{function}",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
            "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "FERRY_WORK_URI": "s3://ferry-work-bench/work",
            "FERRY_STATE_TABLE": "ferry-dev-state",
            "FERRY_CONFIG_SECRET": "arn:aws:secretsmanager:us-east-1:123456789012:secret:ferry",
            "FERRY_CONFIG_SECRET_VARIABLES": "",
            "FERRY_MAX_CONCURRENCY": "4",
            "FERRY_LOCK_LEASE": "PT86400S",
            "POWERTOOLS_SERVICE_NAME": "ferry",
            "POWERTOOLS_METRICS_NAMESPACE": "Ferry",
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per function")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    arguments = parser.parse_args()
    environment = deployed_environment("Baseline")
    nothing, _ = median_seconds("pass", arguments.runs, environment)
    baseline, baseline_fastest = median_seconds("import boto3", arguments.runs, environment)
    rows = []
    for function, handler in ALL_FUNCTIONS.items():
        module = handler.rsplit(".", 1)[0]
        code = f"import {module}"
        environment = deployed_environment(function)
        median, fastest = median_seconds(code, arguments.runs, environment)
        rows.append(
            {
                "function": function,
                "module": module,
                "medianSeconds": round(median, 3),
                "fastestSeconds": round(fastest, 3),
                "ratioToBoto3": round(median / baseline, 2),
                "heaviestImports": {
                    name: round(seconds, 3) for name, seconds in heaviest_imports(code, environment)
                },
            }
        )
        if not arguments.json:
            print(f"  {function}: {median:.2f} s", flush=True)
    if arguments.json:
        print(
            json.dumps(
                {
                    "runs": arguments.runs,
                    "interpreterSeconds": round(nothing, 3),
                    "boto3Seconds": round(baseline, 3),
                    "functions": rows,
                },
                indent=2,
            )
        )
        return
    print(
        f"\nLambda init: handler module imported in a fresh interpreter, median of "
        f"{arguments.runs} (interpreter alone {nothing:.2f} s; baseline `import boto3` "
        f"{baseline:.2f} s, fastest {baseline_fastest:.2f} s)"
    )
    print("| function | median s | fastest s | ÷ import boto3 | heaviest imports (s, self time) |")
    print("| --- | ---: | ---: | ---: | --- |")
    for row in rows:
        heaviest = shown(list(row["heaviestImports"].items()))
        print(
            f"| {row['function']} | {row['medianSeconds']:.2f} | {row['fastestSeconds']:.2f} "
            f"| {row['ratioToBoto3']:.2f} | {heaviest} |"
        )


if __name__ == "__main__":
    main()
