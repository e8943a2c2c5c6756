"""Configs written the way Circus Train's documentation writes them, and what each key does.

Every key of Circus Train's configuration reference is either implemented (a loaded value
asserted here) or accepted with one warning saying what Ferry does instead; a key that is
neither is an error that suggests the closest one.
"""

import json
from datetime import timedelta

import pytest

from ferry.commands import print_warnings
from ferry.commands.cli import main
from ferry.config import (
    CopierOptions,
    OrphanedDataStrategy,
    ReplicationMode,
    ReplicationStrategy,
    load_config,
    parse_config_text,
)
from ferry.core.errors import ConfigError

# Circus Train's README, "Configuring source and replica", with the tables filled in.
SOURCE_AND_REPLICA = """
source-catalog:
  name: on-premises-cluster
  disable-snapshots: false
  hive-metastore-uris: thrift://metastore.domain:9083
  site-xml:
    - /etc/hive/conf/hive-site.xml
  configuration-properties:
    dfs.replication: 3
replica-catalog:
  name: aws-data-warehouse
  hive-metastore-uris: thrift://emr-master.compute.amazonaws.com:9083
  metastore-tunnel:
    route: ec2-user@bastion-host -> hadoop@emr-master
    private-keys: /home/user/.ssh/bastion-key-pair.pem,/home/user/.ssh/emr-key-pair.pem
    known-hosts: /home/user/.ssh/known_hosts
security:
  credential-provider: jceks://hdfs/hcom/etl/team/conf/aws-123.jceks
copier-options:
table-replications:
  - source-table:
      database-name: test_database
      table-name: test_unpartitioned_table
    replica-table:
      database-name: test_database
      table-name: test_unpartitioned_table
      table-location: s3://bucket/table/path
"""


def load(tmp_path, text, environ=None, name="circus-train.yml"):
    path = tmp_path / name
    path.write_text(text)
    return load_config(path, environ={} if environ is None else environ)


def warned(config) -> dict[str, str]:
    return {warning.key: warning.message for warning in config.warnings}


def test_the_readme_source_and_replica_example_loads_with_one_warning_per_unused_key(tmp_path):
    config = load(tmp_path, SOURCE_AND_REPLICA)
    assert config.source_catalog.metastore_uris == ["thrift://metastore.domain:9083"]
    assert config.replica_catalog.name == "aws-data-warehouse"
    assert config.copier_options == CopierOptions()  # an empty section is its defaults
    [replication] = config.table_replications
    assert replication.replica_qualified_name == "test_database.test_unpartitioned_table"
    warnings = warned(config)
    assert list(warnings) == [
        "source-catalog.disable-snapshots",
        "source-catalog.site-xml",
        "source-catalog.configuration-properties",
        "replica-catalog.metastore-tunnel",
        "security",
    ]
    assert warnings["replica-catalog.metastore-tunnel"].startswith(
        "Ferry opens no SSH tunnel: forward a port yourself (ssh -L"
    )
    assert "AWS Secrets Manager" in warnings["security"]
    assert str(config.warnings[0]) == (
        f"{tmp_path / 'circus-train.yml'}: source-catalog.disable-snapshots: Ferry takes no HDFS "
        "snapshots: it lists the source files once, into the manifest, and verifies every "
        "copied file"
    )


def test_metrics_extensions_and_spring_settings_are_warnings(tmp_path):
    text = SOURCE_AND_REPLICA + (
        "graphite:\n  config: hdfs:///conf/cluster.properties\n  namespace: com.company.ct\n"
        "metrics-reporter: {period: 1, time-unit: MINUTES}\n"
        "extension-packages: com.hotels.bdp.circustrain.aws.sns.event\n"
        "instance: {home: /home/ct, name: dev}\n"
        "logging: {config: 'file:/home/foo/log4j.xml'}\n"
        "gcp-security: {credential-provider: /home/hadoop/google-credential.json}\n"
        "spring: {datasource: {max-active: 5}}\n"
    )
    warnings = warned(load(tmp_path, text))
    assert "to CloudWatch, namespace Ferry" in warnings["graphite"]
    assert "CloudWatch" in warnings["metrics-reporter"]
    assert "built in (sns-event-listener)" in warnings["extension-packages"]
    assert "--home" in warnings["instance"]
    assert "stderr" in warnings["logging"]
    assert "GOOGLE_APPLICATION_CREDENTIALS" in warnings["gcp-security"]
    assert "SPRING_PROFILES_ACTIVE" in warnings["spring"]


