"""View SQL rewritten through ``table-mappings`` with a real SQL parser (sqlglot, Hive).

Hive stores a view's expanded text fully qualified (`` `sales`.`orders` ``) and qualifies
columns by the table's name, so a renamed table keeps its old name as an alias and the
column references stay valid.
"""

from __future__ import annotations

from collections.abc import Mapping

from ferry.core.errors import ReplicationModeError


def rewrite_view_sql(
    sql: str | None, mappings: Mapping[str, str], default_database: str
) -> str | None:
    """``sql`` with every table named in ``mappings`` (``db.table`` → ``db.table``) replaced."""
    if not sql or not mappings:
        return sql
    # Imported here: a view with table-mappings is the only user of a SQL parser, and most
    # runs have none (tests/unit/test_cold_start_imports.py).
    import sqlglot
    from sqlglot import exp

    lookup = {key.lower(): value for key, value in mappings.items()}
    try:
        tree = sqlglot.parse_one(sql, read="hive")
    except sqlglot.errors.ParseError as error:
        raise ReplicationModeError(
            f"cannot parse view SQL to apply table-mappings: {error}"
        ) from None
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}

    def rename(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Table) or not node.name:
            return node
        if not node.db and node.name.lower() in ctes:
            return node
        qualified = f"{node.db or default_database}.{node.name}".lower()
        target = lookup.get(qualified)
        if target is None:
            return node
        database, _, table = target.partition(".")
        if not table:
            raise ReplicationModeError(f"table-mappings: {target!r} is not database.table")
        alias = node.alias or node.name
        renamed = exp.Table(
            this=exp.to_identifier(table, quoted=True),
            db=exp.to_identifier(database, quoted=True),
        )
        if alias.lower() != table.lower() or node.alias:
            renamed = exp.alias_(renamed, exp.to_identifier(alias, quoted=True), table=True)
        return renamed

    return tree.transform(rename).sql(dialect="hive")
