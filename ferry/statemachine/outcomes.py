"""The tables of a run and their outcomes, as the Distributed Map over the tables reads and
writes them: the items Resolve tables wrote, the children's results the Map's
``ResultWriter`` wrote (Step Functions, the emulator and the in-process driver write the same
files), and the counts Summarize makes of them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ferry.core.errors import StepFunctionsError
from ferry.statemachine.replication_payloads import ResolveTablesResult
from ferry.storage import fs


def resolved_tables(result: ResolveTablesResult) -> list[dict[str, Any]]:
    """The items ``resolve_tables`` wrote (each table of the run), from its result."""
    return json.loads(fs.read_bytes(fs.object_uri(result.tables_bucket, result.tables_key)))


@dataclass(frozen=True)
class ChildResult:
    """One child execution of a Distributed Map, as its ``ResultWriter`` wrote it."""

    status: str
    input: dict[str, Any]
    output: dict[str, Any]
    error: str | None = None
    cause: str | None = None


def map_results(details: Mapping[str, Any]) -> list[ChildResult]:
    """The children's results a Distributed Map's ``ResultWriter`` wrote, in item order.

    ``details`` is the Map's ``ResultWriterDetails`` (``Bucket``, ``Key`` of its manifest).
    """
    manifest = json.loads(fs.read_bytes(fs.object_uri(details["Bucket"], details["Key"])))
    bucket = manifest.get("DestinationBucket", details["Bucket"])
    found = []
    for status in ("SUCCEEDED", "FAILED", "PENDING"):
        for result_file in manifest.get("ResultFiles", {}).get(status, []):
            for entry in json.loads(fs.read_bytes(fs.object_uri(bucket, result_file["Key"]))):
                found.append(
                    ChildResult(
                        status=entry.get("Status", status),
                        input=json.loads(entry.get("Input") or "{}"),
                        output=json.loads(entry.get("Output") or "{}"),
                        error=entry.get("Error"),
                        cause=entry.get("Cause"),
                    )
                )
    return found


def write_map_results(
    name: str, bucket: str, prefix: str, children: list[dict[str, Any]]
) -> dict[str, Any]:
    """A Distributed Map's ``ResultWriter``, as Step Functions writes it.

    ``<prefix>/<map run>/manifest.json`` names ``SUCCEEDED_0.json`` and ``FAILED_0.json``,
    arrays of the child executions (``Input`` and ``Output`` as JSON text, or ``Error`` and
    ``Cause``); the Map's result is the manifest's place (``ResultWriterDetails``).
    """
    run = f"in-process-{uuid.uuid4().hex[:12]}"
    folder = "/".join(p for p in (prefix.rstrip("/"), run) if p)
    files: dict[str, list[dict[str, Any]]] = {"FAILED": [], "PENDING": [], "SUCCEEDED": []}
    for status in ("SUCCEEDED", "FAILED"):
        entries = [
            {
                "Name": f"{child['index']:08d}",
                "Input": json.dumps(child["input"]),
                "InputDetails": {"Included": True},
                "StartDate": child["start"],
                "StopDate": child["stop"],
                "Status": status,
                **(
                    {"Output": json.dumps(child["output"]), "OutputDetails": {"Included": True}}
                    if status == "SUCCEEDED"
                    else {"Error": child["error"], "Cause": child["cause"]}
                ),
            }
            for child in children
            if child["status"] == status
        ]
        if entries:
            key = f"{folder}/{status}_0.json"
            body = json.dumps(entries).encode()
            fs.write_bytes(fs.object_uri(bucket, key), body)
            files[status].append({"Key": key, "Size": len(body)})
    key = f"{folder}/manifest.json"
    manifest = {"DestinationBucket": bucket, "MapRunArn": f"{name}/{run}", "ResultFiles": files}
    fs.write_bytes(fs.object_uri(bucket, key), json.dumps(manifest, indent=2).encode())
    details = {"Bucket": bucket, "Key": key}
    return {"MapRunArn": manifest["MapRunArn"], "ResultWriterDetails": details}


def summary(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts of the tables' outcomes, and the first failure's error."""
    # A table's outcome: Abort's result, or the whole iteration's data ending in Notify.
    statuses = [r.get("status") or (r.get("notified") or {}).get("status") for r in outcomes]
    failed = [r for r, status in zip(outcomes, statuses, strict=True) if status == "FAILED"]
    first = failed[0] if failed else {}
    error, cause = first.get("error"), first.get("cause")
    if error and error.startswith("States."):
        # The execution's Fail state cannot end with Step Functions' own names.
        error, cause = StepFunctionsError.__name__, f"{error}: {cause}"
    return {
        "succeeded": statuses.count("SUCCEEDED"),
        "unchanged": statuses.count("UNCHANGED"),
        "failed": len(failed),
        "error": error,
        "cause": (
            f"{first.get('sourceTable')}: {cause}"
            + (f" (and {len(failed) - 1} more failed tables)" if len(failed) > 1 else "")
            if failed
            else None
        ),
    }