def test_every_copier_option_is_implemented_or_a_warning(tmp_path):
    distcp = (
        "  file-attribute: replication, blocksize, user, group, permission, checksumtype\n"
        "  preserve-raw-xattrs: true\n  atomic-commit: false\n  atomic-work-path: /foo/work\n"
        "  blocking: true\n  copy-strategy: uniformsize\n  filters-file: /foo/filters\n"
        "  ignore-failures: false\n  log-path: /foo/log\n  task-bandwidth: 100\n  max-maps: 50\n"
        "  skip-crc: false\n  ssl-configuration-file: /foo/ssl\n"
        "  ignore-missing-partition-folder-errors: true\n"
        "  copier-factory-class: com.hotels.bdp.circustrain.distcpcopier.DistCpCopierFactory\n"
        "  data-manipulator-factory-class: com.hotels.bdp.circustrain.distcpcopier.X\n"
        "  tmp-dir: hdfs:///tmp/circus-train/\n"
    )
    s3 = (
        "  credential-provider: jceks://hdfs/x.jceks\n  storage-class: Standard\n"
        "  s3-server-side-encryption: true\n  region: us-east-1\n"
        "  multipart-upload-chunk-size: 5\n  multipart-upload-threshold: 16\n"
        "  num-of-workers-per-map: 20\n  s3-endpoint-uri: https://s3.amazonaws.com\n"
        "  upload-retry-count: 3\n  upload-retry-delay-ms: 300\n  upload-buffer-size: 0\n"
        "  canned-acl: bucket-owner-full-control\n"
        # implemented: the role the replica's data is written with (replica-catalog.assume-role)
        "  assume-role: arn:aws:iam::210987654321:role/ct\n"
        "  assume-role-session-duration-seconds: 43200\n  s3s3-retry-max-copy-attempts: 3\n"
        # implemented: Circus Train's S3 to S3 sizes (bytes) become Ferry's (MiB, rounded up)
        "  s3s3-max-thread-pool-size: 20\n"
        "  s3s3-multipart-copy-threshold-in-bytes: 16777216\n"
        "  s3s3-multipart-copy-part-size-in-bytes: 10000000\n"
    )
    text = SOURCE_AND_REPLICA.replace("copier-options:\n", "copier-options:\n" + distcp + s3)
    config = load(tmp_path, text)
    options = config.copier_options
    assert (options.threads, options.multipart_threshold_mib, options.part_size_mib) == (20, 16, 10)
    copier_warnings = {k: v for k, v in warned(config).items() if k.startswith("copier-options.")}
    assert set(copier_warnings) == {
        f"copier-options.{line.strip().split(':')[0]}"
        for line in (distcp + s3).splitlines()
        if line.strip()
        and not line.strip().startswith(("s3s3-max", "s3s3-multipart", "assume-role", "#"))
    }
    role = config.replica_catalog.assume_role
    assert (role.role_arn, role.session_duration) == (
        "arn:aws:iam::210987654321:role/ct",
        timedelta(hours=12),
    )
    assert (
        "bucket's default encryption" in copier_warnings["copier-options.s3-server-side-encryption"]
    )
    assert "lower copier-options.threads" in copier_warnings["copier-options.task-bandwidth"]


def test_a_circus_train_option_and_its_ferry_option_together_are_refused(tmp_path):
    text = SOURCE_AND_REPLICA.replace(
        "copier-options:\n", "copier-options:\n  threads: 4\n  s3s3-max-thread-pool-size: 20\n"
    )
    with pytest.raises(ConfigError, match="give 'threads' or Circus Train's 's3s3-max-thread-"):
        load(tmp_path, text)


