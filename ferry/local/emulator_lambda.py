"""The AWS emulator's Lambda: each function runs in execution environments of its own.

moto runs Lambda functions in Docker. Here a function whose handler names a module of this
project (``lambdas.plan.handler``) runs as Lambda runs it, without Docker
(``ferry.local.emulator_lambda_environments``): in a process of its own
(``ferry.local.lambda_worker``), started on the first invocation and kept for the
next ones (a warm environment), more of them when invocations overlap. Each process has
exactly the function's deployed environment variables and the credentials of the
function's role, which Lambda assumes for it (the role's trust policy must allow
``lambda.amazonaws.com``): every AWS call the handler makes is authorized as that role's
(``ferry.local.authorization``). A handler's exception becomes Lambda's error payload
(``errorType``, ``errorMessage``), so Step Functions' ``Retry``/``Catch`` see the same error
names as on AWS; a function that runs past its timeout is stopped (``Sandbox.Timedout``);
a process that dies reports ``Runtime.ExitError``.

An asynchronous invocation (a rule's, a schedule's) that fails is retried as Lambda retries
it (``MaximumRetryAttempts`` of the function's event invoke configuration, two by default),
then AWS's record of it (``requestContext`` with the condition ``RetriesExhausted``,
``requestPayload``, ``responseContext``, ``responsePayload``) goes to the function's
on-failure destination, an SQS queue, sent with the function's role
(``ferry.local.emulator_dead_letters``); without one the event is dropped, with a warning.
Lambda waits a minute, then two, between the attempts; the emulator waits
``RETRY_DELAYS_SECONDS``, so that a failure drill ends in a test's time. Every invocation
is counted in moto's CloudWatch as AWS counts it: ``AWS/Lambda`` ``Invocations`` and
``Errors``, by ``FunctionName`` (what the alarms read, ``ferry.local.emulator_cloudwatch``).

What differs from AWS is only where the code comes from: this checkout, on the same Python
as the Lambda runtime (the deployment bundles the same sources with platform wheels).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from typing import Any

from ferry.local import emulator_dead_letters
from ferry.local.authorization import Authorizer
from ferry.local.emulator_lambda_environments import IDLE_ENVIRONMENTS, ExecutionEnvironments

logger = logging.getLogger(__name__)

#: Handlers of these packages run in local execution environments; anything else keeps
#: moto's behaviour.
IN_PROCESS_PACKAGES = ("lambdas.",)
#: Asynchronous invocations (EventBridge's, Scheduler's) of one function running at once; the
#: others wait in its queue, as Lambda's internal queue holds events. Without a bound, a burst
#: of a hundred events would start a hundred processes on a machine of two cores.
ASYNC_CONCURRENCY = IDLE_ENVIRONMENTS
_async_slots: dict[str, threading.BoundedSemaphore] = {}
_async_lock = threading.Lock()
#: The waits before an asynchronous invocation's retries (Lambda's: 60 and 120 seconds).
RETRY_DELAYS_SECONDS = (1.0, 2.0)
#: Lambda's defaults for an asynchronous invocation, without an event invoke configuration.
DEFAULT_RETRY_ATTEMPTS = 2
DEFAULT_MAX_EVENT_AGE_SECONDS = 21600
_authorizer: Authorizer | None = None
#: moto's own ``LambdaBackend.invoke`` (``install`` routes ``Event`` invocations around it).
_moto_invoke: Any = None


def invoke_asynchronously(function_arn: str, payload: str, source: str) -> None:
    """Invoke a function as a service does (invocation type ``Event``): in the background.

    EventBridge rules and schedules invoke their Lambda targets this way. The invocation
    runs through moto's Lambda and so the functions' execution environments; a failed one is
    retried as Lambda does, then its record goes to the function's on-failure destination
    (``AsyncInvocation``). At most ``ASYNC_CONCURRENCY`` of one function's run at once; the
    rest wait their turn.
    """
    with _async_lock:
        slots = _async_slots.setdefault(function_arn, threading.BoundedSemaphore(ASYNC_CONCURRENCY))
    invocation = AsyncInvocation(function_arn, payload, source)

    def invoke() -> None:
        with slots:
            invocation.run()

    threading.Thread(target=invoke, name=f"invoke {function_arn}", daemon=True).start()


class AsyncInvocation:
    """One event queued for a function: its attempts, then its dead letter if they fail."""

    def __init__(self, function_arn: str, payload: str, source: str):
        self.function_arn = function_arn.split(":$LATEST")[0]
        self.payload = payload
        self.source = source
        self.request_id = str(uuid.uuid4())
        self.received = time.monotonic()

    def run(self) -> None:
        from moto.awslambda.utils import get_backend

        _, _, _, region, account, rest = self.function_arn.split(":", 5)
        backend = get_backend(account, region)
        try:
            function = backend.get_function(rest.split(":")[1])
        except Exception:  # a function that is gone: Lambda refuses the event
            logger.exception("%s could not invoke %s", self.source, self.function_arn)
            return
        config = _invoke_config(function)
        retries = int(config.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS))
        max_age = float(config.get("MaximumEventAgeInSeconds", DEFAULT_MAX_EVENT_AGE_SECONDS))
        answer, condition, attempts = "", "RetriesExhausted", 0
        for attempt in range(retries + 1):
            if attempt:
                time.sleep(RETRY_DELAYS_SECONDS[min(attempt, len(RETRY_DELAYS_SECONDS)) - 1])
            if time.monotonic() - self.received > max_age:
                condition = "EventAgeExceeded"
                break
            headers: dict[str, str] = {}
            try:
                # One attempt runs as a synchronous invocation would: its error is reported.
                answer = _moto_invoke(
                    backend,
                    function_name=self.function_arn,
                    qualifier=None,
                    body=self.payload,
                    headers={"x-amz-invocation-type": "RequestResponse"},
                    response_headers=headers,
                )
            except Exception:  # a role Lambda cannot assume...
                logger.exception("%s could not invoke %s", self.source, self.function_arn)
                return
            attempts += 1
            if not headers.get("x-amz-function-error"):
                logger.info("%s invoked %s", self.source, self.function_arn)
                return
            logger.warning(
                "%s invoked %s, which failed (attempt %d of %d): %s",
                self.source, self.function_arn, attempt + 1, retries + 1, answer,
            )  # fmt: skip
        self.fail(function, config, condition, attempts, answer)

    def fail(
        self, function: Any, config: dict[str, Any], condition: str, attempts: int, answer: Any
    ) -> None:
        """Send AWS's record of the failed event to the on-failure destination, if any."""
        destination = (
            (config.get("DestinationConfig") or {}).get("OnFailure", {}).get("Destination")
        )
        if not destination:
            logger.warning(
                "%s: %s dropped the event after %d attempts (no on-failure destination)",
                self.source, self.function_arn, attempts,
            )  # fmt: skip
            return
        record = {
            "version": "1.0",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            "requestContext": {
                "requestId": self.request_id,
                "functionArn": f"{self.function_arn}:$LATEST",
                "condition": condition,
                "approximateInvokeCount": attempts,
            },
            "requestPayload": _json(self.payload),
            "responseContext": {
                "statusCode": 200,
                "executedVersion": "$LATEST",
                "functionError": "Unhandled",
            },
            "responsePayload": _json(answer),
        }
        if destination.split(":")[2] != "sqs":
            logger.warning("%s: an on-failure destination %s is not emulated", self.source,
                           destination)  # fmt: skip
            return
        sender = emulator_dead_letters.role_session(function.role, function.function_name)
        emulator_dead_letters.send(_authorizer, sender, destination, record)


