"""Sessions of a role in another account, whose credentials renew themselves.

A side of a replication in another account (``assume-role`` of its catalog section) is
reached with a role Ferry assumes there. STS gives a role's credentials for at most the
session's duration; a copy may run longer. botocore's ``DeferredRefreshableCredentials``
asks STS again before they expire (from the first request on, not at construction), and
every client of the session signs with the renewed ones: botocore's own machinery, the one
the SDK's profiles with ``role_arn`` use, fed by ``AssumeRole`` with Ferry's settings.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

from botocore.credentials import (
    CredentialProvider,
    CredentialResolver,
    DeferredRefreshableCredentials,
)

from ferry.core.clock import Clock, utc_now
from ferry.core.duration import parse_duration
from ferry.core.errors import AssumeRoleError

#: ``ferry.config.AssumeRole`` or ``RoleSession`` (the clients' layer reads no config: it
#: takes the role's ``role_arn``, ``external_id``, ``session_duration`` and ``session_name``).
AssumeRole = Any


def assume_role_parameters(role: AssumeRole) -> dict[str, Any]:
    """STS ``AssumeRole``'s parameters for one set of ``role``'s credentials (a
    ``ferry.config.AssumeRole`` or a ``RoleSession``)."""
    parameters: dict[str, Any] = {
        "RoleArn": role.role_arn,
        "RoleSessionName": role.session_name,
        "DurationSeconds": int(role.session_duration.total_seconds()),
    }
    if role.external_id:
        parameters["ExternalId"] = role.external_id
    return parameters


@dataclass(frozen=True)
class RoleSession:
    """A role as ``ferry.config.AssumeRole`` writes it to JSON (``model_dump(by_alias=True,
    mode="json")``), read where the config's models are not (the Spark job's environment
    has no YAML): the same ``role_arn``, ``session_duration`` and ``parameters()``."""

    role_arn: str
    external_id: str | None = None
    session_duration: timedelta = timedelta(hours=1)
    session_name: str = "ferry"

    @classmethod
    def from_json(cls, written: dict[str, Any]) -> RoleSession:
        duration = written.get("session-duration")
        return cls(
            role_arn=written["role-arn"],
            external_id=written.get("external-id"),
            session_duration=parse_duration(duration) if duration else timedelta(hours=1),
            session_name=written.get("session-name") or "ferry",
        )

    def parameters(self) -> dict[str, Any]:
        return assume_role_parameters(self)


class RoleCredentials(DeferredRefreshableCredentials):
    """An assumed role's credentials, asked for again before they expire.

    botocore renews credentials 15 minutes before they expire (and insists at 10): with a
    session of STS's shortest, 15 minutes, that would be an ``AssumeRole`` per request.
    The margins here are those, or a third (a sixth) of the session when it is shorter.
    """

    def __init__(self, role: AssumeRole, sts: Any, clock: Clock = utc_now):
        super().__init__(refresh_using=self._assume, method="assume-role", time_fetcher=clock)
        self.role = role
        self._sts = sts
        seconds = role.session_duration.total_seconds()
        # What RefreshableCredentials' ``advisory_timeout`` and ``mandatory_timeout`` set
        # (DeferredRefreshableCredentials does not pass them on).
        self._advisory_refresh_timeout = int(min(15 * 60, seconds / 3))
        self._mandatory_refresh_timeout = int(min(10 * 60, seconds / 6))
        #: How many times STS gave this role's credentials (the first, and each renewal).
        self.sessions = 0

    def _assume(self) -> dict[str, str]:
        try:
            reply = self._sts.assume_role(**self.role.parameters())
        except Exception as error:  # botocore's ClientError, or no answer at all
            raise AssumeRoleError(_refusal(self.role, error)) from None
        self.sessions += 1
        credentials = reply["Credentials"]
        return {
            "access_key": credentials["AccessKeyId"],
            "secret_key": credentials["SecretAccessKey"],
            "token": credentials["SessionToken"],
            "expiry_time": self._expiry(reply).isoformat(),
        }

    def _expiry(self, reply: dict[str, Any]) -> datetime:
        """When the credentials expire, on this process's clock: their lifetime as STS
        answered it (``Expiration`` less the answer's ``Date``) from now. A host whose clock
        is off still renews them in time (botocore compares ``Expiration`` with its own)."""
        expiration = reply["Credentials"]["Expiration"]
        answered = reply.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
        if not answered:
            return expiration
        try:
            lifetime = expiration - parsedate_to_datetime(answered)
        except (TypeError, ValueError):
            return expiration
        return self._time_fetcher() + lifetime


class _Given(CredentialProvider):
    """A credential chain of one link: the role's credentials."""

    METHOD = "assume-role"

    def __init__(self, credentials: RoleCredentials):
        super().__init__()
        self._credentials = credentials

    def load(self) -> RoleCredentials:
        return self._credentials


class _RaisedAnyway(logging.Filter):
    """botocore logs a failed mandatory renewal with its traceback, then raises it: the
    ``AssumeRoleError`` it raises is the one line a person reads, so the log entry goes."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, AssumeRoleError) and record.args == ("mandatory",))


_FILTER = _RaisedAnyway()


def role_credentials(role: AssumeRole, sts: Any, clock: Clock = utc_now) -> CredentialResolver:
    """A credential chain of ``role``'s credentials, assumed through ``sts`` (a client of
    Ferry's own session) and renewed before each set expires: for
    ``ferry.storage.aws.new_session``."""
    botocore_log = logging.getLogger("botocore.credentials")
    if _FILTER not in botocore_log.filters:
        botocore_log.addFilter(_FILTER)
    return CredentialResolver([_Given(RoleCredentials(role, sts, clock))])


def credentials_of(session: Any) -> RoleCredentials | None:
    """The role's credentials of a session made with ``role_credentials``; None for any
    other session."""
    found = session.get_credentials()
    return found if isinstance(found, RoleCredentials) else None


def _refusal(role: AssumeRole, error: Exception) -> str:
    response = getattr(error, "response", None) or {}
    detail = response.get("Error", {})
    why = (
        f"{detail.get('Code')}: {detail.get('Message')}"
        if detail.get("Code")
        else (str(error).splitlines() or [type(error).__name__])[0]
    )
    return (
        f"assume-role: Ferry may not assume {role.role_arn} ({why}); the role's trust policy "
        "must name Ferry's role (and the external id, when one is given)"
    )
