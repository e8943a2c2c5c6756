"""An execution's ``adopt``: the replica tables (``database.table``) a run of the deployed
replication state machine takes as its replicas though Ferry never replicated them, as
``ferry failback``'s reverse run takes the original source tables. Resolve tables marks each
item, Plan's guard accepts the table and Commit claims it; a table the input does not name
is still refused, and a name the run does not replicate is one line before anything runs.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ferry.core.model import Database
from ferry.local import deploy
from ferry.replicas.replica import REPLICATION_EVENT
from ferry.statemachine.executions import follow, start
from ferry.storage import fs
from tests.e2e.test_pipeline import table_entry
from tests.helpers import catalog_state, config_document

pytestmark = pytest.mark.e2e


def test_an_execution_adopts_only_the_replica_tables_its_input_names(
    pipeline, sfn, aws, write_config, local_runtime, sample, replica_catalog, tmp_path
):
    replica_db = f"{sample.database}_dr"
    target = fs.local_uri(tmp_path / "replica")
    replica_catalog.create_database(Database(replica_db))
    # A table in the replica's place that Ferry never replicated, of the source's schema (as
    # the original source table is to failback's reverse run).
    source = sample.orders
    replica_catalog.create_table(
        replace(
            source,
            database=replica_db,
            storage=source.storage.with_location((tmp_path / "theirs").as_uri()),
            parameters={"owner": "someone"},
        )
    )
    before = catalog_state(replica_catalog, replica_db, ["orders"])
    document = config_document(local_runtime, [table_entry(sample, "orders", f"{target}/orders")])
    config_uri = deploy.upload_config(aws["s3"], pipeline.work_uri, write_config(document))

    def execute(**given) -> object:
        arn = start(
            sfn, pipeline.state_machine_arn, deploy.execution_name("adopt"),
            {"configUri": config_uri, **given},
        )  # fmt: skip
        return follow(sfn, arn, poll_seconds=0.2, timeout_seconds=240)

    # Not named: the guard refuses the table, which is left as it was.
    refused = execute()
    assert refused.status == "FAILED"
    assert ("Plan", "ReplicaGuardError") in {(s, e) for s, e, _ in refused.failed_states}
    assert catalog_state(replica_catalog, replica_db, ["orders"]) == before

    # A name the run does not replicate: Resolve tables refuses it, nothing runs.
    unknown = execute(adopt=[f"{replica_db}.customers"])
    assert unknown.status == "FAILED"
    assert unknown.cause and f"adopt: {replica_db}.customers is not a replica table" in (
        unknown.cause
    )
    assert "Replicate tables" not in unknown.entered
    assert catalog_state(replica_catalog, replica_db, ["orders"]) == before

    # Named: adopted, replicated into a new snapshot below its table-location.
    adopted = execute(adopt=[f"{replica_db}.orders"])
    assert adopted.status == "SUCCEEDED", adopted.failed_states
    [result] = adopted.results
    event_id = result["plan"]["eventId"]
    replica = replica_catalog.get_table(replica_db, "orders")
    assert replica.parameters[REPLICATION_EVENT] == event_id
    assert fs.relative_path(replica.location, f"{target}/orders/{event_id}") == ""
