"""The grants in a replication's plan: they travel in the plan document, make an otherwise
unchanged replica go through Commit, and are shown by ``ferry plan`` and counted in SUCCESS."""

import json
from dataclasses import replace
from datetime import UTC, datetime

from ferry.catalog.grants import Grant, GrantChanges, GrantTarget, ResourceTag
from ferry.config import CopierOptions, parse_config
from ferry.copying.manifest import ManifestSummary
from ferry.core.model import Column, StorageDescriptor, Table, TableType
from ferry.lifecycle.notify import SUCCESS, message_body, replication_event
from ferry.planning.grants_preview import preview_lines
from ferry.planning.plan_document import PlanDocument, read_plan, write_plan
from ferry.planning.preview import preview_of
from ferry.planning.replication_plan import ReplicationPlan
from ferry.planning.runs import CopierKind, choose_copier
from ferry.storage import fs

ROLE = "arn:aws:iam::222222222222:role/analyst"
CONFIG = parse_config(
    {
        "source-catalog": {"name": "src", "glue": {"region": "us-east-1"}},
        "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
        "permissions": {"lake-formation": {"principal-mappings": {ROLE: ROLE}}},
        "table-replications": [
            {
                "source-table": {"database-name": "sales", "table-name": "orders"},
                "replica-table": {"database-name": "sales_dr"},
                "replication-mode": "METADATA_MIRROR",
            }
        ],
    }
)
CHANGES = GrantChanges(
    grant=(Grant(ROLE, GrantTarget("sales_dr", "orders", ("id",)), "SELECT", True, ROLE),),
    revoke=(Grant(ROLE, GrantTarget("sales_dr"), "DESCRIBE"),),
    tag=(ResourceTag(GrantTarget("sales_dr", "orders"), "team", "finance"),),
    unmapped_principals=("arn:aws:iam::111111111111:role/contractor",),
)


def unchanged_plan(grants: GrantChanges | None) -> ReplicationPlan:
    """A plan whose replica already holds the table as it is: nothing but its grants."""
    table = Table(
        "sales_dr", "orders", TableType.EXTERNAL,
        StorageDescriptor("s3://b/orders", (Column("id", "bigint"),)),
    )  # fmt: skip
    return ReplicationPlan(
        "e1", CONFIG.table_replications[0], replace(table, database="sales"), table, table, (),
        (), ManifestSummary(0, 0, 0), None, None, table_data_changed=False, grants=grants,
    )  # fmt: skip


def test_a_plan_with_grants_round_trips_through_the_plan_document(tmp_path):
    plan = unchanged_plan(CHANGES)
    uri = fs.local_uri(tmp_path / "plan.json")
    started = datetime(2026, 11, 27, tzinfo=UTC)
    write_plan(uri, PlanDocument("file:///c.yml", CopierKind.METADATA, started, plan))
    back = read_plan(uri).plan
    assert back.grants == CHANGES
    assert back.grants.grant[0].grantor == ROLE


def test_grants_to_give_make_an_unchanged_replica_go_through_commit():
    assert choose_copier(unchanged_plan(None), CopierOptions()) is CopierKind.NONE
    assert choose_copier(unchanged_plan(GrantChanges()), CopierOptions()) is CopierKind.NONE
    only_reported = GrantChanges(unmapped_principals=CHANGES.unmapped_principals)
    assert choose_copier(unchanged_plan(only_reported), CopierOptions()) is CopierKind.NONE
    assert choose_copier(unchanged_plan(CHANGES), CopierOptions()) is CopierKind.METADATA


def test_ferry_plan_shows_each_change_and_each_unmapped_principal():
    shown = preview_of(unchanged_plan(CHANGES), CopierKind.METADATA)["permissions"]
    assert preview_lines(shown) == [
        "would revoke DESCRIBE on sales_dr to " + ROLE,
        "would grant SELECT on sales_dr.orders (id) to " + ROLE + " with grant option",
        "would tag team=finance on sales_dr.orders",
        "source principal arn:aws:iam::111111111111:role/contractor is not in "
        "principal-mappings: not granted",
    ]
    assert preview_of(unchanged_plan(None), CopierKind.NONE)["permissions"] is None


def test_success_counts_what_was_carried_and_what_no_mapping_covers():
    plan = unchanged_plan(CHANGES)
    started = datetime(2026, 11, 27, tzinfo=UTC)

    def message(copied: bool) -> dict:
        event = replication_event(
            CONFIG, plan.replication, SUCCESS, "e1", started, started, "glue:us-east-1", plan,
            copied=copied,
        )  # fmt: skip
        return json.loads(message_body(event))

    assert message(True)["permissions"] == {
        "granted": 1, "revoked": 1, "tagged": 1, "untagged": 0,
        "unmappedPrincipals": 1, "unmappedTags": 0,
    }  # fmt: skip
    assert message(False)["permissions"]["granted"] == 0
    assert message(False)["permissions"]["unmappedPrincipals"] == 1
    assert "permissions" not in json.loads(
        message_body(
            replication_event(
                CONFIG, plan.replication, SUCCESS, "e1", started, started, "glue:us-east-1",
                replace(plan, grants=None),
            )  # fmt: skip
        )
    )
