"""AWS clients, built once per run and injected into the domain.

boto3 honours the standard ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_<SERVICE>`` variables,
so the same clients talk to AWS or to the local emulator.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

# Copies run objects and their parts on two pools of `threads`: keep enough connections.
_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=10,
    read_timeout=60,
    max_pool_connections=64,
)


class AwsClients:
    """Clients by service and region; ``endpoint`` overrides the environment's endpoint."""

    def __init__(self, endpoint: str | None = None, session: boto3.session.Session | None = None):
        self._session = session or boto3.session.Session()
        self._endpoint = endpoint
        self._clients: dict[tuple[str, str | None], Any] = {}

    def client(self, service: str, region: str | None = None) -> Any:
        key = (service, region)
        if key not in self._clients:
            self._clients[key] = self._session.client(
                service, region_name=region, endpoint_url=self._endpoint, config=_CLIENT_CONFIG
            )
        return self._clients[key]

    @property
    def region(self) -> str | None:
        """The session's default region (where a client without one goes)."""
        return self._session.region_name

    def region_of_arn(self, arn: str) -> str | None:
        parts = arn.split(":")
        return parts[3] if len(parts) > 3 and parts[3] else None
