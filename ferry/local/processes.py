"""Start, find and stop the background processes of the local runtime.

Each process is described by a PID file under the runtime's state folder, so ``ferry local
down`` stops only what ``ferry local up`` started, and a stale PID file (its process gone, or
the PID reused by an unrelated program) is recognised and ignored.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ferry.core.errors import LocalRuntimeError


@dataclass(frozen=True)
class ManagedProcess:
    """A process started by the local runtime, as recorded in its PID file."""

    name: str
    pid: int
    port: int
    command: tuple[str, ...]
    log: str

    #: The kernel's start time of the process: a reused PID has another one.
    start_ticks: int | None = None

    def is_running(self) -> bool:
        """True while the recorded PID is alive and is still the process we started."""
        stat = _proc_stat(self.pid)
        if stat is None:
            return False
        state, start_ticks = stat
        if state == "Z":  # exited, not yet reaped by its parent
            return False
        return self.start_ticks is None or start_ticks == self.start_ticks


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks) of ``pid`` from /proc, or None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # After the command name: field 3 is the state, field 22 the start time.
    return fields[0], int(fields[19])


def pid_file(state_dir: Path, name: str) -> Path:
    return state_dir / f"{name}.pid.json"


def read_process(state_dir: Path, name: str) -> ManagedProcess | None:
    """The process recorded under ``name``, or None when there is no PID file."""
    path = pid_file(state_dir, name)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return ManagedProcess(
        name=data["name"],
        pid=data["pid"],
        port=data["port"],
        command=tuple(data["command"]),
        log=data["log"],
        start_ticks=data.get("start_ticks"),
    )


def start_process(
    state_dir: Path,
    name: str,
    command: Sequence[str],
    port: int,
    log: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> ManagedProcess:
    """Start ``command`` detached from this process, logging to ``log``, and record it."""
    state_dir.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        popen = subprocess.Popen(
            list(command),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,  # survives the CLI that started it; Ctrl-C does not reach it
        )
    stat = _proc_stat(popen.pid)
    process = ManagedProcess(
        name, popen.pid, port, tuple(command), str(log), stat[1] if stat else None
    )
    pid_file(state_dir, name).write_text(
        json.dumps(
            {
                "name": name,
                "pid": popen.pid,
                "port": port,
                "command": list(command),
                "log": str(log),
                "start_ticks": process.start_ticks,
            }
        )
    )
    return process


def stop_process(state_dir: Path, name: str, timeout: float = 20.0) -> bool:
    """Stop the recorded process (SIGTERM, then SIGKILL after ``timeout``) and what is left
    of its process group; True if one was running."""
    process = read_process(state_dir, name)
    if process is None:
        return False
    was_running = process.is_running()
    if was_running:
        # The process first, alone: it stops its own children in order (the AWS emulator
        # saves its state before it stops the functions' environments); then whatever of
        # its group is left.
        _signal(os.kill, process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while process.is_running() and time.monotonic() < deadline:
            _reap(process.pid)
            time.sleep(0.1)
        _signal(
            os.killpg, process.pid, signal.SIGTERM if not process.is_running() else signal.SIGKILL
        )
        _reap(process.pid)
    pid_file(state_dir, name).unlink(missing_ok=True)
    return was_running


def _signal(send: Callable[[int, int], None], pid: int, number: int) -> None:
    try:
        send(pid, number)
    except ProcessLookupError:
        pass


def _reap(pid: int) -> None:
    """Collect the exit status when the process is our own child (tests start them)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def wait_until_ready(
    process: ManagedProcess, probe: Callable[[], bool], timeout: float, what: str
) -> None:
    """Poll ``probe`` until it answers True; raise with the log's tail if the process dies."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.is_running():
            raise LocalRuntimeError(
                f"{what} exited during start-up; see {process.log}:\n{tail(process.log)}"
            )
        if probe():
            return
        time.sleep(0.25)
    raise LocalRuntimeError(f"{what} did not become ready in {timeout:.0f} s; see {process.log}")


def tail(path: str, lines: int = 15) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def free_port() -> int:
    """A TCP port that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0
