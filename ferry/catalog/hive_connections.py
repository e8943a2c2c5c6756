"""A Hive metastore's connections: the first URI that answers like a metastore, pooled.

An open port is not enough to count as a metastore: the first call is a cheap one under a
short timeout, and only a Thrift reply (a value or a metastore error) counts as an answer.
Calls share a small pool of clients, so sequential calls reuse one and concurrent ones
(a partition listing's pages) each get their own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore import ttypes
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TException
from thrift.transport import TSocket, TTransport

from ferry.core.errors import CatalogUnreachableError, NotAMetastoreError

CONNECT_TIMEOUT_MS = 10_000
# A metastore answers its first, cheap call at once. Without this bound, a port that is not
# a metastore (an HTTP server, a listener that never answers) would hold each table for
# CALL_TIMEOUT_MS before failing.
FIRST_RESPONSE_TIMEOUT_MS = 10_000
CALL_TIMEOUT_MS = 600_000  # add_partitions of 1000 on a busy metastore can take minutes
# Any key will do: a metastore answers getMetaConf with the value or with a MetaException.
_PROBE_KEY = "hive.metastore.batch.retrieve.max"

R = TypeVar("R")


class MetastoreConnections:
    """The pooled Thrift clients of the metastore ``name``, behind ``uris`` (tried in order)."""

    def __init__(self, name: str, uris: Sequence[str]):
        self.name = name
        self.uris = list(uris)
        self.description = ",".join(self.uris)
        self._idle: list[hmsclient.HMSClient] = []
        self._lock = threading.Lock()

    def _connect(self) -> hmsclient.HMSClient:
        """A client of the first URI that answers like a Hive metastore."""
        errors, answered_wrongly = [], 0
        for uri in self.uris:
            host, _, port = uri.removeprefix("thrift://").rpartition(":")
            socket = TSocket.TSocket(host.strip("[]"), int(port))  # [::1] is an IPv6 host
            socket.setTimeout(CONNECT_TIMEOUT_MS)
            client = hmsclient.HMSClient(
                # The C-accelerated codec: a page of 1000 partitions decodes ~10x faster.
                iprot=TBinaryProtocol.TBinaryProtocolAccelerated(
                    TTransport.TBufferedTransport(socket)
                )
            )
            try:
                client.open()
            except TException as error:
                errors.append(f"{uri} ({error})")
                continue
            socket.setTimeout(FIRST_RESPONSE_TIMEOUT_MS)
            try:
                client.getMetaConf(_PROBE_KEY)
            except (ttypes.MetaException, TApplicationException):
                pass  # a Thrift server's own error reply: it answered
            except Exception as error:  # a timeout, or bytes that are not a Thrift reply
                socket.close()
                errors.append(f"{uri} ({_not_a_metastore(error)})")
                answered_wrongly += 1
                continue
            socket.setTimeout(CALL_TIMEOUT_MS)
            return client
        message = f"cannot reach Hive metastore '{self.name}' at {', '.join(errors)}"
        if answered_wrongly == len(self.uris):
            # Something listens there, but not a metastore: a mistake, not worth retrying.
            raise NotAMetastoreError(message)
        raise CatalogUnreachableError(message)

    def call(self, operation: Callable[[hmsclient.HMSClient], R]) -> R:
        """Run ``operation`` on a pooled Thrift client (a lost connection is
        ``CatalogUnreachableError``, and the client is not reused)."""
        with self._lock:
            client = self._idle.pop() if self._idle else None
        if client is None:
            # thrift logs each refused connection at ERROR before we report it in one line.
            logging.getLogger("thrift.transport.TSocket").setLevel(logging.CRITICAL)
            client = self._connect()
        try:
            result = operation(client)
        except TTransport.TTransportException as error:
            client.close()  # broken: not returned to the pool
            raise CatalogUnreachableError(
                f"lost the connection to Hive metastore '{self.name}' ({self.description}): {error}"
            ) from None
        except TException:
            self._release(client)  # the metastore's error reply, read whole: still usable
            raise
        except BaseException:
            # Interrupted mid-call (Ctrl-C, a timeout of the caller's): the reply may be half
            # read, and a held catalog's next state must not read the rest of it.
            client.close()
            raise
        self._release(client)
        return result

    def _release(self, client: hmsclient.HMSClient) -> None:
        with self._lock:
            self._idle.append(client)

    def close(self) -> None:
        with self._lock:
            clients, self._idle = self._idle, []
        for client in clients:
            client.close()


def _not_a_metastore(error: Exception) -> str:
    """Why a port that accepted the connection is taken for something else."""
    if (
        isinstance(error, TTransport.TTransportException)
        and error.type == TTransport.TTransportException.TIMED_OUT
    ):
        return (
            "connected, but it did not answer like a Hive metastore within "
            f"{FIRST_RESPONSE_TIMEOUT_MS // 1000} s"
        )
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"connected, but it did not answer like a Hive metastore: {reason}"
