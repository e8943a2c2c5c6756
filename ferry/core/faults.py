"""Fail points: named places in the steps where a failure can be injected on purpose.

Ferry's promise is about what happens when things break, so the tests break them: a raised
error, a Lambda timeout or a killed process at a named point (``commit.partition-batch``,
``copy.file``…), in either driver. Disarmed, a point costs one dictionary look-up.

Points are armed by the edges only: the CLI from ``FERRY_FAULTS`` (a JSON list), the local
emulator from a file it watches, tests directly with ``armed(...)``. Domain code only calls
``point(name)``.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

#: The error name a Lambda that ran out of time reports to Step Functions.
LAMBDA_TIMEOUT = "Sandbox.Timedout"


class InjectedFault(Exception):
    """A failure injected at a fail point (named like the error it stands for)."""

    def __init__(self, error_name: str, message: str):
        super().__init__(message)
        self.error_name = error_name


@dataclass
class Fault:
    """What happens at a point: after ``skip`` hits, the next ``times`` hits fail.

    ``action``: ``raise`` (an error named ``error``), ``timeout`` (as if the Lambda ran out
    of time), ``kill`` (SIGKILL this process: a crash with no clean-up at all) or ``hang``
    (sleep ``seconds``, e.g. to be killed from outside). At the points that carry bytes
    (``alter``): ``corrupt`` (one byte flipped) or ``truncate`` (the last byte lost), as a
    network or a store might, after the sender computed their checksum.
    """

    point: str
    action: str = "raise"
    error: str = "InjectedFault"
    skip: int = 0
    times: int = 1
    seconds: float = 3600.0
    hits: int = field(default=0, compare=False)


_armed: dict[str, Fault] = {}
_lock = threading.Lock()
#: Where hits are counted when several processes share the armed faults (``FaultFile``).
_shared_hits: str | None = None


def _hit(name: str) -> Fault | None:
    """The fault armed at ``name`` when this hit is one it fails, else None."""
    if not _armed:
        return None
    with _lock:
        fault = _armed.get(name)
        if fault is None:
            return None
        fault.hits = _count_shared(name) if _shared_hits else fault.hits + 1
        if not fault.skip < fault.hits <= fault.skip + fault.times:
            return None
    return fault


def _count_shared(name: str) -> int:
    """One more hit of ``name`` in the hits file every process of a ``FaultFile`` shares."""
    import fcntl

    assert _shared_hits is not None
    with open(_shared_hits, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        hits = json.loads(handle.read() or "{}")
        hits[name] = hits.get(name, 0) + 1
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(hits))
        return hits[name]


def alter(name: str, data: bytes) -> bytes:
    """Bytes on their way out at ``name``: changed when a ``corrupt``/``truncate`` is armed."""
    fault = _hit(name)
    if fault is None or not data:
        return data
    if fault.action == "corrupt":
        return data[:-1] + bytes([data[-1] ^ 0xFF])
    if fault.action == "truncate":
        return data[:-1]
    _fail(name, fault)
    return data


def point(name: str) -> None:
    """A place where a failure may be injected; does nothing unless ``name`` is armed."""
    fault = _hit(name)
    if fault is not None:
        _fail(name, fault)


def _fail(name: str, fault: Fault) -> None:
    if fault.action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if fault.action == "hang":
        time.sleep(fault.seconds)
        return
    if fault.action == "timeout":
        raise InjectedFault(LAMBDA_TIMEOUT, f"Task timed out (injected at {name})")
    raise InjectedFault(fault.error, f"injected failure at {name}")


def arm(*faults: Fault) -> None:
    with _lock:
        for fault in faults:
            _armed[fault.point] = fault


def disarm() -> None:
    with _lock:
        _armed.clear()


@contextmanager
def armed(*faults: Fault) -> Iterator[None]:
    arm(*faults)
    try:
        yield
    finally:
        disarm()


def parse(text: str) -> list[Fault]:
    """Faults from JSON: a list of objects with Fault's fields (``point`` required)."""
    data: Any = json.loads(text)
    return [Fault(**item) for item in (data if isinstance(data, list) else [data])]


class FaultFile:
    """Arms the faults a JSON file lists, re-reading it whenever it changes (the emulator).

    Every process that refreshes from the same file (each Lambda function's workers) counts
    hits in one place beside it (``<file>.hits``), so ``skip`` and ``times`` mean the same
    as in one process. Writing the file anew starts the count again.
    """

    def __init__(self, path: os.PathLike[str] | str):
        self.path = path
        self._seen: float | None = None

    @property
    def hits_path(self) -> str:
        return f"{os.fspath(self.path)}.hits"

    def refresh(self) -> None:
        global _shared_hits
        try:
            changed = os.stat(self.path).st_mtime_ns
        except FileNotFoundError:
            if self._seen is not None:
                disarm()
                self._seen = None
            return
        if changed != self._seen:
            with open(self.path) as handle:
                faults = parse(handle.read())
            disarm()
            _shared_hits = self.hits_path
            arm(*faults)
            self._seen = changed

    def write(self, faults: list[dict[str, Any]]) -> None:
        """Arm ``faults`` for every process that refreshes from this file; hits from zero."""
        with open(self.hits_path, "w") as handle:
            handle.write("{}")
        with open(self.path, "w") as handle:
            handle.write(json.dumps(faults))

    def clear(self) -> None:
        for path in (os.fspath(self.path), self.hits_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
