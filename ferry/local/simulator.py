"""Would AWS allow this request? The answer of a maintained IAM policy simulator.

The local runtime evaluates requests the way AWS's authorization does: identity policies of
the caller's role, the resource's own policy (a bucket policy, a topic policy, a key policy,
a role's trust policy), every condition operator, same- and cross-account rules. It does not
decide that itself: ``ferry/local/iam/simulate.mjs`` runs ``@cloud-copilot/iam-simulate``
(pinned in ``ferry/local/iam/package-lock.json``, installed by ``make setup``) in one
long-lived Node.js process, and this module talks to it a JSON line per request.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ferry.core.errors import LocalRuntimeError

SIMULATOR_DIR = Path(__file__).resolve().parent / "iam"
SCRIPT = SIMULATOR_DIR / "simulate.mjs"
PACKAGE = SIMULATOR_DIR / "node_modules" / "@cloud-copilot" / "iam-simulate"

ALLOWED = "Allowed"
IMPLICITLY_DENIED = "ImplicitlyDenied"
EXPLICITLY_DENIED = "ExplicitlyDenied"
INVALID = "Invalid"


def simulator_problem() -> str | None:
    """Why the simulator cannot run here (one line), or None."""
    if shutil.which("node") is None:
        return "Node.js is required for the local runtime's IAM simulator (node not found)"
    if not PACKAGE.is_dir():
        return (
            f"the IAM simulator is not installed ({PACKAGE.relative_to(SIMULATOR_DIR.parents[2])}"
            " missing): run make setup"
        )
    return None


@dataclass(frozen=True)
class Request:
    """One authorization question: may ``principal`` do ``action`` on ``resource``?"""

    principal: str
    action: str
    resource: str
    resource_account: str
    identity_policies: tuple[dict[str, Any], ...] = ()
    resource_policy: dict[str, Any] | None = None
    context: dict[str, Any] = field(default_factory=dict)

    def to_json(self, request_id: int) -> str:
        return json.dumps(
            {
                "id": request_id,
                "principal": self.principal,
                "action": self.action,
                "resource": self.resource,
                "resourceAccount": self.resource_account,
                "context": self.context,
                "identityPolicies": list(self.identity_policies),
                "resourcePolicy": self.resource_policy,
            }
        )


@dataclass(frozen=True)
class Decision:
    decision: str
    detail: str | None = None

    @property
    def allowed(self) -> bool:
        return self.decision == ALLOWED


class PolicySimulator:
    """The simulator's process, started on first use; safe to call from many threads."""

    def __init__(self, node: str = "node"):
        self._node = node
        self._process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._pending: dict[int, Future[Decision]] = {}
        self._ids = itertools.count(1)

    def decide(self, request: Request) -> Decision:
        return self.decide_all([request])[0]

    def decide_all(self, requests: list[Request]) -> list[Decision]:
        futures = []
        with self._lock:
            process = self._started()
            for request in requests:
                request_id = next(self._ids)
                future: Future[Decision] = Future()
                self._pending[request_id] = future
                futures.append(future)
                assert process.stdin is not None
                process.stdin.write(request.to_json(request_id) + "\n")
            assert process.stdin is not None
            process.stdin.flush()
        return [future.result(timeout=60) for future in futures]

    def close(self) -> None:
        with self._lock:
            if self._process is not None:
                if self._process.stdin is not None:
                    self._process.stdin.close()
                self._process.wait(timeout=10)
                self._process = None

    def __enter__(self) -> PolicySimulator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _started(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            problem = simulator_problem()
            if problem:
                raise LocalRuntimeError(problem)
            self._process = subprocess.Popen(
                [self._node, str(SCRIPT)],
                cwd=SIMULATOR_DIR,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
            threading.Thread(
                target=self._read, args=(self._process,), name="iam-simulator", daemon=True
            ).start()
        return self._process

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            answer = json.loads(line)
            with self._lock:
                future = self._pending.pop(answer.get("id"), None)
            if future is not None:
                future.set_result(Decision(answer["decision"], answer.get("detail")))
        with self._lock:  # the process ended: nobody waits forever
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_result(Decision(INVALID, "the IAM simulator stopped"))
