"""State `Plan` (``ferry/states/plan.py``; the planning rules are ``ferry/planning/table_plan.py``): the
manifest and the plan written under the run's folder, the copier chosen, the replica catalog
left as it was; real metastores."""

from __future__ import annotations

import pytest

from ferry.planning.plan_document import read_plan
from ferry.storage import fs
from tests.state_runs import StateRun

pytestmark = pytest.mark.integration


def test_plan_writes_the_manifest_and_the_plan_and_chooses_the_inline_copier(
    local_runtime, sample, replica_catalog, tmp_path
):
    run = StateRun(local_runtime, sample, tmp_path)

    item, planned = run.planned()

    assert (planned.copier, planned.files, planned.partitions_to_add) == ("inline", 3, 3)
    assert planned.event_id == item["eventId"]
    assert planned.replica_location == f"{run.target}/orders/{planned.event_id}"
    assert fs.exists(planned.plan_uri) and fs.exists(planned.manifest_uri)
    document = read_plan(planned.plan_uri)
    assert document.config_uri == str(run.config)
    assert document.plan.replication.replica_qualified_name == f"{sample.database}_dr.orders"
    # Planning only reads the catalogs: the replica table is Commit's to create.
    assert replica_catalog.get_table(f"{sample.database}_dr", "orders") is None