# Circus Train's "Metadata transformations" and circus-train-avro's README, together.
TOP_LEVEL_DEFAULTS = """
source-catalog: {name: dev, hive-metastore-uris: "thrift://hive-dev:9083"}
replica-catalog: {name: aws, hive-metastore-uris: "thrift://hive-aws:9083"}
copier-options: {threads: 4, inline-threshold-mib: 10}
transform-options:
  table-properties:
    my-custom-property: my-custom-value
    '[my.custom.property2]': 2
  avro-serde-options:
    base-url: s3://schemas/global
orphaned-data-strategy: NONE
housekeeping:
  expired-path-duration: PT12H
  schema-name: circus_train
  db-init-script: classpath:/schema.sql
  h2: {database: /home/ct/data/housekeeping}
  data-source:
    driver-class-name: org.h2.Driver
    url: jdbc:h2:${housekeeping.h2.database};AUTO_SERVER=TRUE;DB_CLOSE_ON_EXIT=FALSE
    username: user
    password: ${HOUSEKEEPING_PASSWORD}
  fetch-legacy-replica-path-page-size: 500
  cleanup-threads: 10
table-replications:
  - source-table: {database-name: example, table-name: overridden}
    replica-table: {database-name: my_database, table-location: "s3://dr/overridden"}
    copier-options: {threads: 16}
    transform-options:
      table-properties: {my-custom-override: my-custom-value}
      avro-serde-options: {base-url: "s3://schemas/overridden/"}
    orphaned-data-strategy: HOUSEKEEPING
  - source-table: {database-name: example, table-name: defaults}
    replica-table: {database-name: my_database, table-location: "s3://dr/defaults"}
"""


def test_top_level_options_apply_to_every_table_and_tables_override_them(tmp_path):
    config = load(tmp_path, TOP_LEVEL_DEFAULTS)
    overridden, defaults = config.table_replications
    # copier options merge key by key
    assert config.copier_options_for(overridden).threads == 16
    assert config.copier_options_for(overridden).inline_threshold_mib == 10
    assert config.copier_options_for(defaults) == CopierOptions(threads=4, inline_threshold_mib=10)
    # transform options: a table's own option replaces the top-level one whole
    assert overridden.transform_options.table_properties == {
        "my-custom-override": "my-custom-value"
    }
    assert defaults.transform_options.table_properties == {
        "my-custom-property": "my-custom-value",
        "my.custom.property2": "2",  # Spring's [a.b] key escape; values are text
    }
    assert overridden.transform_options.avro_base_url == "s3://schemas/overridden"
    assert defaults.transform_options.avro_base_url == "s3://schemas/global"
    # orphaned data strategy and housekeeping
    assert config.housekeeping_for(overridden).orphaned_data_strategy is (
        OrphanedDataStrategy.HOUSEKEEPING
    )
    assert config.housekeeping_for(defaults).orphaned_data_strategy is OrphanedDataStrategy.NONE
    assert config.housekeeping_for(defaults).expired_path_duration == timedelta(hours=12)
    assert not config.housekeeping_for(defaults).enabled
    # the housekeeping database: warnings, and its unset placeholders are no error
    warnings = warned(config)
    for key in ("schema-name", "db-init-script", "h2", "data-source"):
        assert "DynamoDB" in warnings[f"housekeeping.{key}"]
    assert set(warnings) >= {
        "housekeeping.fetch-legacy-replica-path-page-size",
        "housekeeping.cleanup-threads",
    }


@pytest.mark.parametrize(
    ("duration", "expected"),
    [
        ("P3D", timedelta(days=3)),
        ("PT12H", timedelta(hours=12)),
        ("P1DT6H30M", timedelta(days=1, hours=6, minutes=30)),
        ("pt90s", timedelta(seconds=90)),
        ("PT0.5S", timedelta(seconds=0.5)),
    ],
)
def test_expired_path_duration_is_an_iso_8601_duration(tmp_path, duration, expected):
    text = SOURCE_AND_REPLICA + f"housekeeping: {{expired-path-duration: {duration}}}\n"
    assert load(tmp_path, text).housekeeping.expired_path_duration == expected


def test_expired_path_duration_defaults_to_three_days(tmp_path):
    config = load(tmp_path, SOURCE_AND_REPLICA)
    assert config.housekeeping.expired_path_duration == timedelta(days=3)
    [replication] = config.table_replications
    assert config.housekeeping_for(replication).enabled


@pytest.mark.parametrize(
    ("duration", "message"),
    [
        ("3 days", "'3 days' is not an ISO-8601 duration of days, hours, minutes and seconds"),
        ("P1W", "'P1W' is not an ISO-8601 duration"),
        ("P1M", "'P1M' is not an ISO-8601 duration"),
        ("P", "'P' is not an ISO-8601 duration"),
        ("PT", "'PT' is not an ISO-8601 duration"),
        ("P0D", "'P0D': give a positive duration"),
    ],
)
def test_a_duration_ferry_cannot_read_is_refused(tmp_path, duration, message):
    text = SOURCE_AND_REPLICA + f"housekeeping: {{expired-path-duration: {duration}}}\n"
    with pytest.raises(ConfigError, match="housekeeping.expired-path-duration: ") as raised:
        load(tmp_path, text)
    assert message in str(raised.value)


