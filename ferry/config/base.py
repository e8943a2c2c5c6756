"""What every model of the config shares: kebab-case keys, no unknown keys, frozen values,
an empty key meaning its default; the config's whole numbers; its warnings; and the way
from a key path to its text and back.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, model_validator

from ferry.config.text import KeyPath


def kebab(name: str) -> str:
    """A field's key in the file: ``table_name`` is ``table-name``."""
    return name.replace("_", "-")


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=kebab, populate_by_name=True, extra="forbid", frozen=True
    )

    #: Circus Train's keys at this level that Ferry accepts without using them, each with
    #: what Ferry does instead (the warning a person reads).
    circus_train_keys: ClassVar[Mapping[str, str]] = {}
    #: Keys at this level whose value is a location (``check_location``): one written with
    #: repeated slashes is read as Hadoop reads it (``read_as_hadoop``), with a warning.
    location_keys: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _empty_means_default(cls, data: Any) -> Any:
        """A key with no value (``copier-options:``) means its default, as in Spring.

        Only where None is not itself a value: an empty ``subject:`` stays "no subject".
        """
        if not isinstance(data, dict):
            return data
        fields = fields_by_key(cls)
        return {
            key: value
            for key, value in data.items()
            if value is not None
            or key not in fields
            or fields[key].is_required()
            or _admits_none(fields[key].annotation)
        }


@dataclass(frozen=True)
class ConfigWarning:
    """Something the config says that Ferry reads otherwise than written, and how.

    A Circus Train key Ferry accepts without using it (and what Ferry does instead), or a
    location Ferry reads in Hadoop's spelling (``read_as_hadoop``).
    """

    source: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}"


def _not_a_boolean(value: Any) -> Any:
    """A number must not be YAML's ``true`` or ``false``: pydantic would take them as 1 and 0.

    Text of digits stays a number (a value that is only a ``${NAME}`` placeholder is text).
    """
    if isinstance(value, bool):
        raise ValueError(f"{'true' if value else 'false'} is not a whole number")
    return value


#: A whole number of the config: an int, or text of one; never a boolean.
WholeNumber = Annotated[int, BeforeValidator(_not_a_boolean)]


def fields_by_key(model: type[BaseModel]) -> dict[str, Any]:
    """A model's fields by every spelling it accepts: ``table-name`` and ``table_name``."""
    fields = {}
    for name, field in model.model_fields.items():
        fields[name] = field
        fields[field.alias or name] = field
    return fields


def _admits_none(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(
        None
    ) in typing.get_args(annotation)


def model_of(annotation: Any) -> type[BaseModel] | None:
    """The model inside ``X``, ``X | None``, ``list[X]`` or ``tuple[X, ...]``, if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, tuple, Sequence):
        for argument in typing.get_args(annotation):
            found = model_of(argument)
            if found is not None:
                return found
    return None


def path_text(loc: Sequence[Any]) -> str:
    """A key path as a person reads it: ``table-replications[0].source-table``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "the top level"


def path_of(text: str) -> KeyPath:
    """``a.b[0].c`` as a key path (the inverse of ``path_text``)."""
    parts: list[str | int] = []
    for piece in re.findall(r"[^.\[\]]+|\[\d+\]", text):
        parts.append(int(piece[1:-1]) if piece.startswith("[") else piece)
    return tuple(parts)
