"""AWS clients, built once per run and injected into the domain.

boto3 honours the standard ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_<SERVICE>`` variables,
so the same clients talk to AWS or to the local emulator.

boto3 and botocore are imported when the first session is made, not with this module:
importing them is a noticeable share of a command's start (``docs/PERFORMANCE.md``), and a run
that reaches no AWS service (a Hive table, a local work location and state store) makes none.

Every client is configured here, once: its retries and timeouts (``ferry.storage.retry_policy``, the
only retries of an AWS call in Ferry besides the state machine's ``Retry``), its connection
pool, and for S3 how bodies are checked and sent (``s3_client``). The copiers and the file
systems all take their S3 clients from ``AwsClients``.
"""

from __future__ import annotations

import functools
import platform
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ferry import __version__
from ferry.core.clock import Clock, utc_now
from ferry.storage import retry_policy
from ferry.storage.s3 import MiB

if TYPE_CHECKING:
    import boto3
    from botocore.config import Config

#: Connections a client keeps open at least (botocore's own default is 10).
MIN_POOL_CONNECTIONS = 10


@functools.cache
def _client_config() -> Config:
    """Every client's settings (made once, with the first client)."""
    import botocore
    from botocore.config import Config

    return Config(
        # Throttling, 5xx answers, an error inside a 200 (S3's CopyObject) and dropped
        # connections are retried here, with backoff; nothing above retries the same call.
        retries={"mode": retry_policy.MODE, "total_max_attempts": retry_policy.ATTEMPTS},
        connect_timeout=retry_policy.CONNECT_TIMEOUT_SECONDS,
        read_timeout=retry_policy.READ_TIMEOUT_SECONDS,
        max_pool_connections=MIN_POOL_CONNECTIONS,
        # A fixed User-Agent: botocore otherwise rebuilds its own (with feature metadata)
        # for every request, a noticeable share of the client's CPU on a small object's copy.
        user_agent=(
            f"Ferry/{__version__} Botocore/{botocore.__version__} "
            f"Python/{platform.python_version()}"
        ),
    )


#: A check before a run (``AwsClients.probe_client``) waits this long for a connection, and
#: as long for an answer, in each of its attempts.
PROBE_TIMEOUT_SECONDS = 5
PROBE_ATTEMPTS = 3


def pool_size(connections: int | None) -> int:
    """The connection pool for ``connections`` concurrent requests, rounded up to a power of
    two so that a process holds few differently sized clients.

    A pool smaller than the threads using it does not block: urllib3 opens an extra
    connection and throws it away after the request ("Connection pool is full"), so every
    request past the pool's size pays a new TCP (and TLS) handshake.
    """
    needed = max(MIN_POOL_CONNECTIONS, connections or 0)
    return 1 << (needed - 1).bit_length()


def client_config(connections: int | None = None, **overrides: Any) -> Config:
    """Ferry's client settings with a pool for ``connections`` concurrent requests."""
    from botocore.config import Config

    return _client_config().merge(Config(max_pool_connections=pool_size(connections), **overrides))


def parse_timestamp(value: Any) -> datetime:
    """A timestamp of an AWS answer, as botocore's own parser gives it, at a fraction of its cost.

    S3 gives a listed object's ``LastModified`` in ISO 8601, which ``datetime.fromisoformat``
    reads far faster than botocore's parser (``dateutil``), whose cost was most of a
    listing's CPU (``docs/PERFORMANCE.md``). Anything else — dates in HTTP headers, epoch
    seconds, an ISO 8601 time without its zone — goes to botocore's parser.
    """
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return parsed
    import botocore.utils

    return botocore.utils.parse_timestamp(value)


def new_session(credential_resolver: Any | None = None, **arguments: Any) -> boto3.session.Session:
    """A boto3 session whose clients parse timestamps with ``parse_timestamp``.

    ``credential_resolver``: where its credentials come from instead of the SDK's chain (a
    role assumed in another account, ``ferry.storage.aws_roles``).
    """
    import boto3
    import botocore.session

    core = botocore.session.get_session()
    core.get_component("response_parser_factory").set_parser_defaults(
        timestamp_parser=parse_timestamp
    )
    if credential_resolver is not None:
        core.register_component("credential_provider", credential_resolver)
    return boto3.session.Session(botocore_session=core, **arguments)


def s3_client(
    session: boto3.session.Session,
    region: str | None,
    endpoint: str | None = None,
    connections: int | None = None,
) -> Any:
    """Ferry's S3 client: the one configuration of every S3 request Ferry sends.

    Writes carry the ``Content-MD5`` the copier computed, which S3 checks: a CRC32 that
    botocore would add on top is computed for every body and checked by no one more, so
    checksums are sent only where S3 requires one. A small body goes without waiting for
    "100 Continue" (``_no_expect_for_small_bodies``).
    """
    client = session.client(
        "s3",
        region_name=region,
        endpoint_url=endpoint,
        config=client_config(connections, request_checksum_calculation="when_required"),
    )
    for operation in ("PutObject", "UploadPart"):
        client.meta.events.register(f"before-send.s3.{operation}", _no_expect_for_small_bodies)
    return client


