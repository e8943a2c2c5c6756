"""The Spark copy job's report: what was copied and rewritten, and every file that failed.

The job (``emr_jobs/copy_files.py``) writes it as JSON beside the manifest
(``copy-report.json``, or where ``--report`` says) and prints its ``summary`` line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ferry.copying.copy_tasks import Manifest
from ferry.copying.spark_tasks import FileResult
from ferry.storage import fs

REPORT_NAME = "copy-report.json"


def add_rewrites(report: dict[str, Any], results: Sequence[FileResult]) -> dict[str, Any]:
    """The copy's report with the rewrites' counts and failures."""
    failed = [
        {
            "source": result.source,
            "target": result.target,
            "error": result.error,
            "attempts": result.attempts,
        }
        for result in sorted(results, key=lambda r: r.source)
        if not result.ok
    ]
    return {
        **report,
        "rewrites": len(results),
        "rewritten": sum(result.ok for result in results),
        "failed": [*report["failed"], *failed],
    }


def build_report(
    manifest: Manifest, results: Sequence[FileResult], tasks: int, duration_seconds: float
) -> dict[str, Any]:
    """The JSON-ready report of one copy: counts, bytes copied, and every failed file."""
    copied = [result for result in results if result.ok]
    failed = sorted((result for result in results if not result.ok), key=lambda r: r.source)
    return {
        "eventId": manifest.event_id,
        "files": len(manifest.tasks),
        "bytes": sum(result.size for result in copied),
        "copied": len(copied),
        "failed": [
            {
                "source": result.source,
                "target": result.target,
                "error": result.error,
                "attempts": result.attempts,
            }
            for result in failed
        ],
        "tasks": tasks,
        "durationSeconds": round(duration_seconds, 3),
    }


def summary(report: dict[str, Any], report_uri: str) -> str:
    """The one line a person reads at the end of a run."""
    line = (
        f"copied {report['copied']} of {report['files']} files "
        f"({report['bytes']:,} bytes) with {report['tasks']} tasks "
        f"in {report['durationSeconds']:.1f} s"
    )
    if report.get("rewrites"):
        line += f"; rewrote {report['rewritten']} of {report['rewrites']} manifests"
    if report["failed"]:
        line += f"; {len(report['failed'])} failed"
    return f"{line}; report: {report_uri}"


def default_report_uri(manifest_uri: str) -> str:
    """``copy-report.json`` in the manifest's folder."""
    return fs.join(manifest_uri.rsplit("/", 1)[0], REPORT_NAME)


def write_report(report: dict[str, Any], uri: str) -> None:
    """Write ``report`` as JSON at ``uri``, creating its folder on a local file system."""
    fs.write_bytes(uri, json.dumps(report, indent=2).encode("utf-8"))
