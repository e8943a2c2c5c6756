import pytest

from ferry.config import CopierOptions, ReplicationMode, load_config, parse_config
from ferry.core.errors import ConfigError

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


# -- bad input: every one is a ConfigError naming the file and the key ------------------------

TWO_METASTORES = """
source-catalog: {name: onprem, hive-metastore-uris: "thrift://ms1:9083"}
replica-catalog: {name: dr, hive-metastore-uris: "thrift://ms2:9083"}
table-replications:
  - source-table: {database-name: sales, table-name: orders}
    replica-table: {database-name: sales_dr, table-location: "s3://dr/orders"}
"""

LOCATION = "table-replications[0].replica-table.table-location: "


@pytest.mark.parametrize(
    ("location", "message"),
    [
        (
            "file://tmp/x",
            "'file://tmp/x' names the host 'tmp'; a local path needs three slashes: file:///tmp/x",
        ),
        ("file://localhost/x", "names the host 'localhost'"),
        ("ftp://host/x", "scheme 'ftp' is not supported; use one of file://, s3://, s3a://"),
        ("http://host/x", "scheme 'http' is not supported"),
        ("s3://", "'s3://' names no bucket; write s3://bucket/path"),
        ("s3:///x", "'s3:///x' names no bucket"),
        ("gs:///x", "'gs:///x' names no bucket; write gs://bucket/path"),
        ("file:///", "'file:///' is the root folder"),
        ("hdfs://nn:8020/", "'hdfs://nn:8020/' is the root folder"),
        (
            "s3://dr/a/../orders",
            "has an empty, '.' or '..' segment; write the folder itself, e.g. s3://dr/orders",
        ),
        # Still refused once its repeated slashes are one: refused as written.
        ("s3://dr/a//../orders", "'s3://dr/a//../orders' has an empty, '.' or '..' segment"),
        ("file://tmp//x", "'file://tmp//x' names the host 'tmp'"),
        ("s3:///x//y", "'s3:///x//y' names no bucket"),
        ("s3://dr/orders?versionId=1", "has a '?' or '#'"),
        ("s3://dr//orders?versionId=1", "has a '?' or '#'"),
        ("/data/orders", "'/data/orders' is not a URI"),
        ("file:data/orders", "'file:data/orders' is not an absolute path"),
    ],
    ids=lambda value: value if "://" in value or value.startswith("/") else "",
)
def test_a_location_ferry_cannot_write_as_written_is_refused(tmp_path, location, message):
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, TWO_METASTORES.replace("s3://dr/orders", location))
    line = str(raised.value)
    assert line.startswith(f"{tmp_path / 'c.yml'}: {LOCATION}") and message in line


@pytest.mark.parametrize(
    "location",
    [
        "file:///data/orders",
        "file:/data/orders",  # as Hive writes local locations
        "s3://dr/orders",
        "s3a://dr/orders",
        "S3N://dr/orders/",
        "s3://dr",
        "gs://dr/orders",
        "hdfs://nn:8020/warehouse/orders",
        "hdfs:///warehouse/orders",
        "viewfs://cluster/warehouse/orders",
        "abfss://dr@account.dfs.core.windows.net/orders",
    ],
)
def test_supported_locations_load(tmp_path, location):
    config = load(tmp_path, TWO_METASTORES.replace("s3://dr/orders", location))
    assert config.table_replications[0].replica_table.table_location == location.rstrip("/")
    assert config.warnings == ()


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("file:/data/warehouse//orders", "file:/data/warehouse/orders"),  # Hive's spelling
        ("file:///data/warehouse//orders", "file:///data/warehouse/orders"),
        ("file:////data/orders", "file:///data/orders"),
        (
            "hdfs://nn:8020/warehouse//sales_dr///orders/",
            "hdfs://nn:8020/warehouse/sales_dr/orders",
        ),
        ("hdfs:///warehouse//orders", "hdfs:///warehouse/orders"),
        ("s3://dr/warehouse//orders", "s3://dr/warehouse/orders"),
        ("s3a://dr//warehouse//orders", "s3a://dr/warehouse/orders"),
        ("gs://dr/warehouse//orders", "gs://dr/warehouse/orders"),
    ],
)
def test_repeated_slashes_are_read_as_hadoops_path_reads_them(tmp_path, written, read):
    config = load(tmp_path, TWO_METASTORES.replace("s3://dr/orders", written))
    assert config.table_replications[0].replica_table.table_location == read
    [warning] = config.warnings
    assert str(warning) == (
        f"{tmp_path / 'c.yml'}: {LOCATION}{written!r} is read as {read!r}: repeated slashes "
        "count as one, as Hive (Hadoop's Path) reads a location"
    )


def test_a_config_without_table_replications_is_housekeeping_only(tmp_path):
    head = TWO_METASTORES.split("table-replications:")[0]
    for text in (head, head + "table-replications:\n", head + "table-replications: []\n"):
        config = load(tmp_path, text)
        assert config.housekeeping_only
        assert config.table_replications == [] and config.select() == []
        assert config.replica_catalog.metastore_uris == ["thrift://ms2:9083"]
    assert not load(tmp_path, TWO_METASTORES).housekeeping_only


