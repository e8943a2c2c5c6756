import pytest

from ferry.config import CopierOptions, ReplicationMode, load_config, parse_config
from ferry.errors import ConfigError

BASE = """
source-catalog: {name: onprem, hive-metastore-uris: "thrift://a:9083,thrift://b:9083"}
replica-catalog: {name: aws, glue: {region: us-east-1}}
table-replications:
  - source-table: {database-name: sales, table-name: orders, partition-filter: "dt >= '{{ days_ago(2) }}'", partition-limit: 100}
    replica-table: {database-name: sales_dr, table-location: "s3://dr/warehouse/orders/"}
    transform-options: {table-properties: {owner: dr-team}}
  - source-table: {database-name: sales, table-name: big_orders}
    replication-mode: METADATA_MIRROR
    table-mappings: {sales.orders: sales_dr.orders}
"""


def load(tmp_path, text):
    path = tmp_path / "c.yml"
    path.write_text(text)
    return load_config(path)


def test_a_circus_train_style_file_loads(tmp_path):
    config = load(tmp_path, BASE)
    orders, view = config.table_replications
    assert config.source_catalog.metastore_uris == ["thrift://a:9083", "thrift://b:9083"]
    assert config.replica_catalog.glue.region == "us-east-1"
    assert orders.replica_qualified_name == "sales_dr.orders"
    assert orders.replica_table.table_location == "s3://dr/warehouse/orders"  # trailing / dropped
    assert orders.transform_options.table_properties == {"owner": "dr-team"}
    assert view.replication_mode is ReplicationMode.METADATA_MIRROR
    assert view.replica_qualified_name == "sales.big_orders"  # defaults to the source's names
    assert config.copier_options_for(orders) == CopierOptions()


def test_circus_train_copier_options_are_accepted(tmp_path):
    config = load(tmp_path, BASE + "copier-options: {file-attribute: replication, threads: 3}\n")
    assert config.copier_options.threads == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [1, 2", "invalid YAML at line 1, column 9"),
        ("- 1\n- 2\n", "the config must be a mapping"),
        (
            BASE.replace("table-name: orders,", "table-name: orders, colour: red,"),
            "unknown key 'colour' in table-replications[0].source-table",
        ),
        (
            BASE.replace("table-name: orders,", ""),
            "missing key 'table-name' in table-replications[0].source-table",
        ),
        (
            BASE.replace("{{ days_ago(2) }}", "#{ #nowUtc().minusDays(2).toString('yyyy-MM-dd') }"),
            "write \"dt >= '{{ days_ago(2, '%Y-%m-%d') }}'\" instead",
        ),
        (
            BASE.replace("{{ days_ago(2) }}", "{{ days_ago(2) "),
            "partition-filter: invalid template",
        ),
        (
            BASE.replace('table-location: "s3://dr/warehouse/orders/"', "table-name: x"),
            "replica-table.table-location is required for replication-mode FULL",
        ),
        (BASE.replace("s3://dr/warehouse/orders/", "/data/orders"), "'/data/orders' is not a URI"),
        (
            BASE.replace(
                "glue: {region: us-east-1}", "glue: {}, hive-metastore-uris: thrift://x:1"
            ),
            "give exactly one of 'hive-metastore-uris' or 'glue'",
        ),
        (
            BASE.replace("thrift://a:9083,", "http://a:9083,"),
            "'http://a:9083' is not thrift://host:port",
        ),
        (
            BASE.replace("partition-limit: 100", "partition-limit: 0"),
            "partition-limit: Input should be greater than or equal to 1",
        ),
        (
            BASE.replace(
                "table-name: big_orders}",
                "table-name: big_orders}\n    replica-table: {database-name: sales_dr, table-name: orders}",
            ),
            "two table-replications write the same replica table sales_dr.orders",
        ),
        (
            BASE.split("table-replications:")[0] + "table-replications: []\n",
            "table-replications: List should have at least 1 item",
        ),
    ],
)
def test_bad_config_is_one_line_naming_file_and_key(tmp_path, text, message):
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    line = str(raised.value)
    assert line.startswith(str(tmp_path / "c.yml") + ": ")
    assert message in line
    assert "\n" not in line


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config: No such file"):
        load_config(tmp_path / "absent.yml")


def test_several_problems_are_counted():
    with pytest.raises(ConfigError, match=r"\(and \d+ more problems?\)"):
        parse_config({"source-catalog": {}, "replica-catalog": {}, "table-replications": [{}]})
