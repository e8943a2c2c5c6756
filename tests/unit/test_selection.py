"""Selecting many tables: ``table-name-pattern`` and ``exclude``, expanded per table."""

import pytest

from ferry.config import parse_config
from ferry.core.errors import ConfigError
from ferry.planning.selection import expand, needs_catalog

CATALOG = {
    "sales": ["customers", "orders", "orders_2025", "orders_tmp", "returns"],
    "hr": ["people"],
}


def listed(database: str) -> list[str]:
    return list(CATALOG.get(database.lower(), []))


def config(*replications, **extra):
    return parse_config(
        {
            "source-catalog": {"name": "onprem", "hive-metastore-uris": "thrift://ms1:9083"},
            "replica-catalog": {"name": "dr", "hive-metastore-uris": "thrift://ms2:9083"},
            **extra,
            "table-replications": list(replications),
        },
        environ={},
    )


def pattern(regex, exclude=None, **replica):
    source = {"database-name": "sales", "table-name-pattern": regex}
    if exclude is not None:
        source["exclude"] = exclude
    return {
        "source-table": source,
        "replica-table": {
            "database-name": "sales_dr",
            "table-location": "s3://dr/sales",
            **replica,
        },
    }


def named(table, replica_db="sales_dr", **replica):
    return {
        "source-table": {"database-name": "sales", "table-name": table},
        "replica-table": {
            "database-name": replica_db,
            "table-location": f"s3://dr/{table}",
            **replica,
        },
    }


def names(replications):
    return [(r.source_table.qualified_name, r.replica_qualified_name) for r in replications]


def test_a_pattern_selects_matching_tables_each_keeping_its_name():
    run = expand(config(pattern("orders.*")), list_tables=listed)
    assert names(run) == [
        ("sales.orders", "sales_dr.orders"),
        ("sales.orders_2025", "sales_dr.orders_2025"),
        ("sales.orders_tmp", "sales_dr.orders_tmp"),
    ]
    # The table-location is a root: each table gets its own folder below it.
    assert [r.replica_table.table_location for r in run] == [
        "s3://dr/sales/orders",
        "s3://dr/sales/orders_2025",
        "s3://dr/sales/orders_tmp",
    ]
    assert all(not r.source_table.is_pattern for r in run)


def test_the_whole_pattern_must_match_ignoring_case():
    assert names(expand(config(pattern("ORDERS")), list_tables=listed)) == [
        ("sales.orders", "sales_dr.orders")
    ]
    assert expand(config(pattern("order")), list_tables=listed) == []


def test_exclude_takes_names_and_patterns():
    run = expand(config(pattern(".*", exclude=["customers", ".*_tmp"])), list_tables=listed)
    assert [r.source_table.table_name for r in run] == ["orders", "orders_2025", "returns"]
    one = expand(config(pattern("orders.*", exclude="orders_tmp")), list_tables=listed)
    assert [r.source_table.table_name for r in one] == ["orders", "orders_2025"]


def test_a_pattern_without_replica_database_keeps_the_source_database():
    document = pattern("returns")
    del document["replica-table"]["database-name"]
    [run] = expand(config(document), list_tables=listed)
    assert run.replica_qualified_name == "sales.returns"


def test_named_tables_and_patterns_run_in_config_order():
    run = expand(
        config(named("customers"), pattern("r.*")),
        list_tables=listed,
    )
    assert names(run) == [
        ("sales.customers", "sales_dr.customers"),
        ("sales.returns", "sales_dr.returns"),
    ]


def test_each_database_is_listed_once():
    calls = []

    def counting(database):
        calls.append(database)
        return listed(database)

    expand(
        config(pattern("orders"), pattern("returns", **{"database-name": "other"})), [], counting
    )
    assert calls == ["sales"]


def test_a_named_config_needs_no_catalog():
    plain = config(named("orders"))
    assert not needs_catalog(plain)
    assert names(expand(plain)) == [("sales.orders", "sales_dr.orders")]
    assert needs_catalog(config(pattern(".*")))
    with pytest.raises(ValueError, match="needs the source catalog"):
        expand(config(pattern(".*")))