def test_replication_modes_strategies_and_the_hive_diff_load(tmp_path):
    text = """
source-catalog: {name: a, hive-metastore-uris: "thrift://a:9083"}
replica-catalog: {name: b, hive-metastore-uris: "thrift://b:9083"}
table-replications:
  - source-table: {database-name: db, table-name: t1, generate-partition-filter: true,
                   partition-limit: 10}
    replica-table: {table-location: "s3://dr/t1"}
    replication-mode: FULL_OVERWRITE
    replication-strategy: PROPAGATE_DELETES
  - source-table: {database-name: db, table-name: t2}
    replication-mode: METADATA_UPDATE
  - source-table: {database-name: db, table-name: t3}
    replication-mode: METADATA_MIRROR
    partition-iterator-batch-size: 100
    partition-fetcher-buffer-size: 100
"""
    config = load(tmp_path, text)
    t1, t2, t3 = config.table_replications
    assert t1.replication_mode is ReplicationMode.FULL_OVERWRITE
    assert t1.replication_strategy is ReplicationStrategy.PROPAGATE_DELETES
    assert t1.source_table.generate_partition_filter and t1.source_table.partition_limit == 10
    assert t2.replication_mode is ReplicationMode.METADATA_UPDATE
    assert t2.replication_strategy is ReplicationStrategy.UPSERT
    assert not t2.source_table.generate_partition_filter
    assert t3.replica_qualified_name == "db.t3"  # the source's names by default
    assert list(warned(config)) == [
        "table-replications[2].partition-iterator-batch-size",
        "table-replications[2].partition-fetcher-buffer-size",
    ]


def test_full_overwrite_needs_a_table_location_like_full(tmp_path):
    text = SOURCE_AND_REPLICA.replace("      table-location: s3://bucket/table/path\n", "")
    with pytest.raises(
        ConfigError, match="table-location is required for replication-mode FULL_OVERWRITE"
    ):
        load(tmp_path, text + "    replication-mode: FULL_OVERWRITE\n")


def test_a_source_table_location_is_a_warning(tmp_path):
    text = SOURCE_AND_REPLICA.replace(
        "      table-name: test_unpartitioned_table\n    replica-table:",
        "      table-name: test_unpartitioned_table\n"
        "      table-location: /source/my_folder/test_database/test_table_partitioned\n"
        "      partition-filter: \"local_date >= '{{ days_ago(7) }}'\"\n"
        "      partition-limit: 3\n"
        "    replica-table:",
    )
    config = load(tmp_path, text)
    assert config.table_replications[0].source_table.partition_limit == 3
    assert (
        "under its partition name"
        in warned(config)["table-replications[0].source-table.table-location"]
    )


def test_s3a_and_s3n_locations_are_s3(tmp_path):
    for scheme in ("s3a", "s3n"):
        config = load(tmp_path, SOURCE_AND_REPLICA.replace("s3://bucket", f"{scheme}://bucket"))
        location = config.table_replications[0].replica_table.table_location
        assert location == f"{scheme}://bucket/table/path"


def test_the_sns_listener_of_circus_train_aws_sns(tmp_path):
    text = SOURCE_AND_REPLICA + (
        "extension-packages: com.hotels.bdp.circustrain.aws.sns.event\n"
        "sns-event-listener:\n"
        "  region: eu-west-1\n"
        "  topic: arn:aws:sns:eu-west-1:123456789012:example-sns-topic\n"
        "  fail-topic: arn:aws:sns:eu-west-1:123456789012:example-sns-failure-topic\n"
        "  subject: ChooChoo!\n"
        "  headers: {pipeline-id: myPipelineId, kitchen-sink: included}\n"
        "  queue-size: 100\n"
    )
    config = load(tmp_path, text)
    listener = config.sns_event_listener
    assert listener.topic_for("FAILURE").endswith(":example-sns-failure-topic")
    assert listener.headers == {"pipeline-id": "myPipelineId", "kitchen-sink": "included"}
    assert "no queue" in warned(config)["sns-event-listener.queue-size"]


