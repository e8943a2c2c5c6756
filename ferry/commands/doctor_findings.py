"""``ferry doctor``'s answer to one check: a finding, printed as one line; a check whose AWS
call failed turned into one (``guarded``); the deployment the checks look at."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ferry.core.errors import DeploymentError

OK, FAILED, SKIPPED = "ok", "failed", "skipped"


@dataclass(frozen=True)
class Finding:
    """One check: what, its outcome, what was found, and what to do when it failed."""

    check: str
    status: str
    detail: str
    fix: str | None = None

    def line(self) -> str:
        mark = {OK: "✓", FAILED: "✗", SKIPPED: "–"}[self.status]
        text = f"{mark} {self.check}: {self.detail}"
        return f"{text} → {self.fix}" if self.fix and self.status == FAILED else text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Deployment:
    """Where the environment's stack is, if it is deployed: its outputs by name."""

    outputs: dict[str, str]
    #: How the stack was found ("CloudFormation stack Ferry-prod UPDATE_COMPLETE", ...).
    description: str


def guarded(check: str, body: Callable[[], Finding]) -> Finding:
    """A check whose call failed (denied, unreachable) is a failed check, not a crash."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return body()
    except (BotoCoreError, ClientError) as error:
        return failed_call(check, error)
    except DeploymentError as error:
        return Finding(check, FAILED, str(error), "deploy the stack again")


def failed_call(check: str, error: Exception) -> Finding:
    """A check whose AWS call failed (denied, unreachable): what AWS said."""
    from botocore.exceptions import ClientError

    if isinstance(error, ClientError):
        reply = error.response.get("Error", {})
        return Finding(check, FAILED, f"{reply.get('Code')}: {reply.get('Message', '')}")
    return Finding(check, FAILED, str(error))
