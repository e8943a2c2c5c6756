"""Run the AWS emulator: moto's server, with Ferry's extensions, on a local port.

Clients reach it through the standard ``AWS_ENDPOINT_URL`` variable, so Ferry's code has no
branch for it. The pipeline's Lambda handlers and Spark jobs run in processes of their own,
with their deployed environment and their role's credentials (``ferry.local.
emulator_lambda``, ``emulator_emr_serverless``). Its state is saved under ``state_dir/aws``
and restored at the next start (``ferry.local.emulator_snapshot``).
"""

from __future__ import annotations

import os
import sys
import urllib.request
from pathlib import Path

from ferry.core.errors import LocalRuntimeError
from ferry.local import emulator_requests, emulator_snapshot, processes

# Credentials and region the emulator accepts; real ones are never needed locally.
EMULATOR_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def endpoint_url(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def is_ready(port: int) -> bool:
    """The server answers a request (``GET /ferry-api/requests``: cheap, whatever its state;
    moto's ``/moto-api/data.json`` reads every model it holds, and fails on some of them, such
    as a completed multipart upload's parts)."""
    try:
        with urllib.request.urlopen(
            f"{endpoint_url(port)}{emulator_requests.PATH}", timeout=2
        ) as reply:
            return reply.status == 200
    except OSError:
        return False


def start_emulator(
    state_dir: Path, port: int, name: str = "aws", timeout: float = 60.0
) -> processes.ManagedProcess:
    """Start a moto server on ``port``, logging under ``state_dir``."""
    if processes.port_in_use(port):
        raise LocalRuntimeError(f"port {port} is already in use; pick another with --aws-port")
    env = {
        **os.environ,
        **EMULATOR_ENVIRONMENT,
        # moto's own clients (e.g. SNS delivering to SQS, Step Functions' tasks) call back on
        # this port.
        "MOTO_PORT": str(port),
        "AWS_ENDPOINT_URL": endpoint_url(port),
    }
    home = state_dir / name
    command = [
        sys.executable, "-m", "ferry.local.emulator_server",
        "--port", str(port), "--state-dir", str(home),
    ]  # fmt: skip
    process = processes.start_process(
        state_dir, name, command, port, home / "emulator.log", env=env
    )
    processes.wait_until_ready(process, lambda: is_ready(port), timeout, "AWS emulator")
    return process


def restored(state_dir: Path, name: str = "aws") -> emulator_snapshot.Restored | None:
    """What the emulator of ``state_dir`` found when it last started (its saved state
    restored, or why not); None before its first start."""
    return emulator_snapshot.Restored.read(state_dir / name / emulator_snapshot.REPORT)