def test_table_selection_picks_matched_tables_without_listing():
    many = config(named("customers"), pattern("orders.*"))
    assert not needs_catalog(many, ["sales.orders_2025"])
    assert names(expand(many, ["SALES.Orders_2025"])) == [
        ("sales.orders_2025", "sales_dr.orders_2025")
    ]
    # A matching name the catalog may not have still runs, to fail on its own.
    assert names(expand(many, ["sales.orders_gone"])) == [
        ("sales.orders_gone", "sales_dr.orders_gone")
    ]
    with pytest.raises(ConfigError, match=r"sales.returns: not in the config \(its tables: "):
        expand(many, ["sales.returns"])


def test_excluded_tables_are_not_selectable():
    with pytest.raises(ConfigError, match="sales.orders_tmp: not in the config"):
        expand(config(pattern("orders.*", exclude=["orders_tmp"])), ["sales.orders_tmp"])


def test_two_replications_writing_one_replica_are_refused_once_expanded():
    overlapping = config(pattern("orders.*"), pattern(".*_2025"))
    with pytest.raises(ConfigError) as raised:
        expand(overlapping, list_tables=listed, source="replication.yml")
    assert str(raised.value) == (
        "replication.yml: table-replications[0] and table-replications[1] both write the "
        "replica table sales_dr.orders_2025 (from sales.orders_2025); exclude the table from "
        "one of them"
    )
    named_and_matched = config(named("orders"), pattern("orders.*"))
    with pytest.raises(ConfigError, match="replica table sales_dr.orders "):
        expand(named_and_matched, list_tables=listed)
    # Excluded from the pattern, the named replication has the table alone.
    fixed = config(named("orders"), pattern("orders.*", exclude=["orders"]))
    assert len(expand(fixed, list_tables=listed)) == 3


def test_one_source_to_two_replica_databases_is_two_replications():
    run = expand(
        config(pattern("orders"), pattern("orders", **{"database-name": "sales_eu"})),
        list_tables=listed,
    )
    assert names(run) == [("sales.orders", "sales_dr.orders"), ("sales.orders", "sales_eu.orders")]


def test_a_matched_table_finds_its_replication_again():
    many = config(named("customers"), pattern("orders.*", exclude=["orders_tmp"]))
    concrete = many.replication_of("sales.orders_2025", "sales_dr.orders_2025")
    assert concrete.source_table.table_name == "orders_2025"
    assert concrete.replica_table.table_location == "s3://dr/sales/orders_2025"
    assert concrete.copier_options == many.copier_options
    assert many.replication_of("sales.customers").source_table.table_name == "customers"
    with pytest.raises(ConfigError, match="not in the config"):
        many.replication_of("sales.orders_tmp")
    with pytest.raises(ConfigError, match="not in the config"):
        many.replication_of("sales.orders", "elsewhere.orders")


def test_a_concrete_replication_survives_a_round_trip_through_json():
    from ferry.config import TableReplication

    concrete = config(pattern("orders.*")).replication_of("sales.orders")
    again = TableReplication.model_validate_json(concrete.model_dump_json())
    assert again == concrete


@pytest.mark.parametrize(
    ("source", "replica", "message"),
    [
        (
            {"table-name": "orders", "table-name-pattern": ".*"},
            {},
            "source-table: give 'table-name' or 'table-name-pattern', not both",
        ),
        (
            {},
            {},
            "missing key 'table-name' in table-replications[0].source-table (or "
            "'table-name-pattern' for many tables)",
        ),
        (
            {"table-name-pattern": "orders("},
            {},
            "source-table.table-name-pattern: 'orders(' is not a regular expression: "
            "missing ), unterminated subpattern at position 6",
        ),
        ({"table-name-pattern": " "}, {}, "an empty pattern; write e.g. '.*' for every table"),
        (
            {"table-name": "orders", "exclude": ["x"]},
            {},
            "source-table: 'exclude' goes with 'table-name-pattern' only",
        ),
        (
            {"table-name-pattern": ".*", "exclude": ["[x"]},
            {},
            "source-table.exclude: '[x' is not a regular expression",
        ),
        (
            {"table-name-pattern": ".*"},
            {"table-name": "copy"},
            "replica-table.table-name cannot go with source-table.table-name-pattern: each "
            "matched table keeps its name",
        ),
    ],
    ids=[
        "both",
        "neither",
        "bad-regex",
        "empty",
        "exclude-without-pattern",
        "bad-exclude",
        "rename",
    ],
)
def test_a_selection_that_cannot_work_is_refused_at_load(source, replica, message):
    with pytest.raises(ConfigError) as raised:
        config(
            {
                "source-table": {"database-name": "sales", **source},
                "replica-table": {"table-location": "s3://dr/x", **replica},
            }
        )
    assert message in str(raised.value)


