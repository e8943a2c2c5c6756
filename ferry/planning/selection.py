"""Which tables a run replicates: the config's replications, patterns expanded.

A replication names one table (``table-name``) or every table of a database that matches a
regular expression (``table-name-pattern``, less ``exclude``). Which tables a pattern
matches is known only from the source catalog, so the expansion happens when a run starts
(``ferry.states.resolve_tables``, and a dry run): each matched table becomes a replication of its
own (``TableReplication.for_table``), keeping its name. The later steps find it again with
``ReplicationConfig.replication_of``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ferry.config import ReplicationConfig, TableReplication
from ferry.core.errors import ConfigError

logger = logging.getLogger(__name__)

#: The tables (and views) of a database, as the source catalog lists them.
TableLister = Callable[[str], list[str]]


def needs_catalog(config: ReplicationConfig, tables: Sequence[str] = ()) -> bool:
    """True when expanding ``tables`` (all when none) reads the source catalog.

    Named tables need no listing: a pattern then selects exactly the names asked for.
    """
    return not tables and any(r.source_table.is_pattern for r in config.table_replications)


def expand(
    config: ReplicationConfig,
    tables: Sequence[str] = (),
    list_tables: TableLister | None = None,
    source: str = "config",
) -> list[TableReplication]:
    """One replication per table of the run, in config order (a pattern's tables sorted).

    ``tables`` (``db.table``, any case) selects some; without it every replication runs and
    each pattern lists its database with ``list_tables``. A name a pattern matches is
    replicated even when the catalog does not have it, so that the table fails on its own
    (``SourceTableNotFoundError``), as a missing ``table-name`` does.

    Two replications that would write one replica table are a ``ConfigError`` naming
    ``source`` (the config's path or URI).
    """
    config.select(tables)  # an unknown name is a ConfigError naming it
    expanded: list[tuple[int, TableReplication]] = []
    listings: dict[str, list[str]] = {}
    for index, replication in enumerate(config.table_replications):
        selected = replication.source_table
        if not selected.is_pattern:
            if not tables or any(replication.selects(name) for name in tables):
                expanded.append((index, replication))
            continue
        if tables:
            # Hive and Glue keep names in lower case.
            names = [n.partition(".")[2].lower() for n in tables if replication.selects(n)]
        else:
            if list_tables is None:
                raise ValueError("expanding a table-name-pattern needs the source catalog")
            database = selected.database_name
            if database.lower() not in listings:
                listings[database.lower()] = list_tables(database)
            names = sorted(n for n in listings[database.lower()] if selected.matches(database, n))
            if not names:
                logger.warning(
                    "table-replications[%d]: no table of %s matches %r%s",
                    index,
                    database,
                    selected.table_name_pattern,
                    " (less exclude)" if selected.exclude else "",
                )
        expanded.extend((index, replication.for_table(name)) for name in dict.fromkeys(names))
    _check_distinct(expanded, source)
    return [replication for _, replication in expanded]


def _check_distinct(expanded: list[tuple[int, TableReplication]], source: str) -> None:
    """Refuse two replications of the config writing one replica table.

    Hive names are case-insensitive: ``Sales.Orders`` is ``sales.orders``.
    """
    seen: dict[str, tuple[int, TableReplication]] = {}
    for index, replication in expanded:
        name = replication.replica_qualified_name
        other, earlier = seen.setdefault(name.lower(), (index, replication))
        if other == index:
            continue
        sources = {earlier.source_table.qualified_name, replication.source_table.qualified_name}
        raise ConfigError(
            f"{source}: table-replications[{other}] and table-replications[{index}] both write the "
            f"replica table {name} (from {' and '.join(sorted(sources))}); exclude the table "
            "from one of them"
        )
