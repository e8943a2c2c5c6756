"""From a config file's YAML text to one document, as Circus Train (Spring Boot) reads it.

Circus Train's files are Spring Boot configuration, and two of Spring's habits are in them:

- **profile documents**: one file, several YAML documents separated by ``---``; a document
  with ``spring.profiles: dev`` applies only when the profile ``dev`` is active. The active
  profiles come from ``SPRING_PROFILES_ACTIVE`` (as Spring Boot reads it), else from the
  file's own ``spring.profiles.active``. Documents apply in order, each merged key by key
  over the ones before it (a list is replaced whole);
- **placeholders**: ``${NAME}`` anywhere in a value is the environment variable ``NAME``;
  ``${NAME:default}`` falls back to ``default`` when it is not set.

``${...}`` is only Spring's: Jinja2's ``{{ ... }}`` (partition filters) is left alone.
Nothing here reads the environment by itself: the caller passes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from ferry.core.errors import ConfigError

#: Where a value sits in the document: keys and list indexes from the top.
KeyPath = tuple[str | int, ...]

_PLACEHOLDER = re.compile(r"\$\{(?P<name>[^}:]*)(?::(?P<default>[^}]*))?\}")
PROFILES_VARIABLE = "SPRING_PROFILES_ACTIVE"


@dataclass(frozen=True)
class Unresolved:
    """A placeholder whose variable is not set (and that has no default)."""

    path: KeyPath
    placeholder: str


#: What each value of a deployment's config secret holds until someone puts the real one:
#: a run refuses to start with it (``lambdas/runtime.py``), and ``ferry doctor`` reports it.
SECRET_PLACEHOLDER = "<not set: put the value with put-secret-value>"


#: The most a config file may hold, read as it is and with its YAML aliases expanded. A
#: config of thousands of tables is a few hundred KiB; anything near this is not a config,
#: and reading it would take the run's time (or, aliases expanded, its memory).
MAX_CONFIG_BYTES = 4 * 1024 * 1024


def read_documents(text: str, source: str) -> list[Any]:
    """The YAML documents of ``text`` (empty ones dropped); a YAML error is one line.

    YAML aliases (``*name``) repeat what their anchor holds: a few lines of nested aliases
    (a "billion laughs") stand for billions of values, which every later step would walk.
    The documents, with every alias expanded, may hold at most ``MAX_CONFIG_BYTES`` of
    text, checked before anything is built from them.
    """
    loader = _BoundedLoader(text)
    try:
        documents = []
        while loader.check_data():
            documents.append(loader.get_data())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise ConfigError(f"{source}: invalid YAML{where}: {problem}") from None
    except _TooLarge as error:
        raise ConfigError(f"{source}: {error}") from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise ConfigError(
            f"{source}: invalid YAML: collections nested too deeply for a config"
        ) from None
    finally:
        loader.dispose()
    return [document for document in documents if document is not None]


class _TooLarge(Exception):
    """The documents, their aliases expanded, hold more than ``MAX_CONFIG_BYTES``."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that weighs each document before constructing it.

    A document's weight is what it would take written out without aliases: one per
    collection, one plus its length per scalar. Shared nodes (an anchor and its aliases) are
    weighed once each and counted as often as they appear, so the weighing itself takes time
    in proportion to the text, not to the expansion.
    """

    def __init__(self, stream: str):
        super().__init__(stream)
        self.weight = 0

    def compose_document(self) -> yaml.Node | None:
        node = super().compose_document()
        if node is not None:
            self.weight += _expanded_weight(node, MAX_CONFIG_BYTES - self.weight)
        return node


def _expanded_weight(root: yaml.Node, limit: int) -> int:
    """``root``'s weight with every alias expanded; ``_TooLarge`` past ``limit``."""
    weights: dict[int, int] = {}
    composing: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_weighed = stack.pop()
        key = id(node)
        if key in weights:
            continue
        if isinstance(node, yaml.ScalarNode):
            weights[key] = 1 + len(node.value)
            continue
        children = (
            [part for pair in node.value for part in pair]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
        )
        if children_weighed:
            composing.discard(key)
            weight = 1 + sum(weights[id(child)] for child in children)
            if weight > limit:
                raise _TooLarge(
                    "with its YAML aliases (*name) expanded, the config holds more than "
                    f"{MAX_CONFIG_BYTES // (1024 * 1024)} MiB, the most a config may hold"
                )
            weights[key] = weight
            continue
        if key in composing:
            raise _TooLarge(
                f"the YAML collection at line {node.start_mark.line + 1} holds an alias of "
                "itself: the config would be infinite"
            )
        composing.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in weights)
    return weights[id(root)]


