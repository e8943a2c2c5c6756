"""Event ids, view rewriting, notification bodies, value ranges and URI paths."""

import json
from datetime import UTC, datetime

import pytest

from ferry.catalog import partition_sort_key
from ferry.catalog.hive_partition_filters import value_range_filters
from ferry.config import SnsEventListener
from ferry.core.errors import ReplicationModeError
from ferry.core.event_id import EVENT_ID_PATTERN, new_event_id
from ferry.core.model import Column, escape_path_name, partition_name
from ferry.lifecycle.notify import IcebergChange, ReplicationEvent, SnsNotifier, message_body
from ferry.planning.views import rewrite_view_sql
from ferry.storage import fs
from ferry.storage.file_systems import FileSystems, S3Settings

T0 = datetime(2026, 11, 21, 3, 4, 5, 678000, tzinfo=UTC)


def test_event_ids_are_lower_case_sortable_and_unique():
    first = new_event_id(lambda: T0, lambda: "0123abcd")
    assert first == "ferry-20261121t030405678z-0123abcd"
    later = new_event_id(lambda: T0.replace(second=6))
    assert EVENT_ID_PATTERN.match(later) and later > first and later == later.lower()
    assert len({new_event_id(lambda: T0) for _ in range(200)}) == 200


def test_view_rewrite_renames_tables_and_keeps_column_qualifiers():
    sql = "SELECT `orders`.`id` FROM `sales`.`orders` JOIN `sales`.`customers` `c` ON `orders`.`cid` = `c`.`id`"
    out = rewrite_view_sql(
        sql, {"sales.orders": "dr.orders_r", "SALES.Customers": "dr.customers"}, "sales"
    )
    assert out == (
        "SELECT `orders`.`id` FROM `dr`.`orders_r` AS `orders` "
        "JOIN `dr`.`customers` AS `c` ON `orders`.`cid` = `c`.`id`"
    )


def test_view_rewrite_resolves_unqualified_names_and_spares_ctes_and_literals():
    sql = "WITH recent AS (SELECT * FROM orders) SELECT 'sales.orders' AS s FROM recent JOIN orders ON recent.id = orders.id"
    out = rewrite_view_sql(sql, {"sales.orders": "dr.orders", "sales.recent": "dr.nope"}, "sales")
    assert out == (
        "WITH recent AS (SELECT * FROM `dr`.`orders`) SELECT 'sales.orders' AS s "
        "FROM recent JOIN `dr`.`orders` ON recent.id = orders.id"
    )


def test_view_rewrite_needs_database_dot_table():
    with pytest.raises(ReplicationModeError, match="not database.table"):
        rewrite_view_sql("SELECT * FROM sales.orders", {"sales.orders": "orders"}, "sales")


def event(**changes):
    fields = dict(
        type="SUCCESS",
        event_id="e",
        source_catalog="onprem",
        replica_catalog="dr",
        source_table="a.b",
        replica_table="c.d",
        replica_metastore_uris="thrift://x:1",
        replica_table_location="s3://dr/c/d/e",
        start_time=T0,
        end_time=T0,
        partition_keys=(Column("dt", "string"), Column("hour", "int")),
        modified_partitions=[["2026-11-21", "1"]],
        bytes_replicated=7,
    )
    return ReplicationEvent(**{**fields, **changes})


COMMON = [
    "protocolVersion", "type", "startTime", "endTime", "eventId", "sourceCatalog",
    "replicaCatalog", "sourceTable", "replicaTable", "replicaTableLocation",
    "replicaMetastoreUris",
]  # fmt: skip


def test_messages_have_circus_train_protocol_1_2_fields_in_its_cases():
    success = json.loads(message_body(event(headers={"pipeline-id": "p1"})))
    assert list(success) == [
        "protocolVersion", "type", "headers", "startTime", "endTime", "eventId",
        "sourceCatalog", "replicaCatalog", "sourceTable", "replicaTable",
        "replicaTableLocation", "replicaMetastoreUris", "partitionKeys",
        "modifiedPartitions", "bytesReplicated",
    ]  # fmt: skip
    assert success["protocolVersion"] == "1.2" and success["headers"] == {"pipeline-id": "p1"}
    assert list(success["partitionKeys"].items()) == [("dt", "string"), ("hour", "int")]
    assert success["modifiedPartitions"] == [["2026-11-21", "1"]]
    assert success["startTime"] == "2026-11-21T03:04:05.678Z"
    unpartitioned = json.loads(message_body(event(modified_partitions=None, partition_keys=())))
    assert list(unpartitioned) == [*COMMON, "bytesReplicated"]
    view = json.loads(message_body(event(modified_partitions=None, bytes_replicated=None)))
    assert list(view) == COMMON
    start = json.loads(message_body(event(type="START")))
    assert list(start) == [k for k in COMMON if k != "endTime"]
    failure = json.loads(message_body(event(type="FAILURE", error_message="boom")))
    assert list(failure) == [*COMMON, "errorMessage"] and failure["errorMessage"] == "boom"


