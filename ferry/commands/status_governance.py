"""``ferry status --governance``: whether each replica's statistics, keys and grants match
its source's.

Freshness says whether a replica holds the source's data; a replica that queries and
governs like its source also holds its column statistics, its keys and, with a
``permissions`` section, its grants. This compares them as Plan does (``ferry plan``'s
preview: both catalogs read, nothing written, no lock taken) for each table that has a
replica, and says per table what a run would write. A table whose data is behind is
compared too: what its next run writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ferry.core.errors import FerryError
from ferry.freshness import FreshnessState, TableFreshness
from ferry.storage.aws import AwsClients

#: States whose replica is not there to compare.
_NO_REPLICA = (FreshnessState.NEVER_REPLICATED, FreshnessState.SOURCE_MISSING)


def compare(
    config_path: Path, aws: AwsClients, measured: Sequence[TableFreshness]
) -> dict[str, dict[str, Any]]:
    """Each replicated table's governance, by source table: ``statistics`` (what a run would
    write, counted; None when in sync), ``permissions`` (grants to give and revoke, and what
    no mapping covers; None without a ``permissions`` section), or ``error``."""
    from ferry.states import plan as plan_state
    from ferry.states.context import StateContext

    context = StateContext("file:///nowhere", aws)  # a preview writes nothing
    compared: dict[str, dict[str, Any]] = {}
    for table in measured:
        if table.state in _NO_REPLICA:
            continue
        try:
            preview = plan_state.preview(
                context,
                str(config_path.resolve()),
                table.source_table,
                table.replica_table,
                probe=False,
            )
        except FerryError as error:
            compared[table.source_table] = {"error": f"{type(error).__name__}: {error}"}
            continue
        compared[table.source_table] = {
            "statistics": preview.get("statistics"),
            "permissions": preview.get("permissions"),
        }
    return compared


def governance_line(compared: dict[str, Any]) -> str:
    """``statistics and keys: in sync; permissions: 2 grants, 1 revoke to apply (1 source
    principals or tags unmapped)``"""
    if "error" in compared:
        return f"could not compare: {compared['error']}"
    statistics = compared["statistics"]
    if statistics is None:
        parts = ["statistics and keys: in sync"]
    else:
        wanted = [
            _count(statistics["tableColumns"], "table column"),
            _count(statistics["partitions"], "partition"),
            _count(statistics["keysToAdd"] + statistics["keysToDrop"], "key"),
        ]
        parts = ["statistics and keys differ: " + ", ".join(w for w in wanted if w) + " to write"]
    permissions = compared["permissions"]
    if permissions is not None:
        counts = [
            _count(len(permissions[verb]), noun)
            for verb, noun in (("grant", "grant"), ("revoke", "revoke"), ("tag", "tag"),
                               ("untag", "untag"))
        ]  # fmt: skip
        unmapped = len(permissions["unmappedPrincipals"]) + len(permissions["unmappedTags"])
        shown = [c for c in counts if c]
        text = "permissions: " + (", ".join(shown) + " to apply" if shown else "in sync")
        parts.append(
            text + (f" ({unmapped} source principals or tags unmapped)" if unmapped else "")
        )
    return "; ".join(parts)


def _count(number: int, noun: str) -> str:
    if not number:
        return ""
    return f"{number} {noun}{'' if number == 1 else 's'}"
