"""How the emulated AWS's state is pickled (``ferry.local.emulator_snapshot`` saves and
restores it): moto's objects as they are, those pickle refuses as what rebuilds them.

A weak dictionary is written as its items, a ``defaultdict`` whose factory is a lambda as a
description of what the lambda makes (a subclass of it, whose ``__init__`` takes arguments,
likewise), a key pair as PEM, a lock as a new lock. An S3 object's body over
``INLINE_BYTES`` goes into a file of its own beside the snapshot, written once. A Step
Functions execution is written with its history and Map Runs, not its interpreter
(``ferry.local.emulator_resume``).

The rebuilding functions are named in the snapshot by this module's name: moving them
changes the snapshot's ``FORMAT``.
"""

from __future__ import annotations

import collections
import copy
import datetime
import io
import os
import pickle
import threading
import weakref
from pathlib import Path
from typing import Any

from ferry.local import emulator_resume

#: Bodies up to this size stay in the snapshot itself.
INLINE_BYTES = 4 * 1024


class Pickler(pickle.Pickler):
    """Pickles moto's objects, writing those pickle refuses as what rebuilds them."""

    def __init__(self, file: io.BytesIO, moment: datetime.datetime, objects: Path):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.moment = moment
        self.objects = objects
        #: The bodies (files under ``objects``) this snapshot refers to.
        self.bodies: set[str] = set()

    def reducer_override(self, obj: Any) -> Any:  # noqa: PLR0911 - one case per kind
        kind = type(obj)
        if kind is weakref.WeakValueDictionary:
            return _weak_values, (dict(obj.items()),)
        if isinstance(obj, collections.defaultdict) and (
            kind is not collections.defaultdict or _is_local(obj.default_factory)
        ):  # a lambda for a factory, or a subclass whose __init__ takes arguments
            factory = obj.default_factory
            spec = _factory_spec(factory) if _is_local(factory) else ("call", factory)
            return _defaultdict, (kind, spec, dict(obj), dict(getattr(obj, "__dict__", {})))
        if kind in _LOCKS:
            return _LOCKS[kind], ()
        module = kind.__module__ or ""
        if module.startswith("cryptography") and hasattr(obj, "private_bytes"):
            return _private_key, (_pem(obj),)
        if module == "moto.s3.models" and hasattr(obj, "_value_buffer"):
            return self._s3_object(obj)
        if module == "moto.stepfunctions.parser.backend.execution":
            return emulator_resume.recorded(obj, self.moment)
        if module == "moto.stepfunctions.parser.backend.execution_worker":
            return emulator_resume.recorded_worker(obj)
        return NotImplemented

    def _s3_object(self, key: Any) -> Any:
        """An S3 object (a version, a part) with its body in a file of its own, once."""
        if key.size <= INLINE_BYTES:
            return _s3_object, (type(key), key.__getstate__(), None)
        name = f"{key.etag.strip(chr(34))}-{key.size}"
        body = self.objects / name
        if not body.exists():
            try:
                value = key.value
            except ValueError:  # its buffer is closed: a deleted object still referred to
                return _s3_object, (type(key), key.__getstate__(), None)
            write_whole(body, value)
        self.bodies.add(name)
        state = {k: v for k, v in key.__dict__.items() if k not in ("_value_buffer", "lock")}
        return _s3_object, (type(key), state, str(body))


def _s3_object(kind: type, state: dict[str, Any], body: str | None) -> Any:
    obj = kind.__new__(kind)
    if body is not None:
        state = {**state, "value": Path(body).read_bytes()}
    obj.__setstate__(state)
    return obj


_LOCKS: dict[type, Any] = {
    type(threading.Lock()): threading.Lock,
    type(threading.RLock()): threading.RLock,
}


def _is_local(factory: Any) -> bool:
    name = getattr(factory, "__qualname__", "")
    return "<lambda>" in name or "<locals>" in name


def _factory_spec(factory: Any) -> Any:
    """What a local ``defaultdict`` factory makes, as data: ``("defaultdict", spec)`` or
    ``("copy", value)`` (a fresh copy of the value each time)."""
    value = factory()
    if isinstance(value, collections.defaultdict):
        inner = value.default_factory
        return ("defaultdict", _factory_spec(inner) if _is_local(inner) else ("call", inner))
    return ("copy", value)


def _factory(spec: Any) -> Any:
    kind, argument = spec
    if kind == "call":
        return argument
    if kind == "defaultdict":
        inner = _factory(argument)
        return lambda: collections.defaultdict(inner)
    return lambda: copy.deepcopy(argument)


def _defaultdict(
    kind: type, spec: Any, items: dict[Any, Any], attributes: dict[str, Any]
) -> collections.defaultdict[Any, Any]:
    rebuilt = kind.__new__(kind)
    collections.defaultdict.__init__(rebuilt, _factory(spec))
    rebuilt.update(items)
    if attributes:
        rebuilt.__dict__.update(attributes)
    return rebuilt


def _weak_values(items: dict[Any, Any]) -> weakref.WeakValueDictionary[Any, Any]:
    return weakref.WeakValueDictionary(items)


def _pem(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _private_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives import serialization

    return serialization.load_pem_private_key(pem, password=None)


def write_whole(path: Path, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all (a temporary file, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(temporary, "wb") as out:
        out.write(data)
    os.replace(temporary, path)