def _invoke_config(function: Any) -> dict[str, Any]:
    """The function's event invoke configuration (``PutFunctionEventInvokeConfig``)."""
    configs = getattr(function, "event_invoke_config", None) or []
    return dict(configs[-1].config) if configs else {}


def _json(text: Any) -> Any:
    if isinstance(text, bytes):
        text = text.decode()
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text


def install(environments: ExecutionEnvironments) -> None:
    """Route invocations of this project's handlers to their execution environments."""
    global _authorizer, _moto_invoke
    from moto.awslambda.models import LambdaBackend, LambdaFunction

    _authorizer = environments.authorizer
    _moto_invoke = LambdaBackend.invoke

    def invoke(
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any,
        response_headers: Any,
    ) -> Any:  # fmt: skip
        """``Invoke`` with ``InvocationType=Event`` (``ferry redrive``, a person) queues the
        event as Lambda does: accepted at once (202), run with Lambda's retries."""
        kind = headers.get("X-Amz-Invocation-Type") or headers.get("x-amz-invocation-type")
        function = self.get_function(function_name, qualifier)
        if kind == "Event" and str(function.handler).startswith(IN_PROCESS_PACKAGES):
            text = body.decode() if isinstance(body, bytes) else (body or "{}")
            invoke_asynchronously(function.function_arn, text, "Invoke (Event)")
            return b""
        return _moto_invoke(self, function_name, qualifier, body, headers, response_headers)

    LambdaBackend.invoke = invoke

    docker_invoke = LambdaFunction._invoke_lambda

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        if str(self.handler).startswith(IN_PROCESS_PACKAGES):
            return environments.invoke(self, event)
        return docker_invoke(self, event)

    LambdaFunction._invoke_lambda = _invoke_lambda
