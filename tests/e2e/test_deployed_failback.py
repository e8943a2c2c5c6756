"""``ferry failback --environment local`` through the stack deployed into the emulator: the
Failback function plans and runs the landing config's failback under its own role, its
reverse run is the stack's replication state machine under the pipeline's roles (IAM
enforced, ``failback`` of ``ferry/local/environment.yml`` granting the writes home), and the
operator's process reads no catalog and no data.

Replicate, fail over, write in DR (a new partition, a file added to one), fail back: the
source holds DR's rows, below its own location; the original direction resumes; failback
again changes nothing.
"""

from __future__ import annotations

import boto3
import pytest

from ferry.catalog.glue import GlueCatalog
from ferry.commands.reader import read_rows
from ferry.core.model import Partition
from ferry.failover import PROMOTED
from ferry.local.samples import order_rows, write_parquet
from ferry.storage import fs
from tests.e2e import test_deployed_failover, test_failover_switch
from tests.e2e.test_deployed_failover import replicate
from tests.e2e.test_failover_switch import TABLE, WEST, denials, rule_state, schedule_state
from tests.helpers import catalog_state

pytestmark = pytest.mark.e2e

landing = test_failover_switch.landing
ferry = test_deployed_failover.ferry


def add_in_dr(west: GlueCatalog, day: str, count: int) -> Partition:
    """A writer in DR adds a partition below the replica's location."""
    replica = west.get_table("landing_dr", "orders")
    location = fs.join(replica.location, "written-in-dr", f"dt={day}")
    write_parquet(location, "part-00000.parquet", order_rows(day, count))
    partition = Partition((day,), replica.storage.with_location(location))
    west.add_partitions(replica, [partition])
    return partition


def rows(catalog, table) -> list[tuple]:
    data = read_rows(catalog, table)
    return sorted(zip(*(data.column(c).to_pylist() for c in data.column_names), strict=True))


def test_failback_through_the_stack_brings_dr_s_partitions_home_under_the_pipeline_s_roles(
    pipeline, local_runtime, landing, sfn, ferry, aws
):
    replicate(sfn, pipeline)
    source = GlueCatalog("landing", aws["glue"])
    west = GlueCatalog("west", boto3.client("glue", region_name=WEST))
    seen = len(denials(local_runtime))
    code, failed_over = ferry("failover")
    assert code == 0, failed_over

    # Writers in DR: a new partition below the replica's location, a file in another.
    add_in_dr(west, "2026-12-01", 4)
    replica = west.get_table("landing_dr", "orders")
    [first, *_] = sorted(west.list_partitions(replica), key=lambda p: p.values)
    write_parquet(first.location, "part-dr.parquet", order_rows("2001-01-01", 2))
    in_dr = rows(west, west.get_table("landing_dr", "orders"))
    original = source.get_table("landing", "orders")
    untouched = {p.values: p.location for p in source.list_partitions(original)}

    # A dry run says what would come home and changes nothing on either side.
    sides = (
        catalog_state(source, "landing", ["orders"]),
        catalog_state(west, "landing_dr", ["orders"]),
    )
    code, planned = ferry("failback", "--dry-run")
    assert code == 0, planned
    [table] = planned["tables"]
    assert (table["status"], table["partitions_home"]) == ("PLANNED", 2)
    assert "partition-filter" in planned["reverseText"]
    assert sides == (
        catalog_state(source, "landing", ["orders"]),
        catalog_state(west, "landing_dr", ["orders"]),
    )
    assert (rule_state(), schedule_state()) == ("DISABLED", "DISABLED")

    code, failed_back = ferry("failback")
    assert code == 0, failed_back
    [table] = failed_back["tables"]
    assert (table["source_table"], table["status"], table["partitions_home"]) == (
        TABLE, "FAILED_BACK", 2,
    )  # fmt: skip
    work = f"s3://{pipeline.outputs['WorkBucketName']}"
    assert failed_back["reverseConfig"].startswith(f"{work}/configs/failback/")
    # The source holds DR's rows; what came home is below its own location, in a snapshot
    # folder; its other partitions were not touched; it is no replica.
    home = source.get_table("landing", "orders")
    assert rows(source, home) == in_dr
    moved = {p.values: p.location for p in source.list_partitions(home)}
    for values in (first.values, ("2026-12-01",)):
        assert fs.relative_path(moved[values], home.location).startswith("ferry-")
    assert {v: moved[v] for v in untouched if v != first.values} == {
        v: loc for v, loc in untouched.items() if v != first.values
    }
    assert not [k for k in home.parameters if k.startswith("ferry.")]
    assert home.location == original.location
    # The original direction resumes: the replica un-promoted, the triggers on.
    assert PROMOTED not in west.get_table("landing_dr", "orders").parameters
    assert (rule_state(), schedule_state()) == ("ENABLED", "ENABLED")
    # Every call of the functions and the reverse run was allowed under their roles.
    assert denials(local_runtime)[seen:] == []

    # A forward run copies nothing of what came home; both sides hold the same rows.
    replicate(sfn, pipeline)
    assert rows(west, west.get_table("landing_dr", "orders")) == rows(source, home)

    # Failback again: already done, nothing changes.
    code, again = ferry("failback")
    assert code == 0, again
    assert [t["status"] for t in again["tables"]] == ["ALREADY_FAILED_BACK"]


def test_a_failback_through_the_stack_that_fails_part_way_converges_when_run_again(
    pipeline, local_runtime, landing, sfn, ferry, aws, arm
):
    replicate(sfn, pipeline)
    source = GlueCatalog("landing", aws["glue"])
    west = GlueCatalog("west", boto3.client("glue", region_name=WEST))
    code, failed_over = ferry("failover")
    assert code == 0, failed_over
    add_in_dr(west, "2026-12-02", 3)
    in_dr = rows(west, west.get_table("landing_dr", "orders"))
    original = source.get_table("landing", "orders")
    before = {p.values: p.location for p in source.list_partitions(original)}

    # The reverse run fails in its Commit: one line naming it; nothing came home, the
    # replica is still promoted and the triggers still off.
    arm({"point": "commit.claimed", "action": "raise", "times": 100})
    code, error = ferry("failback")
    assert code != 0
    [line] = error.strip().splitlines()
    assert "the reverse run" in line and "ended FAILED: InjectedFault" in line, line
    assert "run ferry failback again to continue" in line
    assert {p.values: p.location for p in source.list_partitions(original)} == before
    assert PROMOTED in west.get_table("landing_dr", "orders").parameters
    assert (rule_state(), schedule_state()) == ("DISABLED", "DISABLED")

    # Run again, the function failing after the restore, before the promotion is removed.
    arm({"point": "failback.restored", "action": "raise", "times": 1})
    code, error = ferry("failback")
    assert code != 0 and "injected failure at failback.restored" in error.strip().splitlines()[-1]
    assert PROMOTED in west.get_table("landing_dr", "orders").parameters

    # And again: it converges.
    arm()
    code, failed_back = ferry("failback")
    assert code == 0, failed_back
    assert [t["status"] for t in failed_back["tables"]] == ["FAILED_BACK"]
    home = source.get_table("landing", "orders")
    assert rows(source, home) == in_dr
    assert not [k for k in home.parameters if k.startswith("ferry.")]
    assert PROMOTED not in west.get_table("landing_dr", "orders").parameters
    assert (rule_state(), schedule_state()) == ("ENABLED", "ENABLED")
