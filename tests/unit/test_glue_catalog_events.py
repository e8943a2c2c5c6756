"""The events the local emulator's Glue sends (``ferry.local.emulator_glue``) have AWS's shape:
the sample events of ``events/`` are what it sends for the same calls."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from ferry.local.emulator_glue import catalog_events

EVENTS = Path(__file__).parents[2] / "events"
NOW = datetime(2026, 11, 21, 8, 30, tzinfo=UTC)
ACCOUNT, REGION = "123456789012", "us-east-1"


def sample(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def test_a_batch_of_new_partitions_is_sent_as_the_sample_table_state_change():
    parameters = {
        "DatabaseName": "sales",
        "TableName": "orders",
        "PartitionInputList": [{"Values": ["2026-11-20"]}, {"Values": ["2026-11-21"]}],
    }
    [sent] = catalog_events("BatchCreatePartition", parameters, [], ACCOUNT, REGION, NOW)
    expected = sample("glue-table-state-change.json")
    assert {**sent, "id": expected["id"]} == expected


def test_a_new_table_is_sent_as_the_sample_database_state_change():
    parameters = {"DatabaseName": "sales", "TableInput": {"Name": "orders"}}
    [sent] = catalog_events("CreateTable", parameters, [], ACCOUNT, REGION, NOW)
    expected = sample("glue-database-state-change.json")
    assert {**sent, "id": expected["id"]} == expected


def test_an_event_names_at_most_100_partitions_and_none_that_failed():
    # More than one Glue call takes (the emulator refuses it first): the limit is the event's.
    values = [[str(day)] for day in range(160)]
    parameters = {
        "DatabaseName": "sales",
        "TableName": "orders",
        "PartitionsToDelete": [{"Values": v} for v in values],
    }
    errors = [{"PartitionValues": ["7"], "ErrorDetail": {"ErrorCode": "EntityNotFoundException"}}]
    sent = catalog_events("BatchDeletePartition", parameters, errors, ACCOUNT, REGION, NOW)
    named = [event["detail"]["changedPartitions"] for event in sent]
    assert [len(names) for names in named] == [100, 59]
    assert "[7]" not in named[0] + named[1]


def test_an_updated_table_is_a_table_state_change_without_partitions():
    parameters = {"DatabaseName": "sales", "TableInput": {"Name": "orders"}}
    [sent] = catalog_events("UpdateTable", parameters, [], ACCOUNT, REGION, NOW)
    assert sent["detail-type"] == "Glue Data Catalog Table State Change"
    assert sent["detail"] == {
        "databaseName": "sales",
        "tableName": "orders",
        "typeOfChange": "UpdateTable",
        "changedPartitions": [],
    }
