"""The role Ferry assumes to reach one side of a replication in another AWS account.

DR guidance keeps the replica in an account of its own. A catalog section names the role
(``replica-catalog.assume-role``): Ferry reaches that catalog (Glue) and the buckets of the
tables it writes there with the role's credentials, which it renews before they expire
(``ferry.storage.aws``), and every other call with its own. Circus Train's
``copier-options.assume-role`` (the role its copier writes the replica's data with) and
``assume-role-session-duration-seconds`` become this section (``translate_circus_train``).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from pydantic import field_validator

from ferry.config.base import _Model
from ferry.config.checks import check_bucket_name
from ferry.core.duration import format_duration, parse_duration

#: STS's limits on a role session (AssumeRole's ``DurationSeconds``): 15 minutes to 12 hours
#: (a role's own ``MaxSessionDuration`` may be lower: STS refuses longer with one message).
SHORTEST_SESSION = timedelta(minutes=15)
LONGEST_SESSION = timedelta(hours=12)
DEFAULT_SESSION = timedelta(hours=1)

_ROLE_ARN = re.compile(
    r"arn:aws[a-z-]*:iam::(?P<account>\d{12}):role/(?:[\w+=,.@-]+/)*(?P<name>[\w+=,.@-]{1,64})"
)
_EXTERNAL_ID = re.compile(r"[\w+=,.@:/-]{2,1224}")
_SESSION_NAME = re.compile(r"[\w+=,.@-]{2,64}")


def check_role_arn(value: Any) -> str:
    """``value`` when it is an IAM role's ARN, else ``ValueError`` saying what one looks like."""
    if not isinstance(value, str) or not _ROLE_ARN.fullmatch(value):
        raise ValueError(
            f"{value!r} is not an IAM role ARN (arn:aws:iam::<12-digit account>:role/<name>)"
        )
    return value


def parse_session_duration(value: Any) -> timedelta:
    """An ISO-8601 duration (``PT1H``) or whole seconds, within STS's limits."""
    if isinstance(value, timedelta):
        duration = value
    elif isinstance(value, int) and not isinstance(value, bool):
        duration = timedelta(seconds=value)
    elif isinstance(value, str) and value.strip().isdigit():
        duration = timedelta(seconds=int(value))
    elif isinstance(value, str):
        duration = parse_duration(value)
    else:
        raise ValueError(f"{value!r} is not a duration: give PT1H, or whole seconds")
    if not SHORTEST_SESSION <= duration <= LONGEST_SESSION:
        raise ValueError(
            f"{value!r} is outside STS's session limits: give {format_duration(SHORTEST_SESSION)}"
            f" (900 seconds) to {format_duration(LONGEST_SESSION)} (43200 seconds)"
        )
    return duration


class AssumeRole(_Model):
    """A role in another account: its ARN, the external id its trust policy asks for, how
    long each set of credentials lasts (Ferry renews them before they expire)."""

    role_arn: str
    external_id: str | None = None
    session_duration: timedelta = DEFAULT_SESSION
    #: What CloudTrail shows as the session (``<role>/<session-name>``).
    session_name: str = "ferry"
    #: Buckets reached with the role besides those of the side's table locations written in
    #: the config (``replica-table.table-location``): a source side's, say.
    buckets: tuple[str, ...] = ()

    @field_validator("buckets", mode="before")
    @classmethod
    def _buckets(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list | tuple):
            for bucket in value:
                check_bucket_name(bucket)
        return value

    @field_validator("role_arn", mode="before")
    @classmethod
    def _role_arn(cls, value: Any) -> str:
        return check_role_arn(value)

    @field_validator("external_id", mode="before")
    @classmethod
    def _external_id(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str) and not _EXTERNAL_ID.fullmatch(value):
            raise ValueError(
                f"{value!r} is not an external id STS takes: 2-1224 letters, digits or +=,.@:/-"
            )
        return value

    @field_validator("session_duration", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> timedelta:
        return parse_session_duration(value)

    @field_validator("session_name")
    @classmethod
    def _session_name(cls, value: str) -> str:
        if not _SESSION_NAME.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a role session name: 2-64 letters, digits or +=,.@-"
            )
        return value

    @property
    def account(self) -> str:
        """The account the role is in (the DR account)."""
        return self.role_arn.split(":")[4]

    def parameters(self) -> dict[str, Any]:
        """STS ``AssumeRole``'s parameters for one set of credentials."""
        # Here: the module of the role's credentials imports botocore's, which a config
        # without a role does without.
        from ferry.storage.aws_roles import assume_role_parameters

        return assume_role_parameters(self)


#: Circus Train's keys (top-level ``copier-options``) and the key of ``assume-role`` each sets.
CIRCUS_TRAIN_KEYS = {
    "assume-role": "role-arn",
    "assume-role-session-duration-seconds": "session-duration",
}


def translate_circus_train(data: Any) -> Any:
    """``data`` with the top-level ``copier-options.assume-role`` (and its session duration)
    moved to ``replica-catalog.assume-role``: the role Circus Train writes the replica's data
    with is the role Ferry reaches the replica side with.

    A bad value is a ``ValueError`` naming the key as written; both spellings are refused.
    """
    if not isinstance(data, dict) or not isinstance(data.get("copier-options"), dict):
        return data
    options = dict(data["copier-options"])
    found = {key: options.pop(key) for key in CIRCUS_TRAIN_KEYS if key in options}
    if not found:
        return data
    if "assume-role" not in found:
        raise ValueError(
            "copier-options.assume-role-session-duration-seconds: give copier-options.assume-role"
            " too (the role whose sessions last that long)"
        )
    replica = data.get("replica-catalog")
    if isinstance(replica, dict) and replica.get("assume-role") is not None:
        raise ValueError(
            "copier-options.assume-role: give replica-catalog.assume-role or Circus Train's "
            "copier-options.assume-role, not both"
        )
    section = {}
    for key, value in found.items():
        try:
            if key == "assume-role":
                check_role_arn(value)
            else:
                parse_session_duration(value)
        except ValueError as error:
            raise ValueError(f"copier-options.{key}: {error}") from None
        section[CIRCUS_TRAIN_KEYS[key]] = value
    data = {**data, "copier-options": options}
    if isinstance(replica, dict):
        data["replica-catalog"] = {**replica, "assume-role": section}
    return data
