"""The steps record each replica's outcome: Summarize's abort of a table whose iteration
failed where no Catch takes the error records its failure, as Abort table does."""

from __future__ import annotations

from datetime import UTC, datetime

import yaml

from ferry.config import load_config
from ferry.lifecycle import replica_state
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import SqliteStateStore
from ferry.statemachine.outcomes import write_map_results
from ferry.states import summarize
from ferry.states.context import StateContext
from ferry.storage import fs

NOW = datetime(2026, 11, 21, 8, 30, tzinfo=UTC)


def test_summarize_records_the_failure_of_a_table_it_aborts(tmp_path):
    config_path = tmp_path / "replication.yml"
    config_path.write_text(
        yaml.safe_dump(
            {
                "source-catalog": {"name": "onprem", "hive-metastore-uris": "thrift://src:9083"},
                "replica-catalog": {"name": "dr", "hive-metastore-uris": "thrift://dr:9083"},
                "table-replications": [
                    {
                        "source-table": {"database-name": "sales", "table-name": "orders"},
                        "replica-table": {"table-location": "file:///dr/orders"},
                    }
                ],
            }
        )
    )
    item = {
        "configUri": str(config_path), "sourceTable": "sales.orders",
        "replicaTable": "sales.orders", "eventId": "ferry-e1",
        "startTime": NOW.isoformat(), "triggerTime": NOW.isoformat(),
    }  # fmt: skip
    child = {"index": 0, "input": item, "status": "FAILED", "start": "t0", "stop": "t1",
             "error": "States.DataLimitExceeded", "cause": "the state's output is too big"}  # fmt: skip
    written = write_map_results("Replicate tables", "", str(tmp_path / "results"), [child])
    store = SqliteStateStore(tmp_path / "state.sqlite3")
    context = StateContext(
        fs.local_uri(tmp_path / "work"), clock=lambda: NOW, state=ReplicaState(store)
    )
    result = summarize.run(
        context, {"configUri": str(config_path), "results": written["ResultWriterDetails"]}
    )
    assert result.failed == 1
    replication = load_config(config_path).table_replications[0]
    key = replica_state.replica_of(load_config(config_path).replica_catalog, replication, None)
    outcome = store.outcomes([key])[key]
    assert (outcome.failing_since, outcome.last_failure_event) == (NOW, "ferry-e1")
    assert outcome.last_error.startswith("States.DataLimitExceeded: ")
