"""The AWS emulator's Lambda: this project's handlers run inside the emulator's process.

moto runs Lambda functions in Docker. Here a function whose handler names a module of this
project (``lambdas.plan.handler``) runs in-process instead, with a Lambda-like context; an
exception becomes the error payload Lambda returns (``errorType``, ``errorMessage``), so
Step Functions' ``Retry``/``Catch`` see the same error names as on AWS. The handlers share
the emulator's environment, which is how they reach the emulated services.
"""

from __future__ import annotations

import importlib
import json
import logging
import time
import traceback
import uuid
from typing import Any

from ferry import faults

logger = logging.getLogger(__name__)

#: Handlers of these packages run in-process; anything else keeps moto's behaviour.
IN_PROCESS_PACKAGES = ("lambdas.",)


class LambdaContext:
    """The attributes of AWS's Lambda context object that handlers and Powertools read."""

    def __init__(self, function: Any):
        self.function_name = function.function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = function.function_arn
        self.memory_limit_in_mb = int(function.memory_size or 128)
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function.function_name}"
        self.log_stream_name = self.aws_request_id
        self._deadline = time.monotonic() + float(function.timeout or 900)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def invoke_in_process(
    function: Any, event: Any, fault_file: faults.FaultFile | None = None
) -> tuple[str, bool, str]:
    """Run the function's handler here; (payload, errored, logs) as moto expects.

    An injected fault (``ferry.faults``) reports the error it stands for, e.g. a Lambda
    timeout as ``Sandbox.Timedout``, as Step Functions would see it.
    """
    module_name, _, attribute = function.handler.rpartition(".")
    if isinstance(event, str | bytes):
        event = json.loads(event or "{}")
    try:
        if fault_file is not None:
            fault_file.refresh()
        handler = getattr(importlib.import_module(module_name), attribute)
        result = handler(event, LambdaContext(function))
        return json.dumps(result), False, ""
    except Exception as error:  # Lambda reports the error; it does not crash the service
        name = error.error_name if isinstance(error, faults.InjectedFault) else type(error).__name__
        logger.info("%s failed: %s: %s", function.function_name, name, error)
        payload = {
            "errorMessage": str(error),
            "errorType": name,
            "stackTrace": traceback.format_exception(error),
        }
        return json.dumps(payload), True, ""


def install(fault_file: faults.FaultFile | None = None) -> None:
    """Route invocations of this project's handlers to ``invoke_in_process``."""
    from moto.awslambda.models import LambdaFunction

    docker_invoke = LambdaFunction._invoke_lambda

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        if str(self.handler).startswith(IN_PROCESS_PACKAGES):
            return invoke_in_process(self, event, fault_file)
        return docker_invoke(self, event)

    LambdaFunction._invoke_lambda = _invoke_lambda