# -- ${PLACEHOLDERS} --------------------------------------------------------------------------


PLACEHOLDERS = """
source-catalog: {name: dev, hive-metastore-uris: "${SOURCE_METASTORE}"}
replica-catalog: {name: aws, hive-metastore-uris: "thrift://${REPLICA_HOST}:9083"}
sns-event-listener: {topic: "arn:aws:sns:us-east-1:123456789012:${TOPIC:ferry-events}"}
table-replications:
  - source-table:
      database-name: ${DATABASE}
      table-name: orders
      partition-filter: "dt >= '{{ days_ago(2) }}' AND region = '${REGION}'"
      partition-limit: ${LIMIT}
    replica-table:
      table-location: s3://${BUCKET}/orders
    transform-options:
      table-properties: {password: "${SECRET}"}
"""
ENVIRONMENT = {
    "SOURCE_METASTORE": "thrift://hive-dev:9083",
    "REPLICA_HOST": "emr-master",
    "DATABASE": "sales",
    "REGION": "eu",
    "LIMIT": "100",
    "BUCKET": "dr-bucket",
    "SECRET": "a: b # not a comment\nnor: a key",
}


def test_placeholders_are_resolved_from_the_environment(tmp_path):
    config = load(tmp_path, PLACEHOLDERS, ENVIRONMENT)
    [replication] = config.table_replications
    assert config.source_catalog.hive_metastore_uris == "thrift://hive-dev:9083"
    assert config.replica_catalog.hive_metastore_uris == "thrift://emr-master:9083"
    assert config.sns_event_listener.topic.endswith(":ferry-events")  # ${NAME:default}
    assert replication.source_table.qualified_name == "sales.orders"
    assert replication.source_table.partition_limit == 100
    # Jinja2's {{ }} is left to the partition filter
    assert (
        replication.source_table.partition_filter == "dt >= '{{ days_ago(2) }}' AND region = 'eu'"
    )
    assert replication.replica_table.table_location == "s3://dr-bucket/orders"
    # A value from the environment stays one value, whatever YAML would make of it.
    assert replication.transform_options.table_properties == {"password": ENVIRONMENT["SECRET"]}


def test_an_unset_placeholder_is_one_line_naming_it_and_its_key(tmp_path):
    environment = {key: value for key, value in ENVIRONMENT.items() if key != "BUCKET"}
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, PLACEHOLDERS, environment)
    assert str(raised.value) == (
        f"{tmp_path / 'circus-train.yml'}: table-replications[0].replica-table.table-location: "
        "${BUCKET} is not set in the environment (write ${NAME:default} for a default)"
    )


def test_placeholders_resolve_in_the_process_environment_by_default(tmp_path, monkeypatch):
    for key, value in ENVIRONMENT.items():
        monkeypatch.setenv(key, value)
    path = tmp_path / "c.yml"
    path.write_text(PLACEHOLDERS)
    assert load_config(path).replica_catalog.hive_metastore_uris == "thrift://emr-master:9083"


# -- Spring profiles --------------------------------------------------------------------------

# Circus Train's README, "Profiles within files".
PROFILES = """
source-catalog:
  name: on-premises-cluster
  hive-metastore-uris: thrift://onprem:9083
replica-catalog:
  name: aws-data-warehouse
table-replications:
  - source-table: {database-name: db, table-name: t}
    replica-table: {table-location: "s3://dr/t"}
---
spring:
  profiles: dev
replica-catalog:
  hive-metastore-uris: thrift://dev-host.com:9083
---
spring:
  profiles: qa, prod
replica-catalog:
  hive-metastore-uris: thrift://prod-host.com:9083
"""


@pytest.mark.parametrize(
    ("active", "uris"),
    [("dev", "thrift://dev-host.com:9083"), ("prod", "thrift://prod-host.com:9083")],
)
def test_profile_documents_apply_when_their_profile_is_active(tmp_path, active, uris):
    config = load(tmp_path, PROFILES, {"SPRING_PROFILES_ACTIVE": active})
    assert config.replica_catalog.hive_metastore_uris == uris
    assert config.replica_catalog.name == "aws-data-warehouse"  # merged key by key
    assert config.warnings == ()


def test_the_file_may_name_its_active_profile(tmp_path):
    text = "spring: {profiles: {active: dev}}\n" + PROFILES.lstrip()
    config = load(tmp_path, text)
    assert config.replica_catalog.hive_metastore_uris == "thrift://dev-host.com:9083"


