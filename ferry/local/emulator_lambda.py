"""The AWS emulator's Lambda: each function runs in execution environments of its own.

moto runs Lambda functions in Docker. Here a function whose handler names a module of this
project (``lambdas.plan.handler``) runs as Lambda runs it, without Docker: in a process of
its own (``ferry.local.lambda_worker``), started on the first invocation and kept for the
next ones (a warm environment), more of them when invocations overlap. Each process has
exactly the function's deployed environment variables and the credentials of the
function's role, which Lambda assumes for it (the role's trust policy must allow
``lambda.amazonaws.com``): every AWS call the handler makes is authorized as that role's
(``ferry.local.authorization``). A handler's exception becomes Lambda's error payload
(``errorType``, ``errorMessage``), so Step Functions' ``Retry``/``Catch`` see the same error
names as on AWS; a function that runs past its timeout is stopped (``Sandbox.Timedout``);
a process that dies reports ``Runtime.ExitError``.

What differs from AWS is only where the code comes from: this checkout, on the same Python
as the Lambda runtime (the deployment bundles the same sources with platform wheels).
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

from ferry.local.authorization import Authorizer
from ferry.local.lambda_worker import FAULTS_FILE_VARIABLE

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
#: Handlers of these packages run in local execution environments; anything else keeps
#: moto's behaviour.
IN_PROCESS_PACKAGES = ("lambdas.",)
#: Warm environments kept per function when no invocation needs them.
IDLE_ENVIRONMENTS = 4
#: Asynchronous invocations (EventBridge's, Scheduler's) of one function running at once; the
#: others wait in its queue, as Lambda's internal queue holds events. Without a bound, a burst
#: of a hundred events would start a hundred processes on a machine of two cores.
ASYNC_CONCURRENCY = IDLE_ENVIRONMENTS
_async_slots: dict[str, threading.BoundedSemaphore] = {}
_async_lock = threading.Lock()
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
            return _error("Sandbox.Timedout", message), True, ""
        except WorkerDied as error:
            worker.stop()
            message = f"RequestId: {request_id} Error: Runtime exited with error: {error}"
            return _error("Runtime.ExitError", message), True, ""
        self._release(function, worker)
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


def invoke_asynchronously(function_arn: str, payload: str, source: str) -> None:
    """Invoke a function as a service does (invocation type ``Event``): in the background.

    EventBridge rules and schedules invoke their Lambda targets this way. The invocation
    runs through moto's Lambda and so this module's execution environments; its outcome is
    logged with ``source`` (a failed one as a warning: Lambda would retry it twice, then
    drop it or send it to the function's failure destination, which the emulator does not).
    At most ``ASYNC_CONCURRENCY`` of one function's run at once; the rest wait their turn.
    """
    from moto.awslambda.utils import get_backend

    _, _, _, region, account, _ = function_arn.split(":", 5)
    with _async_lock:
        slots = _async_slots.setdefault(function_arn, threading.BoundedSemaphore(ASYNC_CONCURRENCY))

    def invoke() -> None:
        with slots:
            _invoke()

    def _invoke() -> None:
        headers: dict[str, str] = {}
        try:
            answer = get_backend(account, region).invoke(
                function_name=function_arn,
                qualifier=None,
                body=payload,
                headers={"x-amz-invocation-type": "Event"},
                response_headers=headers,
            )
        except Exception:  # a function that is gone, a role Lambda cannot assume...
            logger.exception("%s could not invoke %s", source, function_arn)
            return
        if headers.get("x-amz-function-error"):
            logger.warning("%s invoked %s, which failed: %s", source, function_arn, answer)
        else:
            logger.info("%s invoked %s", source, function_arn)

    threading.Thread(target=invoke, name=f"invoke {function_arn}", daemon=True).start()


def install(environments: ExecutionEnvironments) -> None:
    """Route invocations of this project's handlers to their execution environments."""
    from moto.awslambda.models import LambdaFunction

    docker_invoke = LambdaFunction._invoke_lambda

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        if str(self.handler).startswith(IN_PROCESS_PACKAGES):
            return environments.invoke(self, event)
        return docker_invoke(self, event)

    LambdaFunction._invoke_lambda = _invoke_lambda
