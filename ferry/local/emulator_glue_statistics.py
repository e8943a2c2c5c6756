"""The AWS emulator's Glue serves column statistics as AWS Glue does (moto 5.2 has none).

The six calls ``GetColumnStatisticsForTable`` / ``…ForPartition``,
``UpdateColumnStatisticsForTable`` / ``…ForPartition`` and ``DeleteColumnStatisticsForTable``
/ ``…ForPartition``, with AWS's rules:

- a table, database or partition that does not exist is ``EntityNotFoundException``;
- more than 100 ``ColumnNames`` or 25 ``ColumnStatisticsList`` entries is
  ``ValidationException`` (botocore does not check list lengths; AWS does);
- a read answers each column without statistics in ``Errors`` (``EntityNotFoundException``),
  a write each entry it refuses (a column the table, or the partition, does not have; a
  ``StatisticsData`` without the counts its ``Type`` names) with ``InvalidInputException``,
  and stores the others;
- a delete of statistics that do not exist succeeds.

The statistics are kept on moto's table object (``FERRY_ATTRIBUTE``: ``""`` for the table's,
a partition's values otherwise, as moto keys its partitions), so they are saved with the
table in the emulator's snapshot and go when the table does; a deleted partition's go with
it, and an updated partition whose values change keeps them.
"""

from __future__ import annotations

import base64
import functools
from typing import Any

#: The attribute of moto's ``FakeTable`` holding its statistics: key → column → entry.
FERRY_ATTRIBUTE = "ferry_column_statistics"
#: The most ``ColumnNames`` a read takes, and ``ColumnStatisticsList`` entries a write.
READ_LIMIT = 100
WRITE_LIMIT = 25
_TABLE_KEY = ""
_KINDS = ("BOOLEAN", "DATE", "DECIMAL", "DOUBLE", "LONG", "STRING", "BINARY")


def install() -> None:
    """Add the six calls to moto's Glue, and keep statistics with their partitions."""
    from moto.glue.models import FakeTable
    from moto.glue.responses import GlueResponse

    if getattr(GlueResponse, "_ferry_column_statistics", False):
        return
    GlueResponse._ferry_column_statistics = True  # type: ignore[attr-defined]
    for name, serve in _CALLS.items():
        setattr(GlueResponse, name, serve)
    FakeTable.delete_partition = _dropping(FakeTable.delete_partition)
    FakeTable.update_partition = _moving(FakeTable.update_partition)


def _statistics(table: Any) -> dict[str, dict[str, dict[str, Any]]]:
    return table.__dict__.setdefault(FERRY_ATTRIBUTE, {})


def _validation(field: str, most: int) -> Exception:
    from moto.glue.exceptions import GlueClientError

    return GlueClientError(
        "ValidationException",
        f"1 validation error detected: Value at '{field}' failed to satisfy constraint: "
        f"Member must have length less than or equal to {most}",
    )


def _target(response: Any, partition: bool) -> tuple[Any, str, set[str]]:
    """The table, the key of the statistics asked for, and the columns they may name."""
    parameters = response.parameters
    table = response.glue_backend.get_table(parameters["DatabaseName"], parameters["TableName"])
    storage = table.as_dict().get("StorageDescriptor") or {}
    if not partition:
        return table, _TABLE_KEY, _names(storage)
    values = parameters["PartitionValues"]
    found = table.get_partition(values)  # EntityNotFoundException when missing
    own = (found.as_dict().get("StorageDescriptor") or {}).get("Columns")
    return table, str(values), _names({"Columns": own}) if own else _names(storage)


def _names(storage: dict[str, Any]) -> set[str]:
    return {column["Name"].lower() for column in storage.get("Columns") or []}