@pytest.mark.parametrize(
    ("uris", "message"),
    [
        (
            "thrift://ms1:abc",
            "source-catalog.hive-metastore-uris: 'thrift://ms1:abc': the port 'abc' is not a number",
        ),
        (
            "thrift://ms1:70000",
            "source-catalog.hive-metastore-uris: 'thrift://ms1:70000': the port 70000 is not in 1-65535",
        ),
        ("thrift://ms1:0", "the port 0 is not in 1-65535"),
        ("thrift://ms1", "'thrift://ms1' is not thrift://host:port"),
        ("thrift://:9083", "'thrift://:9083' is not thrift://host:port"),
        ("thrift://ms1:9083/db", "'thrift://ms1:9083/db' is not thrift://host:port"),
        ("", "source-catalog.hive-metastore-uris: no URI given; write thrift://host:port"),
        (" , ,", "source-catalog.hive-metastore-uris: no URI given"),
        ("thrift://ms1:9083, thrift://ms1b:x", "'thrift://ms1b:x': the port 'x' is not a number"),
    ],
    ids=[
        "port-not-a-number",
        "port-over-65535",
        "port-0",
        "no-port",
        "no-host",
        "a-path",
        "empty",
        "only-commas",
        "second-uri",
    ],
)
def test_a_metastore_uri_must_be_thrift_host_port(tmp_path, uris, message):
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, TWO_METASTORES.replace("thrift://ms1:9083", uris))
    assert message in str(raised.value)


def test_ipv6_metastore_uris_load(tmp_path):
    config = load(tmp_path, TWO_METASTORES.replace("thrift://ms1:9083", "thrift://[::1]:9083"))
    assert config.source_catalog.metastore_uris == ["thrift://[::1]:9083"]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "table-name: orders}",
            "table-name: order-lines}",
            "table-replications[0].source-table.table-name: 'order-lines' is not a valid Hive name: use only letters, digits and _",
        ),
        (
            "database-name: sales,",
            "database-name: 'sales eu',",
            "table-replications[0].source-table.database-name: 'sales eu' is not a valid Hive name",
        ),
        (
            "database-name: sales_dr,",
            "database-name: sales.dr,",
            "table-replications[0].replica-table.database-name: 'sales.dr' is not a valid Hive name",
        ),
        (
            "database-name: sales_dr,",
            "database-name: sales_dr, table-name: 'commandes_été',",
            "table-replications[0].replica-table.table-name: 'commandes_été' is not a valid Hive name",
        ),
        (
            "database-name: sales_dr,",
            f"database-name: {'d' * 129},",
            "table-replications[0].replica-table.database-name: 'dddddddddddddddddddd'… has 129 characters; at most 128 are allowed",
        ),
    ],
    ids=["hyphen", "space", "dot", "non-ascii", "too-long"],
)
def test_names_the_metastore_would_reject_are_refused(tmp_path, old, new, message):
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, TWO_METASTORES.replace(old, new))
    assert message in str(raised.value)


def test_hive_names_of_any_case_load(tmp_path):
    config = load(tmp_path, TWO_METASTORES.replace("table-name: orders", "table-name: Orders_2026"))
    assert config.table_replications[0].source_table.table_name == "Orders_2026"


@pytest.mark.parametrize(
    ("listener", "message"),
    [
        (
            "{topic: ferry-events}",
            "sns-event-listener.topic: 'ferry-events' is not an SNS topic ARN (arn:aws:sns:<region>:<12-digit account>:<name>)",
        ),
        (
            "{topic: 'arn:aws:sns:us-east-1:1234:ferry'}",
            "sns-event-listener.topic: 'arn:aws:sns:us-east-1:1234:ferry' is not an SNS topic ARN",
        ),
        ("{topic: 'arn:aws:sqs:us-east-1:123456789012:ferry'}", "is not an SNS topic ARN"),
        ("{topic: 'arn:aws:sns:us-east-1:123456789012:'}", "is not an SNS topic ARN"),
        ("{topic: 'arn:aws:sns:useast1:123456789012:ferry'}", "is not an SNS topic ARN"),
        (
            "{topic: 'arn:aws:sns:us-east-1:123456789012:ferry', region: eu-west-1}",
            "sns-event-listener.region: 'eu-west-1' is not the topic's region 'us-east-1'",
        ),
        (
            "{topic: 'arn:aws:sns:us-east-1:123456789012:ferry', region: Ireland}",
            "sns-event-listener.region: 'Ireland' is not an AWS region",
        ),
    ],
    ids=["a-name", "short-account", "sqs", "no-name", "bad-region", "other-region", "not-a-region"],
)
def test_a_malformed_sns_topic_is_refused(tmp_path, listener, message):
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, TWO_METASTORES + f"sns-event-listener: {listener}\n")
    assert message in str(raised.value)