def test_without_an_active_profile_the_profile_documents_do_not_apply(tmp_path):
    with pytest.raises(
        ConfigError, match="replica-catalog: give exactly one of 'hive-metastore-uris' or 'glue'"
    ):
        load(tmp_path, PROFILES)


# -- Circus Train's integration-test configs -------------------------------------------------

# Circus Train's integration tests run their configs with the catalogs given by the test
# runner (written here) and its placeholders set; a location is the replica warehouse's URI,
# which ends in a slash, joined to a path that starts with one.
# CircusTrainHdfsHdfsIntegrationTest/partitioned-single-table-with-housekeeping.yml:
RUNNER_CATALOGS = """
source-catalog: {name: source, hive-metastore-uris: "thrift://127.0.0.1:1"}
replica-catalog: {name: replica, hive-metastore-uris: "thrift://127.0.0.1:2"}
"""
PARTITIONED_WITH_HOUSEKEEPING = (
    RUNNER_CATALOGS
    + """
table-replications:
  - source-table:
      database-name: ${circus-train-runner.database-name}
      table-name: ct_table_p
      partition-filter: (continent='Europe' AND country='UK') OR (continent='Asia' AND country='China')
      partition-limit: 100
    replica-table:
      table-location: ${circus-train-runner.replica-warehouse-uri}/${circus-train-runner.database-name}/ct_table_p
copier-options:
  file-attribute: replication, blocksize, user, group, permission, checksumtype
  preserve-raw-xattrs: false
housekeeping:
  expired-path-duration: P1DT1H2M10S
spring:
  jpa:
    properties:
      hibernate.listeners.envers.autoRegister: true
"""
)
TABLE_LOCATION = "table-replications[0].replica-table.table-location"


def runner(warehouse: str) -> dict[str, str]:
    return {
        "circus-train-runner.replica-warehouse-uri": warehouse,
        "circus-train-runner.database-name": "ct_database",
    }


@pytest.mark.parametrize(
    "warehouse",
    [
        "file:/data/warehouse/",  # Hive's spelling of a local path
        "file:///data/warehouse/",
        "hdfs://namenode:8020/data/warehouse/",
        "s3://bucket/warehouse/",
        "s3a://bucket/warehouse/",
    ],
)
def test_a_location_joined_with_a_doubled_slash_is_read_as_hadoop_reads_it(tmp_path, warehouse):
    config = load(tmp_path, PARTITIONED_WITH_HOUSEKEEPING, runner(warehouse))
    [replication] = config.table_replications
    read = f"{warehouse}ct_database/ct_table_p"
    assert replication.replica_table.table_location == read
    assert replication.source_table.qualified_name == "ct_database.ct_table_p"
    assert config.housekeeping.expired_path_duration == timedelta(
        days=1, hours=1, minutes=2, seconds=10
    )
    written = f"{warehouse}/ct_database/ct_table_p"
    warnings = warned(config)
    assert warnings[TABLE_LOCATION] == (
        f"{written!r} is read as {read!r}: repeated slashes count as one, as Hive (Hadoop's "
        "Path) reads a location"
    )
    assert list(warnings) == [
        "copier-options.file-attribute",
        "copier-options.preserve-raw-xattrs",
        "spring",
        TABLE_LOCATION,
    ]


def test_the_warning_is_one_line_naming_the_key_as_written_and_as_read(tmp_path, capsys):
    config = load(tmp_path, PARTITIONED_WITH_HOUSEKEEPING, runner("s3://bucket/warehouse/"))
    print_warnings(config)
    lines = capsys.readouterr().err.splitlines()
    assert [line for line in lines if "table-location" in line] == [
        f"ferry: warning: {tmp_path / 'circus-train.yml'}: {TABLE_LOCATION}: "
        "'s3://bucket/warehouse//ct_database/ct_table_p' is read as "
        "'s3://bucket/warehouse/ct_database/ct_table_p': repeated slashes count as one, as Hive "
        "(Hadoop's Path) reads a location"
    ]
    assert len(lines) == 4  # one line a key: three Circus Train keys and the location


