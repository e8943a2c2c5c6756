"""Promotion: the ``ferry.promoted`` parameter a replica carries while writers own it.

``<failover id>@<ISO time>``: the failover id is an event id (``ferry.core.event_id``), one per
``ferry failover`` that promoted the table; a second failover of a promoted table keeps it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from ferry.catalog import Catalog
from ferry.core.model import Table
from ferry.failover import PROMOTED


def promotion_value(failover_id: str, now: datetime) -> str:
    return f"{failover_id}@{now.astimezone(UTC).isoformat(timespec='seconds')}"


def failover_id_of(table: Table) -> str | None:
    """The failover that promoted ``table``, or None when it is not promoted."""
    value = table.parameters.get(PROMOTED)
    return value.split("@", 1)[0] if value else None


def promoted_at(table: Table) -> datetime | None:
    value = table.parameters.get(PROMOTED)
    if not value or "@" not in value:
        return None
    try:
        return datetime.fromisoformat(value.split("@", 1)[1])
    except ValueError:
        return None


def promote(catalog: Catalog, table: Table, value: str) -> Table:
    """Mark ``table`` promoted: one alter of the table, nothing else of it changes."""
    promoted = replace(table, parameters={**table.parameters, PROMOTED: value})
    catalog.alter_table(promoted)
    return promoted


def unpromote(catalog: Catalog, table: Table) -> Table:
    """Remove the promotion (``ferry failback``, once both sides are equal)."""
    if PROMOTED not in table.parameters:
        return table
    parameters = {k: v for k, v in table.parameters.items() if k != PROMOTED}
    table = replace(table, parameters=parameters)
    catalog.alter_table(table)
    return table
