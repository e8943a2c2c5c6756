"""The emulated AWS's state on disk: saved when the emulator stops, restored when it starts.

moto keeps every service's state in memory, in its backends (a ``BackendDict`` per service:
account → region → backend object), and has no persistence of its own. The emulator pickles
the backends that hold state — S3 buckets and objects, Glue, DynamoDB, SNS, SQS, Secrets
Manager, IAM, STS, KMS, SSM, Lambda, Step Functions, EventBridge, Scheduler, CloudWatch,
Logs, EMR Serverless, whichever were used — into ``<home>/aws/emulator-state.pickle``, and
the bodies of S3 objects over ``INLINE_BYTES`` into ``<home>/aws/emulator-objects/`` (a file
each, written once):

- at a graceful stop (``ferry local down`` sends SIGTERM), after the schedules' clock has
  stopped and before the functions' execution environments are;
- every ``SAVE_INTERVAL_SECONDS`` while requests arrive, so an emulator that is killed
  loses at most that much;
- always whole, to a temporary file then renamed over the previous one: a crash while
  saving leaves the previous state.

Objects moto holds that pickle does not take are written as what rebuilds them: a weak
dictionary as its items, a ``defaultdict`` whose factory is a lambda as a description of
what the lambda makes (a subclass of it, whose ``__init__`` takes arguments, likewise), a
key pair as PEM, a lock as a new lock (``ferry.local.emulator_snapshot_pickler``). A Step
Functions execution is written with its history and Map Runs, not its interpreter
(threads); one that is running is written with the state it was in, and resumed there after
a start (``ferry.local.emulator_resume``).

The file starts with one JSON line, its stamp (format, moto's version, Python's): a
snapshot written by another moto or Python is not unpickled (moto's classes may have
changed) but moved aside, named in one line (``emulator-state.json``, which ``ferry local
up`` prints), and the emulator starts empty.
"""

from __future__ import annotations

import datetime
import io
import json
import logging
import os
import pickle
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ferry.local.emulator_snapshot_pickler import Pickler, write_whole

logger = logging.getLogger(__name__)

#: The snapshot's file, in the emulator's state folder.
FILE = "emulator-state.pickle"
#: What the last start found: restored, started empty, or refused a snapshot (JSON).
REPORT = "emulator-state.json"
#: The folder of the S3 objects' bodies, beside the snapshot: one file each, named by its
#: ETag and size, written once (a save rewrites only the backends' small objects).
OBJECTS = "emulator-objects"
#: Bumped when what is written changes shape (2: Ferry's modules moved into concept folders;
#: 3: the rebuilding functions moved to ``emulator_snapshot_pickler``, the Map Runs'
#: children to ``emulator_map_children``).
FORMAT = 3
#: While requests arrive, the state is saved at most this often (a killed emulator loses at
#: most this much).
SAVE_INTERVAL_SECONDS = 10.0
#: State Ferry's emulator keeps beside moto's backends: (module, attribute), each a dict.
EXTRAS: tuple[tuple[str, str], ...] = (
    ("ferry.local.emulator_map_children", "_CHILDREN"),
    ("ferry.local.emulator_map_children", "_MAP_RUN_CHILDREN"),
    ("ferry.local.emulator_redrive_branches", "_iterations"),
)


def stamp() -> dict[str, Any]:
    """What a snapshot must have been written by to be read back."""
    import moto

    return {
        "format": FORMAT,
        "moto": moto.__version__,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }


# -- capture ---------------------------------------------------------------------------------


def capture(objects: Path, now: datetime.datetime | None = None) -> tuple[bytes, set[str]]:
    """The emulator's state as bytes (the stamp's JSON line, then the pickled backends), and
    the names of the S3 objects' bodies it refers to in the folder ``objects``.

    Backends are read while the server runs: a dictionary that changes size while it is
    pickled makes the pickling start again (a few times).
    """
    moment = now or datetime.datetime.now(datetime.UTC)
    for attempt in range(10):
        try:
            document = {
                "saved": moment.isoformat(),
                "backends": _backends(),
                "extras": _extras(),
            }
            buffer = io.BytesIO()
            buffer.write(json.dumps(stamp()).encode() + b"\n")
            pickler = Pickler(buffer, moment, objects)
            pickler.dump(document)
            return buffer.getvalue(), pickler.bodies
        except RuntimeError as changed:  # "dictionary changed size during iteration"
            if attempt == 9:
                raise
            logger.debug("state changed while it was saved (%s); again", changed)
            time.sleep(0.05)
    raise AssertionError("unreachable")


def _backends() -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    from moto.core.base_backend import BackendDict

    found: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for backends in list(BackendDict._instances):
        address = _address(backends)
        if address is None:
            logger.warning("not saved: the %s backends (not found by name)", backends.service_name)
            continue
        found[address] = {
            account: dict(regional.items()) for account, regional in list(backends.items())
        }
    return found


_addresses: dict[int, tuple[str, str]] = {}


def _address(backends: Any) -> tuple[str, str] | None:
    """(module, attribute) naming a ``BackendDict``, to find it again in another process."""
    if id(backends) in _addresses:
        return _addresses[id(backends)]
    home = backends.backend.__module__
    candidates = [home] + [name for name in list(sys.modules) if name.startswith("moto.")]
    for name in candidates:
        module = sys.modules.get(name)
        for attribute, value in list(vars(module).items()) if module else []:
            if value is backends:
                _addresses[id(backends)] = (name, attribute)
                return name, attribute
    return None