def test_avro_base_urls_and_pattern_roots_are_read_the_same_way(tmp_path):
    text = RUNNER_CATALOGS + (
        "transform-options: {avro-serde-options: {base-url: '${W}/schemas'}}\n"
        "table-replications:\n"
        "  - source-table: {database-name: db, table-name-pattern: 'ct_.*'}\n"
        "    replica-table: {database-name: db_dr, table-location: '${W}/db_dr'}\n"
        "  - source-table: {database-name: db, table-name: t}\n"
        "    replica-table: {database-name: db_dr, table-location: 's3://bucket/dr/t'}\n"
        "    transform-options: {avro-serde-options: {base-url: '${W}//t/schemas/'}}\n"
    )
    config = load(tmp_path, text, {"W": "s3://bucket/dr/"})
    pattern, table = config.table_replications
    assert pattern.for_table("ct_a").replica_table.table_location == "s3://bucket/dr/db_dr/ct_a"
    assert pattern.transform_options.avro_base_url == "s3://bucket/dr/schemas"
    assert table.transform_options.avro_base_url == "s3://bucket/dr/t/schemas"
    assert table.replica_table.table_location == "s3://bucket/dr/t"
    assert list(warned(config)) == [
        "transform-options.avro-serde-options.base-url",
        "table-replications[0].replica-table.table-location",
        "table-replications[1].transform-options.avro-serde-options.base-url",
    ]


def test_a_location_refused_for_more_than_its_slashes_is_refused_as_written(tmp_path):
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, PARTITIONED_WITH_HOUSEKEEPING, runner("s3://bucket/warehouse/../"))
    assert str(raised.value) == (
        f"{tmp_path / 'circus-train.yml'}: {TABLE_LOCATION}: "
        "'s3://bucket/warehouse/..//ct_database/ct_table_p' has an empty, '.' or '..' segment; "
        "write the folder itself, e.g. s3://bucket/ct_database/ct_table_p"
    )


# -- housekeeping-only configs ----------------------------------------------------------------

# CircusTrainHdfsHdfsIntegrationTest/housekeeping-only.yml, with the catalogs of its runner
# and the housekeeping section of Circus Train's README ("Configuring housekeeping").
HOUSEKEEPING_ONLY = (
    RUNNER_CATALOGS
    + """
graphite:
  prefix: dummy
  namespace: test
housekeeping:
  expired-path-duration: P3D
  db-init-script: classpath:/schema.sql
  data-source:
    driver-class-name: org.h2.Driver
    url: jdbc:h2:${housekeeping.h2.database};AUTO_SERVER=TRUE;DB_CLOSE_ON_EXIT=FALSE
    username: user
    password: secret
"""
)


def test_a_housekeeping_only_config_loads(tmp_path):
    config = load(tmp_path, HOUSEKEEPING_ONLY)
    assert config.housekeeping_only
    assert config.table_replications == [] and config.select() == []
    assert config.housekeeping.expired_path_duration == timedelta(days=3)
    assert list(warned(config)) == [
        "graphite",
        "housekeeping.db-init-script",
        "housekeeping.data-source",
    ]
    with pytest.raises(ConfigError) as raised:
        config.select(["sales.orders"])
    assert str(raised.value) == "sales.orders: not in the config (it has no table-replications)"


def test_a_housekeeping_only_config_declares_no_triggers(tmp_path):
    text = HOUSEKEEPING_ONLY + "triggers: {schedule: {expression: rate(1 day)}}\n"
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    assert str(raised.value) == (
        f"{tmp_path / 'circus-train.yml'}: triggers: a trigger starts a replication of the "
        "config, and it has no table-replications; give it table-replications or remove the "
        "triggers"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["replicate", "--home", "{home}"],
        ["replicate", "--dry-run", "--home", "{home}"],
        ["plan"],
        ["execute", "--wait", "--home", "{home}"],
    ],
    ids=lambda command: " ".join(a for a in command if a != "{home}" and a != "--home"),
)
def test_replicating_a_housekeeping_only_config_is_one_line_and_runs_nothing(
    tmp_path, capsys, command
):
    path = tmp_path / "housekeeping.yml"
    path.write_text(HOUSEKEEPING_ONLY)
    home = tmp_path / "home"
    name, *options = (argument.format(home=home) for argument in command)
    # The catalogs' ports have no metastore: the refusal comes before either is reached.
    assert main([name, str(path), *options]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"ferry: error: {path}: the config holds only housekeeping settings (no "
        "table-replications): nothing to replicate\n"
    )
    assert not home.exists()  # no state, no work folder


