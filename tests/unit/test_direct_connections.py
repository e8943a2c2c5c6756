"""The direct path's own connections (``ferry.s3_objects.Connections``) against a real HTTP server.

S3 keeps a connection open between requests; the local emulator closes each one. Both
must work: a kept-alive connection is used again, a closed one opens again, and a
connection that failed is never given to the next request.
"""

from __future__ import annotations

import threading
from http.client import HTTPException
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ferry.s3_objects import Connections


class Server:
    """An HTTP/1.1 server answering each PUT with its path, and counting connections.

    A request with ``x-close`` is answered with ``Connection: close``; one with ``x-drop``
    is not answered at all (the connection is cut).
    """

    def __init__(self):
        server = self
        self.connections = 0
        self.bodies: list[bytes] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                server.connections += 1

            def do_PUT(self):
                server.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                if self.headers.get("x-drop"):
                    self.close_connection = True
                    return
                answer = self.path.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.send_header("ETag", '"abc"')
                if self.headers.get("x-close"):
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.netloc = f"127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def server():
    running = Server()
    yield running
    running.stop()


@pytest.fixture
def connections(server):
    pool = Connections("http", server.netloc, (5, 5), size=4)
    yield pool
    pool.close()


def test_a_connection_the_server_keeps_open_carries_the_next_requests(server, connections):
    answers = [connections.send("PUT", f"/b/k{i}", {}, b"x" * i) for i in range(3)]

    assert [a.content for a in answers] == [b"/b/k0", b"/b/k1", b"/b/k2"]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert answers[0].headers.get("etag") == '"abc"'  # header names in any case
    assert server.bodies == [b"", b"x", b"xx"]
    assert server.connections == 1


def test_a_connection_the_server_closes_opens_again_for_the_next_request(server, connections):
    answers = [connections.send("PUT", f"/b/k{i}", {"x-close": "1"}, b"") for i in range(3)]

    assert [a.content for a in answers] == [b"/b/k0", b"/b/k1", b"/b/k2"]
    assert server.connections == 3


def test_a_cut_connection_raises_and_the_next_request_gets_a_new_one(server, connections):
    connections.send("PUT", "/b/first", {}, b"")

    with pytest.raises((HTTPException, OSError)):
        connections.send("PUT", "/b/cut", {"x-drop": "1"}, b"body")

    assert connections.send("PUT", "/b/after", {}, b"").content == b"/b/after"
    assert server.connections == 2


def test_no_more_than_its_size_of_idle_connections_is_kept(server):
    pool = Connections("http", server.netloc, (5, 5), size=2)
    start = threading.Barrier(5)
    answers = []

    def request(index):
        start.wait()
        answers.append(pool.send("PUT", f"/b/{index}", {}, b"").status_code)

    threads = [threading.Thread(target=request, args=(i,)) for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    kept = pool._idle.qsize()
    opened = server.connections
    for index in range(10):  # one after another: a kept connection serves each
        pool.send("PUT", f"/b/again-{index}", {}, b"")
    pool.close()

    assert answers == [200] * 5
    assert 1 <= kept <= 2  # the other connections were closed when given back
    assert server.connections == opened
    assert pool._idle.qsize() == 0
