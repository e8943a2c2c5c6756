"""The line a person reads for a config the models refuse: the first problem, its key, and
the closest known key when one is unknown."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from ferry.config.base import fields_by_key, model_of, path_text
from ferry.config.replication import ReplicationConfig


def _model_at(loc: Sequence[Any]) -> type[BaseModel] | None:
    """The model whose keys are at ``loc`` of the document (list indexes skipped)."""
    model: type[BaseModel] | None = ReplicationConfig
    for part in loc:
        if isinstance(part, int):
            continue
        field = fields_by_key(model).get(part) if model is not None else None
        model = model_of(field.annotation) if field is not None else None
        if model is None:
            return None
    return model


def known_keys(model: type[BaseModel]) -> list[str]:
    """Every key ``model`` accepts: its own (kebab-case) and Circus Train's it sets aside."""
    own = [field.alias or name for name, field in model.model_fields.items()]
    translated = list(getattr(model, "circus_train_translations", {}))
    return own + translated + list(getattr(model, "circus_train_keys", {}))


def _suggestion(key: Any, loc: Sequence[Any]) -> str:
    model = _model_at(loc)
    if model is None or not isinstance(key, str):
        return ""
    close = difflib.get_close_matches(key, known_keys(model), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def describe_validation_error(error: ValidationError) -> str:
    """One line for the first problem pydantic found (and how many more there are)."""
    problems = error.errors()
    first = problems[0]
    loc = list(first["loc"])
    kind = first["type"]
    if kind == "missing":
        line = f"missing key '{loc[-1]}' in {path_text(loc[:-1])}"
    elif kind == "missing_key":  # a key the model requires one of several of
        context = first.get("ctx") or {}
        line = f"missing key '{context['key']}' in {path_text(loc)}{context.get('hint', '')}"
    elif kind == "extra_forbidden":
        line = f"unknown key '{loc[-1]}' in {path_text(loc[:-1])}{_suggestion(loc[-1], loc[:-1])}"
    else:
        message = first["msg"].removeprefix("Value error, ")
        # A check of the whole config names its keys in its message.
        line = f"{path_text(loc)}: {message}" if loc else message
    if len(problems) > 1:
        line += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return line