def test_message_is_truncated_past_the_sns_limit():
    small = json.loads(message_body(event()))
    assert "messageTruncated" not in small
    many = [[f"2026-01-01-{i:06d}", "1"] for i in range(20000)]
    big = message_body(event(modified_partitions=many))
    assert len(big.encode()) < 256 * 1024
    assert (
        json.loads(big)["messageTruncated"] is True and json.loads(big)["modifiedPartitions"] == []
    )


def test_an_iceberg_success_names_the_replicas_metadata_and_the_snapshots_it_got():
    change = IcebergChange("s3://dr/t/metadata/00001-b.metadata.json",
                           "s3://dr/t/metadata/00000-a.metadata.json", (11, 12))  # fmt: skip
    success = json.loads(message_body(event(modified_partitions=None, iceberg=change)))
    assert list(success) == [*COMMON, "bytesReplicated", "iceberg"]
    assert success["iceberg"] == {
        "metadataLocation": "s3://dr/t/metadata/00001-b.metadata.json",
        "previousMetadataLocation": "s3://dr/t/metadata/00000-a.metadata.json",
        "addedSnapshotIds": [11, 12],
    }
    failure = json.loads(message_body(event(type="FAILURE", iceberg=change)))
    assert "iceberg" not in failure
    # A first replication of a long history: the ids go before the message passes SNS's limit.
    many = IcebergChange(change.metadata_location, None, tuple(range(10**18, 10**18 + 20000)))
    big = json.loads(message_body(event(modified_partitions=None, iceberg=many)))
    assert big["messageTruncated"] is True
    assert big["iceberg"] == {
        "metadataLocation": change.metadata_location,
        "previousMetadataLocation": None,
        "addedSnapshotIds": [],
    }


def test_each_message_type_goes_to_its_topic_in_the_listeners_region():
    listener = SnsEventListener.model_validate(
        {
            "topic": "arn:aws:sns:eu-west-1:123456789012:all",
            "fail-topic": "arn:aws:sns:eu-west-1:123456789012:failures",
            "region": "eu-west-1",
            "subject": "ChooChoo!",
            "headers": {"pipeline-id": "p1"},
        }
    )
    sent = []

    class Client:
        def __init__(self, region):
            self.region = region

        def publish(self, **arguments):
            sent.append((self.region, arguments["TopicArn"], arguments["Subject"]))

    notifier = SnsNotifier(listener, Client)
    for kind in ("START", "SUCCESS", "FAILURE"):
        notifier.publish(event(type=kind))
    assert sent == [
        ("eu-west-1", "arn:aws:sns:eu-west-1:123456789012:all", "ChooChoo!"),
        ("eu-west-1", "arn:aws:sns:eu-west-1:123456789012:all", "ChooChoo!"),
        ("eu-west-1", "arn:aws:sns:eu-west-1:123456789012:failures", "ChooChoo!"),
    ]
    with pytest.raises(ValueError, match="give 'topic', or all of"):
        SnsEventListener.model_validate({"fail-topic": "arn:aws:sns:eu-west-1:123456789012:x"})


KEYS = (Column("region", "string"), Column("hour", "int"))