def apply_profiles(documents: list[Any], environ: Mapping[str, str], source: str) -> Any:
    """One document: those without ``spring.profiles`` and those of an active profile, merged.

    A file of one document is that document, whatever it says under ``spring``.
    """
    if len(documents) <= 1:
        return documents[0] if documents else None
    for index, document in enumerate(documents):
        if not isinstance(document, dict):
            raise ConfigError(
                f"{source}: YAML document {index + 1} is not a mapping; "
                "each document of a file with profiles must be one"
            )
    active = _active_profiles(documents, environ)
    merged: dict[str, Any] = {}
    for document in documents:
        profiles = _profiles_of(document)
        if profiles is None or profiles & active:
            merged = _merge(merged, _without_profiles(document))
    return merged


def _active_profiles(documents: list[dict[str, Any]], environ: Mapping[str, str]) -> set[str]:
    if environ.get(PROFILES_VARIABLE):
        return _names(environ[PROFILES_VARIABLE])
    for document in documents:
        spring = document.get("spring")
        profiles = spring.get("profiles") if isinstance(spring, dict) else None
        if isinstance(profiles, dict) and profiles.get("active"):
            return _names(profiles["active"])
    return set()


def _profiles_of(document: dict[str, Any]) -> set[str] | None:
    """The profiles a document is for (None: every run), e.g. ``spring.profiles: dev, qa``."""
    spring = document.get("spring")
    profiles = spring.get("profiles") if isinstance(spring, dict) else None
    if profiles is None or isinstance(profiles, dict):  # a dict is {active: ...}
        return None
    return _names(profiles)


def _names(value: Any) -> set[str]:
    items = value if isinstance(value, list) else str(value).split(",")
    return {str(item).strip() for item in items if str(item).strip()}


def _without_profiles(document: dict[str, Any]) -> dict[str, Any]:
    """The document without ``spring.profiles`` (consumed here); ``spring`` goes when empty."""
    spring = document.get("spring")
    if not isinstance(spring, dict) or "profiles" not in spring:
        return document
    rest = {key: value for key, value in spring.items() if key != "profiles"}
    trimmed = {key: value for key, value in document.items() if key != "spring"}
    if rest:
        trimmed["spring"] = rest
    return trimmed


def _merge(base: Any, override: Any) -> Any:
    """``override`` over ``base``: mappings key by key, anything else replaced whole."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _merge(base[key], value) if key in base else value
        return merged
    return override


def resolve_placeholders(document: Any, environ: Mapping[str, str]) -> tuple[Any, list[Unresolved]]:
    """``document`` with each ``${NAME}`` in its values replaced; and the ones left unset.

    Placeholders are resolved on the parsed document, not in the text before parsing: a
    value from the environment is then always one string in its place, whatever it holds.
    Substituted into the text, a password with ``: `` or `` #`` in it would change the
    document's shape or be cut off as a comment, and a line break would add keys. Parsed
    first, an unset placeholder can also be named with its key. A value that is only a
    placeholder becomes the variable's text (``partition-limit: ${LIMIT}`` → ``"100"``, which
    the config's types then read as the number). A substituted value is not searched again.
    """
    unresolved: list[Unresolved] = []

    def resolve(value: Any, path: KeyPath) -> Any:
        if isinstance(value, dict):
            return {key: resolve(item, (*path, key)) for key, item in value.items()}
        if isinstance(value, list):
            return [resolve(item, (*path, index)) for index, item in enumerate(value)]
        if not isinstance(value, str) or "${" not in value:
            return value

        def substitute(match: re.Match[str]) -> str:
            name = match["name"].strip()
            if name in environ:
                return environ[name]
            if match["default"] is not None:
                return match["default"]
            unresolved.append(Unresolved(path, match[0]))
            return match[0]

        return _PLACEHOLDER.sub(substitute, value)

    return resolve(document, ()), unresolved
