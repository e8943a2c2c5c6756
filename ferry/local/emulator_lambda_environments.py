"""The AWS emulator's Lambda execution environments: the processes a function's handler
runs in (``ferry.local.emulator_lambda`` routes invocations to them).

Each is a process of its own (``ferry.local.lambda_worker``), started on the first
invocation and kept for the next ones (a warm environment), more of them when invocations
overlap; a changed configuration gets new ones, as on Lambda. Each has exactly the
function's deployed environment variables and the credentials of the function's role, which
Lambda assumes for it. A function that runs past its timeout is stopped
(``Sandbox.Timedout``); a process that dies reports ``Runtime.ExitError``. Every invocation
counts in ``AWS/Lambda`` ``Invocations`` and ``Errors``, by ``FunctionName``.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from ferry.local import emulator_metrics
from ferry.local.authorization import Authorizer
from ferry.local.lambda_worker import FAULTS_FILE_VARIABLE

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
#: Warm environments kept per function when no invocation needs them.
IDLE_ENVIRONMENTS = 4
#: What the local runtime adds to a function's environment: where AWS is (the emulator), and
#: no X-Ray (there is no daemon to send segments to).
LOCAL_VARIABLES = {"POWERTOOLS_TRACE_DISABLED": "true"}


class WorkerDied(Exception):
    pass


class _Worker:
    """One execution environment: a process serving one invocation at a time."""

    def __init__(self, environment: dict[str, str], log_path: Path):
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "ab")  # noqa: SIM115 - kept open while the process lives
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ferry.local.lambda_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=environment,
            cwd=ROOT,
        )
        self._buffer = b""

    def invoke(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as error:
            raise WorkerDied(str(error)) from None
        deadline = time.monotonic() + timeout
        descriptor = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([descriptor], [], [], min(remaining, 1.0))
            if not ready:
                continue
            chunk = os.read(descriptor, 1 << 20)
            if not chunk:
                raise WorkerDied(f"exit status {self.process.wait()}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()


class ExecutionEnvironments:
    """Every function's execution environments, started and reused as Lambda does."""

    def __init__(
        self, authorizer: Authorizer, endpoint: str, log_dir: Path, fault_path: Path | None
    ):
        self.authorizer = authorizer
        self.endpoint = endpoint
        self.log_dir = log_dir
        self.fault_path = fault_path
        self._idle: dict[str, list[_Worker]] = {}
        self._lock = threading.Lock()

    def invoke(self, function: Any, event: Any) -> tuple[str, bool, str]:
        """Run ``function`` on ``event``; (payload, errored, logs) as moto expects."""
        if isinstance(event, str | bytes):
            event = json.loads(event or "{}")
        request_id = str(uuid.uuid4())
        timeout = float(function.timeout or 3)
        try:
            worker = self._acquire(function)
        except PermissionError as error:  # Lambda cannot assume the function's role
            return _error("AccessDeniedException", str(error)), True, ""
        request = {
            "event": event,
            "requestId": request_id,
            "functionArn": function.function_arn,
            "timeoutSeconds": timeout,
        }
        try:
            answer = worker.invoke(request, timeout)
        except TimeoutError:
            worker.stop()
            message = f"RequestId: {request_id} Error: Task timed out after {timeout:.2f} seconds"
            logger.info("%s timed out", function.function_name)
            record_invocation(function.function_arn, errored=True)
            return _error("Sandbox.Timedout", message), True, ""
        except WorkerDied as error:
            worker.stop()
            message = f"RequestId: {request_id} Error: Runtime exited with error: {error}"
            record_invocation(function.function_arn, errored=True)
            return _error("Runtime.ExitError", message), True, ""
        self._release(function, worker)
        record_invocation(function.function_arn, errored=not answer["ok"])
        if not answer["ok"]:
            logger.info(
                "%s failed: %s: %s",
                function.function_name,
                answer["payload"].get("errorType"),
                answer["payload"].get("errorMessage"),
            )
        return json.dumps(answer["payload"]), not answer["ok"], ""

    def stop(self) -> None:
        with self._lock:
            workers = [w for idle in self._idle.values() for w in idle]
            self._idle.clear()
        for worker in workers:
            worker.stop()

    def _acquire(self, function: Any) -> _Worker:
        key = self._key(function)
        with self._lock:
            idle = self._idle.get(key) or []
            while idle:
                worker = idle.pop()
                if worker.process.poll() is None:
                    return worker
        return _Worker(self._environment(function), self.log_dir / f"{function.function_name}.log")

    def _release(self, function: Any, worker: _Worker) -> None:
        with self._lock:
            idle = self._idle.setdefault(self._key(function), [])
            if len(idle) < IDLE_ENVIRONMENTS:
                idle.append(worker)
                return
        worker.stop()

    @staticmethod
    def _key(function: Any) -> str:
        # A changed configuration (any update: environment, role, handler...) gets new
        # environments, as on Lambda.
        configuration = json.dumps(
            [
                function.handler,
                function.role,
                function.environment_vars,
                function.description,
                function.timeout,
                function.memory_size,
                function.run_time,
                getattr(function, "last_modified", ""),
            ],
            sort_keys=True,
            default=str,
        )
        return f"{function.function_arn}#{configuration}"

    def _environment(self, function: Any) -> dict[str, str]:
        region = function.region
        credentials = self.authorizer.assume(
            function.role,
            "lambda.amazonaws.com",
            function.function_name,
            region,
            source_account=function.function_arn.split(":")[4],
        )
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8",
            "TZ": ":UTC",
            "PYTHONPATH": str(ROOT),
            "_HANDLER": function.handler,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{function.run_time}",
            "AWS_LAMBDA_FUNCTION_NAME": function.function_name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size or 128),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.function_name}",
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            "AWS_ENDPOINT_URL": self.endpoint,
            **LOCAL_VARIABLES,
            **({FAULTS_FILE_VARIABLE: str(self.fault_path)} if self.fault_path else {}),
            **{str(k): str(v) for k, v in (function.environment_vars or {}).items()},
            **credentials,
        }


def _error(error_type: str, message: str) -> str:
    return json.dumps({"errorType": error_type, "errorMessage": message})


def record_invocation(function_arn: str, errored: bool) -> None:
    """Count one invocation (and an error) of the function in moto's CloudWatch, as Lambda
    does: ``AWS/Lambda`` ``Invocations`` and ``Errors`` by ``FunctionName``."""
    _, _, _, region, account, rest = function_arn.split(":", 5)
    emulator_metrics.count(
        account, region, "AWS/Lambda", {"FunctionName": rest.split(":")[1]},
        {"Invocations": 1, "Errors": 1 if errored else 0},
    )  # fmt: skip
