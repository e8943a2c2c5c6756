"""From a file (or a URI, or text) to a validated ``ReplicationConfig``.

Every problem becomes one ``ConfigError`` line that names the source and the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ferry.config import text as config_text
from ferry.config.assume_role import translate_circus_train as translate_assume_role
from ferry.config.base import ConfigWarning, path_of, path_text
from ferry.config.circus_train import read_locations_as_hadoop, set_aside_circus_train_keys
from ferry.config.error_text import describe_validation_error
from ferry.config.replication import ReplicationConfig
from ferry.core.errors import ConfigError


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> ReplicationConfig:
    """Read and validate the config file at ``path``.

    ``${NAME}`` placeholders are resolved from ``environ`` (default: this process's
    environment, read now).
    """
    path = Path(path)
    try:
        with path.open("rb") as file:
            # A little past the most a config may hold: a larger file is refused unread.
            data = file.read(config_text.MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config: {error.strerror or error}") from None
    return parse_config_text(_decode(_at_most(data, str(path)), str(path)), str(path), environ)


def load_config_uri(uri: str, environ: Mapping[str, str] | None = None) -> ReplicationConfig:
    """Read and validate the config at a URI (``s3://``, ``file://``), as the pipeline does."""
    from ferry.storage import fs  # the CLI reads local files without pyarrow

    if "://" not in uri:
        return load_config(uri, environ)
    try:
        data = fs.read_bytes(uri, limit=config_text.MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{uri}: cannot read config: {str(error).splitlines()[0]}") from None
    return parse_config_text(_decode(_at_most(data, uri), uri), uri, environ)


def _at_most(data: bytes, source: str) -> bytes:
    """``data`` when it is no more than a config may hold (``MAX_CONFIG_BYTES``)."""
    if len(data) > config_text.MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{source}: larger than {config_text.MAX_CONFIG_BYTES // (1024 * 1024)} MiB, the most "
            "a config may hold; is it the config?"
        )
    return data


def _decode(data: bytes, source: str) -> str:
    """The config's text; YAML files are UTF-8 (a byte-order mark is allowed)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ConfigError(
            f"{source}: not UTF-8 text: byte 0x{data[error.start]:02x} on line {line}; "
            "save the config as UTF-8"
        ) from None


def parse_config_text(
    text: str, source: str, environ: Mapping[str, str] | None = None
) -> ReplicationConfig:
    """Validate YAML text; ``source`` names it in errors (a path or a URI).

    A file of several YAML documents is Circus Train's Spring profiles: the documents of the
    active profiles (``SPRING_PROFILES_ACTIVE``) are merged first (``ferry.config.text``).
    """
    environ = os.environ if environ is None else environ
    documents = config_text.read_documents(text, source)
    return parse_config(config_text.apply_profiles(documents, environ, source), source, environ)


def parse_config(
    data: Any, source: str = "config", environ: Mapping[str, str] | None = None
) -> ReplicationConfig:
    """Validate an already parsed config document.

    In order: ``${NAME}`` placeholders are resolved (from ``environ``, default this process's
    environment); Circus Train's keys that Ferry does not use become warnings; an unset
    placeholder is an error unless it sits under such a key (its value is never used); a
    location with repeated slashes is read as Hadoop reads it, with a warning; then the
    models check the rest.
    """
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: the config must be a mapping with 'source-catalog' and 'replica-catalog'"
        )
    environ = os.environ if environ is None else environ
    data, unresolved = config_text.resolve_placeholders(data, environ)
    warnings: list[ConfigWarning] = []
    try:
        data = translate_assume_role(data)
    except ValueError as error:
        raise ConfigError(f"{source}: {error}") from None
    data = set_aside_circus_train_keys(data, ReplicationConfig, (), source, warnings)
    ignored = [path_of(w.key) for w in warnings]
    for placeholder in unresolved:
        if not any(placeholder.path[: len(path)] == path for path in ignored):
            raise ConfigError(
                f"{source}: {path_text(list(placeholder.path))}: {placeholder.placeholder} is not "
                f"set in the environment (write ${{NAME:default}} for a default)"
            )
    data = read_locations_as_hadoop(data, ReplicationConfig, (), source, warnings)
    try:
        config = ReplicationConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"{source}: {describe_validation_error(error)}") from None
    config._warnings = tuple(warnings)
    return config
