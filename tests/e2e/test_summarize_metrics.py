"""A run's failed tables reach CloudWatch: Summarize publishes ``TablesFailed`` (EMF, no
table dimension), the metric of the ``tables-failed`` alarm (``infra/operations.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_pipeline import table_entry
from tests.helpers import config_document

pytestmark = pytest.mark.e2e


def log_of(local_runtime, function: str) -> Path:
    """Where the emulator's execution environments of ``function`` write what it prints
    (``ferry.local.emulator_lambda``): Lambda's log stream, EMF records included."""
    return local_runtime.state_dir / "aws" / "lambda" / f"{function}.log"


def emf_records(text: str, metric: str) -> list[dict[str, Any]]:
    """The Embedded Metric Format records among a log's lines that carry ``metric``."""
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and metric in record and "_aws" in record:
            records.append(record)
    return records


def test_a_run_with_a_failed_table_publishes_tables_failed(
    run, pipeline, local_runtime, sample, tmp_path, unique
):
    log = log_of(local_runtime, "ferry-local-summarize")
    start = log.stat().st_size if log.exists() else 0
    document = config_document(
        local_runtime,
        [
            table_entry(sample, "orders", (tmp_path / "replica" / "orders").as_uri()),
            # A bucket that does not exist: the copy cannot write, the table fails.
            table_entry(sample, "customers", f"s3://no-such-bucket-{unique}/customers"),
        ],
    )
    outcome = run(document)
    assert outcome.status == "FAILED"
    with log.open("rb") as written:
        written.seek(start)
        [record] = emf_records(written.read().decode(), "TablesFailed")
    [directive] = record["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Ferry"
    assert directive["Dimensions"] == [["service"]]  # no table: one series, the alarm's
    assert {m["Name"]: m["Unit"] for m in directive["Metrics"]} == {"TablesFailed": "Count"}
    value = record["TablesFailed"]
    assert (value if isinstance(value, list) else [value]) == [1.0]
