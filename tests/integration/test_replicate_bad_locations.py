"""A replica location Ferry cannot write, through ``ferry replicate`` as a person runs it: one
line naming the location, exit code 1, no traceback, and no false word about the snapshot
(nothing references a snapshot no replica has)."""

from __future__ import annotations

import pytest

from tests.helpers import catalog_state, config_document, files_below
from tests.integration.test_iceberg_bad_input import ferry, refused_line

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "location",
    [
        # No HDFS client on this host (no JVM for pyarrow's libhdfs).
        "hdfs://namenode.invalid:8020/dr/orders",
        # A bucket that does not exist.
        "s3://ferry-no-such-bucket-{unique}/dr/orders",
        # A folder name longer than a local file system allows.
        "{tmp}/" + "x" * 300 + "/orders",
    ],
    ids=["hdfs-without-hdfs", "s3-no-such-bucket", "local-name-too-long"],
)
def test_a_replica_location_that_cannot_be_written(
    local_runtime, sample, source_catalog, replica_catalog, write_config, tmp_path, unique,
    location,
):  # fmt: skip
    target = location.format(unique=unique, tmp=tmp_path.as_uri())
    replica_database = f"{sample.database}_dr"
    document = config_document(
        local_runtime,
        [
            {
                "source-table": {"database-name": sample.database, "table-name": "orders"},
                "replica-table": {"database-name": replica_database, "table-location": target},
            }
        ],
    )

    def state():
        return (
            catalog_state(source_catalog, sample.database, ["orders"]),
            catalog_state(replica_catalog, replica_database, ["orders"]),
            files_below(sample.orders.location),
            files_below(tmp_path.as_uri()),
        )

    config = write_config(document)
    before = state()

    result = ferry("replicate", str(config), "--home", str(tmp_path / "home"))

    line = refused_line(result)
    assert target in line, line
    assert "the replica references" not in result.stdout and "kept" not in result.stdout
    after = state()
    assert after[:3] == before[:3]
    assert {k: v for k, v in after[3].items() if "/home/" not in k} == before[3]
