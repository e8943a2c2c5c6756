"""State `Summarize`: every table's outcome, from the results the Map over the tables wrote.

A table whose iteration failed without reaching Abort (an error no ``Catch`` takes:
``States.DataLimitExceeded``, ``States.Runtime``) is aborted here, with the Abort state's
own module, so it too ends as every failed table does: FAILURE to consumers, its lock
released, its snapshot removed unless the replica references it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ferry.core import faults
from ferry.statemachine.outcomes import map_results, summary
from ferry.statemachine.replication_payloads import SummarizeInput, SummarizeResult
from ferry.states import abort
from ferry.states.context import StateContext


def run(context: StateContext, payload: SummarizeInput | Mapping[str, Any]) -> SummarizeResult:
    """Count the tables' outcomes and name the first failure."""
    payload = SummarizeInput.model_validate(payload)
    faults.point("summarize")
    outcomes = []
    for child in map_results(payload.results.model_dump()):
        if child.status == "SUCCEEDED":
            outcomes.append(child.output)
            continue
        item = child.input
        aborted = abort.run(
            context,
            {
                **item,
                "configUri": item.get("configUri") or payload.config_uri,
                "error": {"Error": child.error, "Cause": child.cause},
                "failedState": "Replicate tables",
                "findPlan": True,
            },
        )
        outcomes.append(aborted.model_dump(mode="json"))
    return SummarizeResult.model_validate(summary(outcomes))
