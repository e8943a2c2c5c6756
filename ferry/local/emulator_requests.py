"""The AWS emulator counts the requests it serves: how the copy benchmark counts requests.

``GET /ferry-api/requests`` answers ``{"total": n, "byKind": {"PUT": n, "PUT copy": n, …}}``
since the server started. A kind is the HTTP method, with ``copy`` added for a request that
names a copy source (``CopyObject``, ``UploadPartCopy``). Counting at the store sees every
client alike — boto3, pyarrow's C++ SDK, a Spark worker, the AWS CLI, s5cmd — so a
benchmark reads counts, not estimates. The emulator's own ``/moto-api/`` calls and these
look-ups are not counted.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

PATH = "/ferry-api/requests"

_counts: Counter[str] = Counter()
_lock = threading.Lock()


def install() -> None:
    """Count every request the server's dispatcher handles."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    dispatch = DomainDispatcherApplication.__call__

    def counting(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path == PATH:
            return _answer(start_response)
        if not path.startswith("/moto-api"):
            kind = environ.get("REQUEST_METHOD", "?")
            if "HTTP_X_AMZ_COPY_SOURCE" in environ:
                kind += " copy"
            with _lock:
                _counts[kind] += 1
        return dispatch(self, environ, start_response)

    DomainDispatcherApplication.__call__ = counting


def _answer(start_response: Any) -> list[bytes]:
    with _lock:
        body = json.dumps({"total": sum(_counts.values()), "byKind": dict(_counts)}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]
