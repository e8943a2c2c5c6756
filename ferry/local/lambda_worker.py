"""One execution environment of a Lambda function in the local runtime.

``python -m ferry.local.lambda_worker`` is started by the emulator (``ferry.local.
emulator_lambda``) for one function, as Lambda starts an execution environment: a process
of its own, with the function's environment variables as deployed and the credentials of
the function's role, so every AWS call it makes is the role's and is authorized as on AWS.
It imports the handler once (a cold start), then serves one invocation at a time, as long
as the emulator keeps it: a JSON line in on stdin, a JSON line out on the result pipe.

Whatever the handler prints goes to the worker's log (its stderr), never into a result.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
import uuid
from typing import Any

from ferry.core import faults

#: Where the emulator's failure drills arm fail points (``ferry.core.faults.FaultFile``).
FAULTS_FILE_VARIABLE = "FERRY_LOCAL_FAULTS_FILE"


class LambdaContext:
    """The attributes of AWS's Lambda context object that handlers and Powertools read."""

    def __init__(self, request: dict[str, Any]):
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.invoked_function_arn = request.get("functionArn", "")
        self.memory_limit_in_mb = int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"))
        self.aws_request_id = request.get("requestId") or str(uuid.uuid4())
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = self.aws_request_id
        self._deadline = time.monotonic() + float(request.get("timeoutSeconds", 900))

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def serve(results: Any) -> None:
    handler_path = os.environ["_HANDLER"]
    module_name, _, attribute = handler_path.rpartition(".")
    fault_path = os.environ.get(FAULTS_FILE_VARIABLE)
    fault_file = faults.FaultFile(fault_path) if fault_path else None
    handler = None
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            if fault_file is not None:
                fault_file.refresh()
            if handler is None:
                handler = getattr(importlib.import_module(module_name), attribute)
            answer = {"ok": True, "payload": handler(request["event"], LambdaContext(request))}
        except Exception as error:  # Lambda reports the error; the environment lives on
            name = (
                error.error_name
                if isinstance(error, faults.InjectedFault)
                else type(error).__name__
            )
            answer = {
                "ok": False,
                "payload": {
                    "errorMessage": str(error),
                    "errorType": name,
                    "stackTrace": traceback.format_exception(error),
                },
            }
        results.write(json.dumps(answer, default=str) + "\n")
        results.flush()


def main() -> None:
    # The result pipe is this process's original stdout; everything printed goes to stderr.
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(results)


if __name__ == "__main__":
    main()
