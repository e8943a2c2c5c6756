"""``ferry doctor``'s catalog check, run by the deployed Plan function when invoked with
``{"check": "catalogs"}``: whether each catalog of a config answers from where it runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ferry.statemachine.check_payloads import CatalogAnswer, CatalogCheckInput, CatalogCheckResult
from ferry.states.context import StateContext


def run(
    context: StateContext, payload: CatalogCheckInput | Mapping[str, Any]
) -> CatalogCheckResult:
    """A cheap read of a database the config names, which the function's role may read."""
    payload = CatalogCheckInput.model_validate(payload)
    config = context.load(payload.config_uri)
    first = config.table_replications[0] if config.table_replications else None
    # A housekeeping-only config names no database; every Hive metastore has "default".
    source_database = first.source_table.database_name if first else "default"
    replica_database = first.replica_database if first else "default"
    answers = []
    for role, catalog, database in (
        ("source", config.source_catalog, source_database),
        ("replica", config.replica_catalog, replica_database),
    ):
        name = f"{role} {catalog.name} ({context.describe(catalog)})"
        try:
            with context.open(catalog) as opened:
                opened.get_database(database)
            answers.append(CatalogAnswer(catalog=name, ok=True, detail="answered"))
        except Exception as error:  # noqa: BLE001 - the answer is the check's finding
            answers.append(CatalogAnswer(catalog=name, ok=False, detail=str(error)[:300]))
    return CatalogCheckResult(catalogs=answers)
