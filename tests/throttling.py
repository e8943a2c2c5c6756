"""A local endpoint that throttles every request and counts them: S3's ``503 SlowDown``,
DynamoDB's ``ThrottlingException`` (or a ``BatchWriteItem`` that processes nothing).

What reaches it is what the SDKs sent, whichever library and process sent it (a Spark
worker too): the effective attempts of one throttled call, counted at the wire.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REGION = "us-east-1"
JSON = [("Content-Type", "application/x-amz-json-1.0")]
SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)


class ThrottlingEndpoint:
    """The endpoint's address and what it received: ``(method, path)`` → requests, and
    ``(method, DynamoDB operation)`` → requests."""

    def __init__(self, server: ThreadingHTTPServer, unprocessed: bool):
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self.received: Counter[tuple[str, str]] = Counter()
        #: The access keys the requests were signed with, by ``(method, path)``.
        self.signed_with: dict[tuple[str, str], set[str]] = {}
        self.unprocessed = unprocessed
        self.lock = threading.Lock()

    def count(self, method: str, what: str) -> int:
        with self.lock:
            return self.received[(method, what)]


@contextmanager
def throttling_endpoint(unprocessed: bool = False) -> Iterator[ThrottlingEndpoint]:
    """Serve on a free port until the block ends. A bucket's ``HeadBucket`` answers its region
    (so that a region is looked up once, not throttled); every other S3 request is ``503
    SlowDown``. DynamoDB's requests are ``ThrottlingException``, or with ``unprocessed`` a
    ``BatchWriteItem`` that answers every item unprocessed."""
    endpoint: ThrottlingEndpoint

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):  # quiet
            pass

        def _answer(self, status, body=b"", headers=()):
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _chunked(self) -> bytes:
            # The AWS SDK for C++ (pyarrow) sends a body in chunks, with a trailing checksum:
            # read it whole, else its rest would be read as the next request.
            body = b""
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline().strip():  # the trailers, up to an empty line
                pass
            return body

        def _handle(self):
            length = int(self.headers.get("Content-Length") or 0)
            if self.headers.get("Expect", "").lower() == "100-continue":
                self.send_response_only(100)
                self.end_headers()
            body = self.rfile.read(length) if length else b""
            if "chunked" in self.headers.get("Transfer-Encoding", ""):
                body = self._chunked()
            target = self.headers.get("X-Amz-Target")
            if target:  # DynamoDB's JSON protocol
                operation = target.rsplit(".", 1)[-1]
                with endpoint.lock:
                    endpoint.received[(self.command, operation)] += 1
                if endpoint.unprocessed and operation == "BatchWriteItem":
                    reply = {"UnprocessedItems": json.loads(body)["RequestItems"]}
                    self._answer(200, json.dumps(reply).encode(), JSON)
                    return
                error = {
                    "__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                    "message": "Rate of requests exceeds the allowed throughput.",
                }
                self._answer(400, json.dumps(error).encode(), JSON)
                return
            path = self.path.split("?", 1)[0]
            signature = self.headers.get("Authorization", "")
            with endpoint.lock:
                endpoint.received[(self.command, path)] += 1
                endpoint.signed_with.setdefault((self.command, path), set()).add(
                    signature.partition("Credential=")[2].split("/")[0]
                )
            if self.command == "HEAD" and path.strip("/").count("/") == 0:
                self._answer(200, headers=[("x-amz-bucket-region", REGION)])
                return
            self._answer(503, SLOW_DOWN, [("Content-Type", "application/xml")])

        do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    endpoint = ThrottlingEndpoint(server, unprocessed)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