def _extras() -> dict[str, Any]:
    extras = {}
    for module_name, attribute in EXTRAS:
        module = sys.modules.get(module_name)
        value = getattr(module, attribute, None) if module else None
        if isinstance(value, dict):
            extras[f"{module_name}:{attribute}"] = dict(value)
    return extras


# -- save and restore -------------------------------------------------------------------------


def save(path: Path, now: datetime.datetime | None = None) -> int:
    """Write the emulator's state to ``path`` (a temporary file, then renamed) and the S3
    objects' bodies it lacks beside it; the snapshot's size. Bodies no longer referred to
    are removed after the snapshot is in place."""
    objects = path.parent / OBJECTS
    data, bodies = capture(objects, now)
    write_whole(path, data)
    if objects.is_dir():
        for body in objects.iterdir():
            if body.name not in bodies and not body.name.startswith("."):
                body.unlink(missing_ok=True)
    return len(data)


@dataclass(frozen=True)
class Restored:
    """What the emulator found at start: ``restored`` (a snapshot was read), ``message``."""

    restored: bool
    message: str
    saved: str | None = None

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.__dict__))

    @classmethod
    def read(cls, path: Path) -> Restored | None:
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None


def restore(path: Path) -> Restored:
    """Put the state saved at ``path`` back into moto's backends (before the server serves).

    No file: the emulator starts empty. A snapshot of another stamp, or one that cannot be
    read, is moved aside (``<file>.refused``) and the emulator starts empty; the message
    says so in one line.
    """
    if not path.exists():
        return Restored(False, "no saved state: the emulated AWS starts empty")
    with open(path, "rb") as source:
        header = source.readline()
        try:
            written = json.loads(header)
        except ValueError:
            written = None
        if written != stamp():
            return _refuse(
                path, f"it was written by {_describe(written)}, this is {_describe(stamp())}"
            )
        try:
            document = pickle.load(source)
        except Exception as error:  # noqa: BLE001 - a damaged snapshot is refused, not fatal
            return _refuse(path, f"it cannot be read ({type(error).__name__}: {error})")
    _put_back(document)
    counted = sum(
        len(regional)
        for accounts in document["backends"].values()
        for regional in accounts.values()
    )
    return Restored(
        True,
        f"the emulated AWS's state saved at {document['saved']} was restored "
        f"({len(document['backends'])} services, {counted} backends)",
        document["saved"],
    )


def _describe(written: Any) -> str:
    if not isinstance(written, dict):
        return "an unknown version"
    return (
        f"moto {written.get('moto')} on Python {written.get('python')} "
        f"(format {written.get('format')})"
    )


def _refuse(path: Path, why: str) -> Restored:
    aside = path.with_name(path.name + ".refused")
    os.replace(path, aside)
    return Restored(
        False,
        f"the emulated AWS's saved state {path} is not restored: {why}; it starts empty "
        f"(the snapshot is kept as {aside})",
    )


def _put_back(document: dict[str, Any]) -> None:
    import importlib

    for (module_name, attribute), accounts in document["backends"].items():
        backends = getattr(importlib.import_module(module_name), attribute)
        for account, regional in accounts.items():
            holder = backends[account]  # creates the account's (empty) holder
            for region, backend in regional.items():
                dict.__setitem__(holder, region, backend)
    for key, value in document.get("extras", {}).items():
        module_name, _, attribute = key.partition(":")
        target = getattr(importlib.import_module(module_name), attribute, None)
        if isinstance(target, dict):
            target.update(value)


# -- saving while the server runs --------------------------------------------------------------


class Saver:
    """Saves the state every ``interval`` seconds in which requests arrived, from a thread,
    and once more at ``stop``."""

    def __init__(self, path: Path, interval: float = SAVE_INTERVAL_SECONDS):
        self.path = path
        self.interval = interval
        self._requests = 0
        self._saved_at = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def seen_request(self) -> None:
        with self._lock:
            self._requests += 1

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="state-saver", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                requests = self._requests
            if requests != self._saved_at:
                self._save(requests)

    def _save(self, requests: int) -> None:
        started = time.monotonic()
        try:
            size = save(self.path)
        except Exception:  # the server goes on; the next save tries again
            logger.exception("the emulated AWS's state could not be saved to %s", self.path)
            return
        self._saved_at = requests
        logger.info(
            "saved the emulated AWS's state to %s (%.1f MB in %.2f s)",
            self.path,
            size / 1e6,
            time.monotonic() - started,
        )

    def stop(self) -> None:
        """Stop the periodic saves and save a last time."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._lock:
            requests = self._requests
        self._save(requests)


def install(saver: Saver) -> None:
    """Tell ``saver`` of every AWS request the server's dispatcher handles."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    dispatch = DomainDispatcherApplication.__call__

    def noting(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        if not environ.get("PATH_INFO", "").startswith(("/moto-api", "/ferry-api")):
            saver.seen_request()  # the emulator's own look-ups change nothing
        return dispatch(self, environ, start_response)

    DomainDispatcherApplication.__call__ = noting