@pytest.mark.parametrize(
    "topic",
    [
        "arn:aws:sns:us-east-1:123456789012:ferry",
        "arn:aws-cn:sns:cn-north-1:123456789012:ferry_events",
        "arn:aws-us-gov:sns:us-gov-west-1:123456789012:ferry.fifo",
    ],
)
def test_sns_topic_arns_of_every_partition_load(tmp_path, topic):
    config = load(tmp_path, TWO_METASTORES + f"sns-event-listener: {{topic: '{topic}'}}\n")
    assert config.sns_event_listener.topic == topic


@pytest.mark.parametrize(
    ("partition_filter", "message"),
    [
        (
            "dt >= {{ days_ago('x') }}",
            "table-replications[0].source-table.partition-filter: cannot be rendered: days_ago() takes a whole number first, not 'x'",
        ),
        ("dt >= '{{ hours_ago(1, 2) }}'", "hours_ago() takes a strftime format second, not 2"),
        (
            "dt >= '{{ weeks_ago(1) }}'",
            "partition-filter: cannot be rendered: 'weeks_ago' is undefined (the helpers are now_utc(), days_ago(n, fmt), hours_ago(n, fmt))",
        ),
        (
            "dt >= '{{ days_ago(10000000) }}'",
            "partition-filter: cannot be rendered: date value out of range",
        ),
    ],
    ids=["days-ago-text", "hours-ago-format", "undefined-helper", "out-of-range"],
)
def test_a_partition_filter_that_cannot_render_is_refused_at_load(
    tmp_path, partition_filter, message
):
    text = TWO_METASTORES.replace(
        "table-name: orders}", f'table-name: orders, partition-filter: "{partition_filter}"}}'
    )
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    assert message in str(raised.value)


def test_a_replica_named_twice_in_another_case_is_refused(tmp_path):
    text = TWO_METASTORES + (
        "  - source-table: {database-name: sales, table-name: customers}\n"
        "    replica-table: {database-name: SALES_DR, table-name: Orders, table-location: 's3://dr/c'}\n"
    )
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    assert str(raised.value) == (
        f"{tmp_path / 'c.yml'}: two table-replications write the same replica table SALES_DR.Orders "
        "(as sales_dr.orders; Hive names are case-insensitive): "
        "table-replications[0] and table-replications[1]"
    )


@pytest.mark.parametrize(
    ("replica_catalog", "replica_table"),
    [
        ('{name: dr, hive-metastore-uris: "thrift://ms1:9083"}', "{table-location: 's3://dr/o'}"),
        (
            '{name: dr, hive-metastore-uris: "thrift://MS1:9083,thrift://ms3:9083"}',
            "{database-name: SALES, table-name: ORDERS, table-location: 's3://dr/o'}",
        ),
    ],
    ids=["same-uri-default-names", "shared-uri-other-case"],
)
def test_a_table_that_is_its_own_replica_is_refused(tmp_path, replica_catalog, replica_table):
    text = TWO_METASTORES.replace(
        '{name: dr, hive-metastore-uris: "thrift://ms2:9083"}', replica_catalog
    ).replace('{database-name: sales_dr, table-location: "s3://dr/orders"}', replica_table)
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    assert (
        "table-replications[0].replica-table: the replica table sales.orders is the source table itself"
        in str(raised.value)
    )


def test_the_same_glue_catalog_on_both_sides_is_one_catalog(tmp_path):
    text = BASE.replace(
        'source-catalog: {name: onprem, hive-metastore-uris: "thrift://a:9083,thrift://b:9083"}',
        "source-catalog: {name: lake, glue: {region: us-east-1}}",
    ).replace("replica-table: {database-name: sales_dr, ", "replica-table: {database-name: sales, ")
    with pytest.raises(
        ConfigError,
        match=r"table-replications\[0\].replica-table: the replica table sales.orders is the source table itself",
    ):
        load(tmp_path, text)


def test_a_copy_within_one_catalog_under_another_name_loads(tmp_path):
    text = TWO_METASTORES.replace("thrift://ms2:9083", "thrift://ms1:9083")
    assert load(tmp_path, text).table_replications[0].replica_qualified_name == "sales_dr.orders"


def test_a_config_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "c.yml"
    path.write_bytes(TWO_METASTORES.replace("orders", "commandes_\xe9t\xe9").encode("latin-1"))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert (
        str(raised.value)
        == f"{path}: not UTF-8 text: byte 0xe9 on line 5; save the config as UTF-8"
    )


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "c.yml"
    path.write_bytes(TWO_METASTORES.encode("utf-8-sig"))
    assert load_config(path).source_catalog.name == "onprem"


def test_tables_are_selected_case_insensitively(tmp_path):
    config = load(tmp_path, BASE)
    assert [r.source_table.table_name for r in config.select(["SALES.Orders", "sales.orders"])] == [
        "orders"
    ]
