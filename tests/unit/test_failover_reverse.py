"""The reverse config of a failback whose replica side is in another account."""

from __future__ import annotations

import yaml

from ferry.config.loading import parse_config_text
from ferry.copying.side_credentials import buckets_of
from ferry.core.model import Column
from ferry.failover.reverse import ReverseTable, reverse_document

ROLE = "arn:aws:iam::210987654321:role/ferry-dr"


def original(tmp_path, assume_role):
    replica = {"name": "dr", "glue": {"region": "us-east-1", "catalog-id": "210987654321"}}
    if assume_role is not None:
        replica["assume-role"] = assume_role
    path = tmp_path / "replication.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "source-catalog": {"name": "primary", "glue": {"region": "us-east-1"}},
                "replica-catalog": replica,
                "table-replications": [
                    {
                        "source-table": {"database-name": "sales", "table-name": "orders"},
                        "replica-table": {
                            "database-name": "sales_dr",
                            "table-location": "s3://dr-bucket/orders",
                        },
                    }
                ],
            }
        )
    )
    return path


TABLE = ReverseTable(
    "sales_dr", "orders", "sales", "orders", "s3://primary/sales/orders",
    (Column("dt", "string"),), (("2026-12-01",),),
)  # fmt: skip


def test_the_replica_side_s_role_reaches_the_replica_buckets_as_the_reverse_s_source(tmp_path):
    role = {"role-arn": ROLE, "external-id": "ferry-x", "buckets": "dr-extra"}
    document = reverse_document(original(tmp_path, role), [TABLE], ["dr-bucket"])
    assert document["source-catalog"]["assume-role"] == {
        "role-arn": ROLE,
        "external-id": "ferry-x",
        "buckets": ["dr-bucket", "dr-extra"],
    }
    reverse = parse_config_text(yaml.safe_dump(document), "reverse.yml")
    assert reverse.source_catalog.assume_role.role_arn == ROLE
    assert buckets_of(reverse, reverse.source_catalog) == {"dr-bucket", "dr-extra"}
    assert reverse.replica_catalog.assume_role is None


def test_a_replica_side_without_a_role_is_the_reverse_s_source_as_written(tmp_path):
    path = original(tmp_path, None)
    document = reverse_document(path, [TABLE], ["dr-bucket"])
    assert document["source-catalog"] == yaml.safe_load(path.read_text())["replica-catalog"]
    assert "assume-role" not in document["source-catalog"]
