"""State `Summarize` (``ferry/states/summarize.py``): the tables' outcomes counted from the
Map's results; a table whose iteration failed where no Catch took it is aborted here, its
unreferenced snapshot removed; real metastores."""

from __future__ import annotations

import pytest

from ferry.statemachine.outcomes import resolved_tables, write_map_results
from ferry.states import inline_copy, plan, resolve_tables, summarize
from ferry.storage import fs
from tests.state_runs import StateRun, run_of

pytestmark = pytest.mark.integration


def test_a_table_no_catch_took_is_aborted_and_counted_as_failed(local_runtime, sample, tmp_path):
    run = StateRun(local_runtime, sample, tmp_path)
    resolved = resolve_tables.run(run.context, {"configUri": str(run.config)}, 1)
    [item] = resolved_tables(resolved)
    planned = plan.run(run.context, item)
    inline_copy.run(run.context, run_of(planned))
    children = [
        {"index": 0, "input": item, "status": "FAILED", "start": "t0", "stop": "t1",
         "error": "States.DataLimitExceeded", "cause": "the state's output is over 256 KiB"},
    ]  # fmt: skip
    written = write_map_results(
        "Replicate tables", resolved.tables_bucket, resolved.results_prefix, children
    )

    result = summarize.run(
        run.context,
        {"configUri": str(run.config), "results": written["ResultWriterDetails"]},
    )

    assert (result.succeeded, result.unchanged, result.failed) == (0, 0, 1)
    assert result.error is not None and result.cause
    # Aborted as every failed table is: its snapshot, which nothing references, removed.
    assert fs.list_files(planned.replica_location) == []