#: Bodies up to this size are sent without waiting for "100 Continue" (as the AWS SDK for Go,
#: which s5cmd uses, does for bodies up to 2 MiB).
EXPECT_CONTINUE_ABOVE = 2 * MiB


def _no_expect_for_small_bodies(request: Any, **_: Any) -> None:
    """Drop ``Expect: 100-continue`` from a small upload (a botocore ``before-send`` hook).

    botocore asks for it on every PutObject and UploadPart: the server answers "100
    Continue" before the body is sent, so that a refused request does not send a large
    body for nothing. For a small body already in memory that is one more exchange per
    request and no saving.
    """
    length = request.headers.get("Content-Length")
    if length is not None and int(length) <= EXPECT_CONTINUE_ABOVE and "Expect" in request.headers:
        del request.headers["Expect"]


class AwsClients:
    """Clients by service and region; ``endpoint`` overrides the environment's endpoint.

    A side of a replication in another account (its catalog's ``assume-role``) has clients
    of its own (``for_side``): the same settings, signed as the role Ferry assumes there.
    ``clock``: what those credentials' expiry is measured against.

    Its session is made when first needed (a client, the region, the credentials): a run
    that asks for none imports no boto3.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        session: boto3.session.Session | None = None,
        clock: Clock = utc_now,
    ):
        self._session = session
        self._endpoint = endpoint
        self._clock = clock
        self._clients: dict[tuple[str, str | None, int], Any] = {}
        self._roles: dict[Any, AwsClients] = {}
        # Reentrant: ``assuming`` makes its STS client under it. Clients are made under it
        # too: a boto3 session is not safe to make clients from on several threads at once
        # (the copiers' threads ask for their bucket's client together).
        self._lock = threading.RLock()

    def assuming(self, role: Any) -> AwsClients:
        """The clients of ``role``'s account (a ``ferry.config.AssumeRole``): one session per
        role (and external id, and duration), signed with the role's credentials, which STS
        renews before they expire (``ferry.storage.aws_roles``)."""
        from ferry.storage.aws_roles import role_credentials

        with self._lock:
            if role not in self._roles:
                sts = self.client("sts", self.region)
                session = new_session(
                    credential_resolver=role_credentials(role, sts, self._clock),
                    region_name=self.region,
                )
                self._roles[role] = AwsClients(self._endpoint, session, self._clock)
            return self._roles[role]

    def for_side(self, catalog: Any) -> AwsClients:
        """The clients that reach ``catalog``'s side (a ``ferry.config.CatalogConfig``): the
        role's when it names one, else these."""
        return self if catalog.assume_role is None else self.assuming(catalog.assume_role)

    @property
    def session(self) -> boto3.session.Session:
        """The session every client of these is made from (its credentials sign them)."""
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._session = new_session()
        return self._session

    def client(
        self, service: str, region: str | None = None, connections: int | None = None
    ) -> Any:
        """The client of ``service`` in ``region``; ``connections``: the requests it must carry
        at once (a copier's threads), which sizes its connection pool."""
        key = (service, region, pool_size(connections))
        client = self._clients.get(key)
        if client is not None:
            return client
        with self._lock:
            if key not in self._clients:
                if service == "s3":
                    client = s3_client(self.session, region, self._endpoint, connections)
                else:
                    client = self.session.client(
                        service,
                        region_name=region,
                        endpoint_url=self._endpoint,
                        config=client_config(connections),
                    )
                self._clients[key] = client
            return self._clients[key]

    def probe_client(self, service: str, region: str | None = None) -> Any:
        """A client for one check before a run starts: ``PROBE_ATTEMPTS`` attempts with short
        timeouts, so that an endpoint that does not answer is one line within seconds."""
        return self.session.client(
            service,
            region_name=region,
            endpoint_url=self._endpoint,
            config=client_config(
                retries={"mode": retry_policy.MODE, "total_max_attempts": PROBE_ATTEMPTS},
                connect_timeout=PROBE_TIMEOUT_SECONDS,
                read_timeout=PROBE_TIMEOUT_SECONDS,
            ),
        )

    @property
    def endpoint(self) -> str | None:
        """The endpoint every client is given, or None: the environment's (or AWS's own)."""
        return self._endpoint

    def credentials(self) -> tuple[str, str, str | None] | None:
        """The session's credentials (access key id, secret key, session token), when they
        were given to it explicitly; None when the SDK's chain finds them."""
        found = self.session.get_credentials()
        if found is None or getattr(found, "method", None) != "explicit":
            return None
        frozen = found.get_frozen_credentials()
        return frozen.access_key, frozen.secret_key, frozen.token

    @property
    def region(self) -> str | None:
        """The session's default region (where a client without one goes)."""
        return self.session.region_name

    def region_of_arn(self, arn: str) -> str | None:
        parts = arn.split(":")
        return parts[3] if len(parts) > 3 and parts[3] else None