def _get(response: Any, partition: bool) -> Any:
    from moto.core.responses import ActionResult

    names = response.parameters.get("ColumnNames") or []
    if len(names) > READ_LIMIT:
        raise _validation("columnNames", READ_LIMIT)
    table, key, _ = _target(response, partition)
    held = _statistics(table).get(key, {})
    found, errors = [], []
    for name in names:
        if name.lower() in held:
            found.append(held[name.lower()])
        else:
            errors.append(
                {
                    "ColumnName": name,
                    "Error": {
                        "ErrorCode": "EntityNotFoundException",
                        "ErrorMessage": f"Statistics do not exist for column {name}",
                    },
                }
            )
    return ActionResult({"ColumnStatisticsList": found, "Errors": errors})


def _update(response: Any, partition: bool) -> Any:
    from moto.core.responses import ActionResult

    entries = response.parameters.get("ColumnStatisticsList") or []
    if len(entries) > WRITE_LIMIT:
        raise _validation("columnStatisticsList", WRITE_LIMIT)
    table, key, columns = _target(response, partition)
    held = _statistics(table).setdefault(key, {})
    errors = []
    for entry in entries:
        stored = _stored(entry)
        refusal = _refusal(stored, columns)
        if refusal:
            errors.append(
                {
                    "ColumnStatistics": stored,
                    "Error": {"ErrorCode": "InvalidInputException", "ErrorMessage": refusal},
                }
            )
        else:
            held[stored["ColumnName"].lower()] = stored
    return ActionResult({"Errors": errors})


def _refusal(entry: dict[str, Any], columns: set[str]) -> str | None:
    name = entry.get("ColumnName") or ""
    if name.lower() not in columns:
        return f"Column {name} does not exist"
    data = entry.get("StatisticsData") or {}
    kind = data.get("Type")
    if kind not in _KINDS or f"{str(kind).title()}ColumnStatisticsData" not in data:
        return f"StatisticsData of column {name} does not hold {kind} statistics"
    return None


def _stored(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as the reply serializes it: a decimal's ``UnscaledValue`` arrives as base64
    text and goes out as bytes (the serializer encodes them again)."""
    stored = {**entry, "StatisticsData": dict(entry.get("StatisticsData") or {})}
    decimal = stored["StatisticsData"].get("DecimalColumnStatisticsData")
    if decimal:
        decimal = dict(decimal)
        for bound in ("MinimumValue", "MaximumValue"):
            value = decimal.get(bound)
            if value and isinstance(value.get("UnscaledValue"), str):
                raw = base64.b64decode(value["UnscaledValue"])
                decimal[bound] = {**value, "UnscaledValue": raw}
        stored["StatisticsData"]["DecimalColumnStatisticsData"] = decimal
    return stored


def _delete(response: Any, partition: bool) -> Any:
    from moto.core.responses import ActionResult

    table, key, _ = _target(response, partition)
    name = str(response.parameters.get("ColumnName") or "").lower()
    _statistics(table).get(key, {}).pop(name, None)
    return ActionResult({})


def _dropping(delete: Any) -> Any:
    @functools.wraps(delete)
    def delete_partition(self: Any, values: Any) -> None:
        delete(self, values)
        _statistics(self).pop(str(values), None)

    return delete_partition


def _moving(update: Any) -> Any:
    @functools.wraps(update)
    def update_partition(self: Any, old_values: Any, partition_input: dict[str, Any]) -> None:
        update(self, old_values, partition_input)
        new = str(partition_input["Values"])
        held = _statistics(self)
        if str(old_values) != new and str(old_values) in held:
            held[new] = held.pop(str(old_values))

    return update_partition


#: The GlueResponse method of each call (moto dispatches an action to its snake_case name).
_CALLS = {
    "get_column_statistics_for_table": lambda self: _get(self, False),
    "get_column_statistics_for_partition": lambda self: _get(self, True),
    "update_column_statistics_for_table": lambda self: _update(self, False),
    "update_column_statistics_for_partition": lambda self: _update(self, True),
    "delete_column_statistics_for_table": lambda self: _delete(self, False),
    "delete_column_statistics_for_partition": lambda self: _delete(self, True),
}