def test_a_pattern_into_its_own_database_of_the_same_catalog_is_refused():
    with pytest.raises(ConfigError, match="each table matching '.\\*' would be its own replica"):
        parse_config(
            {
                "source-catalog": {"name": "a", "hive-metastore-uris": "thrift://ms1:9083"},
                "replica-catalog": {"name": "b", "hive-metastore-uris": "thrift://ms1:9083"},
                "table-replications": [
                    {
                        "source-table": {"database-name": "sales", "table-name-pattern": ".*"},
                        "replica-table": {"table-location": "s3://dr/x"},
                    }
                ],
            }
        )


class ListingCatalog:
    """A source catalog that only lists tables, and counts how often the source is opened
    (Resolve tables also opens the replica catalog, for the promoted replicas it leaves out)."""

    opened = 0

    def __init__(self, settings, aws):
        if settings.name == "onprem":
            type(self).opened += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        pass

    def list_table_names(self, database):
        return listed(database)


def test_resolve_tables_gives_each_matched_table_its_own_item(tmp_path):
    import yaml

    from ferry.statemachine.outcomes import resolved_tables
    from ferry.states import resolve_tables
    from ferry.states.context import StateContext

    path = tmp_path / "replication.yml"
    document = {
        "source-catalog": {"name": "onprem", "hive-metastore-uris": "thrift://ms1:9083"},
        "replica-catalog": {"name": "dr", "hive-metastore-uris": "thrift://ms2:9083"},
        "table-replications": [named("customers"), pattern("orders_.*")],
    }
    path.write_text(yaml.safe_dump(document))
    ListingCatalog.opened = 0
    ids = iter(["e1", "e2", "e3", "e4"])
    context = StateContext(
        (tmp_path / "work").as_uri(), catalogs=ListingCatalog, event_ids=lambda _: next(ids)
    )
    result = resolve_tables.run(context, {"configUri": str(path)}, max_concurrency=4)
    assert [
        (i["sourceTable"], i["replicaTable"], i["eventId"]) for i in resolved_tables(result)
    ] == [
        ("sales.customers", "sales_dr.customers", "e1"),
        ("sales.orders_2025", "sales_dr.orders_2025", "e2"),
        ("sales.orders_tmp", "sales_dr.orders_tmp", "e3"),
    ]
    assert ListingCatalog.opened == 1
    # Named tables need no catalog.
    one = resolve_tables.run(
        context, {"configUri": str(path), "tables": ["sales.orders_2025"]}, max_concurrency=4
    )
    assert [i["sourceTable"] for i in resolved_tables(one)] == ["sales.orders_2025"]
    assert ListingCatalog.opened == 1


def test_resolve_tables_marks_the_tables_to_adopt_and_refuses_one_the_run_does_not_replicate(
    tmp_path,
):
    import yaml

    from ferry.core.errors import ConfigError
    from ferry.statemachine.outcomes import resolved_tables
    from ferry.states import resolve_tables
    from ferry.states.context import StateContext

    path = tmp_path / "replication.yml"
    document = {
        "source-catalog": {"name": "onprem", "hive-metastore-uris": "thrift://ms1:9083"},
        "replica-catalog": {"name": "dr", "hive-metastore-uris": "thrift://ms2:9083"},
        "table-replications": [named("customers"), named("orders")],
    }
    path.write_text(yaml.safe_dump(document))
    context = StateContext((tmp_path / "work").as_uri(), catalogs=ListingCatalog)

    result = resolve_tables.run(
        context, {"configUri": str(path), "adopt": ["SALES_DR.Orders"]}, max_concurrency=4
    )

    assert {i["sourceTable"]: i["adopt"] for i in resolved_tables(result)} == {
        "sales.customers": False,
        "sales.orders": True,
    }
    with pytest.raises(ConfigError, match=r"^adopt: sales_dr\.other is not a replica table"):
        resolve_tables.run(
            context,
            {"configUri": str(path), "tables": ["sales.customers"], "adopt": ["sales_dr.other"]},
            max_concurrency=4,
        )
    # A table the config replicates but this run leaves out is not adopted either.
    with pytest.raises(ConfigError, match=r"^adopt: sales_dr\.orders is not a replica table"):
        resolve_tables.run(
            context,
            {"configUri": str(path), "tables": ["sales.customers"], "adopt": ["sales_dr.orders"]},
            max_concurrency=4,
        )