def test_housekeeping_of_a_housekeeping_only_config_has_nothing_to_do(tmp_path, capsys):
    path = tmp_path / "housekeeping.yml"
    path.write_text(HOUSEKEEPING_ONLY)
    home = tmp_path / "home"
    # The catalogs' ports have no metastore: housekeeping of no table opens neither.
    assert main(["housekeeping", str(path), "--home", str(home)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[:2] == [
        f"nothing to housekeep: {path} has no table-replications; Ferry housekeeps each "
        "replica table with the config that replicates it",
        "deleted 0 superseded locations, kept 0",
    ]
    assert lines[2].startswith(f"report: file://{home}/work/housekeeping/")
    assert len(lines) == 3
    assert "ferry: warning:" in err and "ferry: error:" not in err
    assert main(["housekeeping", str(path), "--home", str(home), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tables"] == [] and not report["dryRun"]


# -- mistakes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "table-name: test_unpartitioned_table\n    replica",
            "tabel-name: test_unpartitioned_table\n    replica",
            "unknown key 'tabel-name' in table-replications[0].source-table; "
            "did you mean 'table-name'?",
        ),
        (
            "  disable-snapshots: false",
            "  disable-snapshot: false",
            "unknown key 'disable-snapshot' in source-catalog; did you mean 'disable-snapshots'?",
        ),
        (
            "copier-options:\n",
            "copier-options:\n  thread: 3\n",
            "unknown key 'thread' in copier-options; did you mean 'threads'?",
        ),
        (
            "security:",
            "securty:",
            "unknown key 'securty' in the top level; did you mean 'security'?",
        ),
        (
            "copier-options:\n",
            "copier-options:\n  colour: red\n",
            "unknown key 'colour' in copier-options",
        ),
    ],
    ids=["table-name", "catalog", "copier-option", "top-level", "no-suggestion"],
)
def test_a_key_that_is_neither_ferrys_nor_circus_trains_is_an_error(tmp_path, old, new, message):
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, SOURCE_AND_REPLICA.replace(old, new))
    line = str(raised.value)
    assert line == f"{tmp_path / 'circus-train.yml'}: {message}", line
    if "colour" in message:
        assert "did you mean" not in line


def test_custom_transform_options_are_not_circus_trains_own(tmp_path):
    text = SOURCE_AND_REPLICA + "transform-options: {custom-transform-config-key1: someValue}\n"
    with pytest.raises(ConfigError, match="unknown key 'custom-transform-config-key1'"):
        load(tmp_path, text)


def test_a_spel_filter_names_its_jinja2_equivalent(tmp_path):
    text = SOURCE_AND_REPLICA.replace(
        "      table-name: test_unpartitioned_table\n    replica-table:",
        "      table-name: test_unpartitioned_table\n"
        "      partition-filter: local_date >= '#{#nowUtc().minusDays(3).toString(\"yyyy-MM-dd\")}'\n"
        "    replica-table:",
    )
    with pytest.raises(ConfigError, match=r"write \"local_date >= '\{\{ days_ago\(3, '%Y-%m-%d'\)"):
        load(tmp_path, text)


def test_an_empty_topic_is_a_one_line_error_not_a_crash():
    text = SOURCE_AND_REPLICA + "sns-event-listener: {topic: , fail-topic: x}\n"
    with pytest.raises(ConfigError, match="sns-event-listener.fail-topic: 'x' is not an SNS topic"):
        parse_config_text(text, "c.yml", {})


def test_every_circus_train_key_is_in_the_documentation_table():
    import re
    from pathlib import Path

    from ferry import config as config_module

    document = (Path(__file__).parents[2] / "docs" / "CONFIGURATION.md").read_text()
    section = document.split("## Circus Train's keys: what Ferry does with each")[1]
    documented = {
        segment
        for token in re.findall(r"`([^`]+)`", section)
        for segment in re.split(r"[.\s(),*\[\]]+", token)
        if segment
    }
    models = [
        value
        for value in vars(config_module).values()
        if isinstance(value, type) and issubclass(value, config_module._Model)
    ]
    keys = {
        key
        for model in models
        for key in (*model.circus_train_keys, *getattr(model, "circus_train_translations", {}))
    }
    assert keys, "the models list Circus Train's keys"
    assert sorted(keys - documented) == []