def test_value_ranges_cover_every_value_in_pages():
    values = sorted(
        [(r, str(h)) for r in ("eu", "us") for h in range(12)] + [("ap", "1")],
        key=lambda v: partition_sort_key(KEYS, v),
    )
    ranges = value_range_filters(KEYS, values, 5)
    assert ranges[0] == "region >= 'ap' AND region <= 'ap'"
    assert "region = 'eu' AND hour >= 0 AND hour <= 4" in ranges
    assert all(r.count(">=") == 1 for r in ranges)

    # Every value falls in exactly one range of at most 5.
    def matches(expr, value):
        env = {"region": value[0], "hour": int(value[1])}
        python = expr.replace(" AND ", " and ").replace(" = ", " == ")
        return eval(python, {}, env)  # noqa: S307 - test-only evaluation of our own ranges

    for value in values:
        assert sum(matches(r, value) for r in ranges) == 1
    assert all(sum(matches(r, v) for v in values) <= 5 for r in ranges)


def test_value_ranges_give_up_on_unbounded_types():
    assert value_range_filters((Column("d", "date"),), [("2026-01-01",)], 5) is None
    assert value_range_filters((Column("s", "string"),), [('it\'s "x"',)], 5) is None
    assert value_range_filters((Column("s", "string"),), [("it's",)], 5) == [
        's >= "it\'s" AND s <= "it\'s"'
    ]


def test_partition_names_escape_like_hive():
    assert partition_name(KEYS, ("a/b", "1")) == "region=a%2Fb/hour=1"
    assert escape_path_name("x:y=z") == "x%3Ay%3Dz"


def test_uri_paths():
    assert fs.join("s3://b/a/", "/e1/", "dt=1") == "s3://b/a/e1/dt=1"
    assert fs.relative_path("file:/w/t/dt=1", "file:///w/t") == "dt=1"
    assert fs.relative_path("s3a://b/w/t/dt=1", "s3://b/w/t/") == "dt=1"
    assert fs.relative_path("s3://b/w/tx/dt=1", "s3://b/w/t") is None
    assert fs.relative_path("s3://b/w/t", "s3://b/w/t") == ""


def test_s3_settings_come_from_the_standard_aws_variables():
    assert S3Settings.from_environment({}) == S3Settings(None, None)
    assert S3Settings.from_environment(
        {
            "AWS_ENDPOINT_URL": "http://127.0.0.1:5000",
            "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:5001",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "eu-west-1",
        }
    ) == S3Settings("http://127.0.0.1:5001", "eu-west-1")


class RegionAnswers:
    """HeadBucket as AWS answers it: a bucket one may not read still names its region."""

    def __init__(self, answers):
        self.answers = answers
        self.asked = []

    def head_bucket(self, Bucket):
        from botocore.exceptions import ClientError

        self.asked.append(Bucket)
        status, region = self.answers[Bucket]
        headers = {"x-amz-bucket-region": region} if region else {}
        reply = {"ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": headers}}
        if status != 200:
            raise ClientError({**reply, "Error": {"Code": str(status)}}, "HeadBucket")
        return {**reply, "BucketRegion": region}


def test_each_bucket_gets_its_own_regions_file_system_and_is_looked_up_once():
    answers = RegionAnswers(
        {"west": (200, "us-west-2"), "forbidden": (403, "eu-central-1"), "missing": (404, None)}
    )
    file_systems = FileSystems(S3Settings(region="us-east-1"), s3_client=answers)
    assert file_systems.resolve("s3://west/a/b")[0].region == "us-west-2"
    assert file_systems.resolve("s3a://west/c")[0] is file_systems.resolve("s3://west/a")[0]
    assert file_systems.resolve("s3://forbidden/a")[0].region == "eu-central-1"
    assert file_systems.resolve("s3://missing/a")[0].region == "us-east-1"
    file_systems.resolve("s3://missing/b")
    assert answers.asked == ["west", "forbidden", "missing", "missing"]  # a missing one: again


@pytest.mark.parametrize(
    "uri",
    [
        "s3://bucket/warehouse/dt=1", "s3://bucket/warehouse/dt=1/", "s3a://bucket/a",
        "S3://bucket/a", "s3://bucket/a?b", "s3://bucket/a#b", "s3://bucket/a//b",
        "file:///tmp/a", "file:/tmp/a", "file:/tmp/a/", "file:/tmp/./a", "file://host/a",
        "file:///tmp/./a", "file:///tmp/a/../b",
        "file:///tmp//a", "file:///tmp/a/", "/tmp/a", "gs://bucket/a", "hdfs://nn:8020/a/",
    ],
)  # fmt: skip
def test_the_quick_normal_form_is_the_parsed_one(uri):
    assert fs.normalise(uri) == fs._normalise(uri)
