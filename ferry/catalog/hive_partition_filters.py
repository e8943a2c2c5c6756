"""Filters that cut a partition listing into pages of partition values.

A metastore asked for a filter's partitions materialises them all at once (huge tables made
metastores run out of memory when listed whole); ANDed with a range of values that holds at
most a page, each call returns at most a page. The ranges are written in the metastore's
filter grammar, which has no escapes and compares only strings and integers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from ferry.catalog import is_integral
from ferry.core.model import Column


def value_range_filters(
    keys: Sequence[Column], values: Sequence[tuple[str, ...]], page: int
) -> list[str] | None:
    """Filter expressions that split sorted partition ``values`` into ranges of ≤ ``page``.

    Ranges bound the first key; a value of the first key with more than a page of
    partitions is split further on the next key, under an equality on the first. Returns
    None when a key's type or a value cannot be written in the metastore filter grammar.
    """
    if not values:
        return []
    ranges: list[str] = []

    def literal(key: Column, value: str) -> str | None:
        if is_integral(key):
            return value if value.lstrip("-").isdigit() else None
        if key.type.lower() not in (
            "string",
            "varchar",
            "char",
        ) and not key.type.lower().startswith(("varchar", "char")):
            return None
        if "'" not in value:
            return f"'{value}'"
        if '"' not in value:
            return f'"{value}"'
        return None  # the grammar has no escapes

    def split(depth: int, group: Sequence[tuple[str, ...]], prefix: list[str]) -> bool:
        key = keys[depth]
        pending: list[tuple[str, int]] = []  # (value, count) of the range being built

        def flush() -> bool:
            if not pending:
                return True
            low, high = literal(key, pending[0][0]), literal(key, pending[-1][0])
            if low is None or high is None:
                return False
            ranges.append(" AND ".join([*prefix, f"{key.name} >= {low}", f"{key.name} <= {high}"]))
            pending.clear()
            return True

        for value, members in itertools.groupby(group, key=lambda v: v[depth]):
            members = list(members)
            if len(members) > page:
                equal = literal(key, value)
                if not flush() or equal is None:
                    return False
                if not split(depth + 1, members, [*prefix, f"{key.name} = {equal}"]):
                    return False
                continue
            if sum(count for _, count in pending) + len(members) > page and not flush():
                return False
            pending.append((value, len(members)))
        return flush()

    return ranges if split(0, list(values), []) else None
