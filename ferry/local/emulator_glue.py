"""The AWS emulator's Glue answers and notifies as AWS Glue does, where moto 5.2 does not.

- ``UpdateTable`` keeps optimistic concurrency: moto accepts any ``VersionId``; AWS Glue
  refuses an update whose ``VersionId`` is not the table's current version with
  ``ConcurrentModificationException``: of two writers that read the same version, one wins.
  Ferry's commit claims a replica with it (``ferry.catalog.glue.GlueCatalog.alter_table_if``).
- The batch calls refuse more entries than Glue's API takes (``BatchCreatePartition`` and
  ``BatchUpdatePartition`` 100, ``BatchDeletePartition`` 25, ``BatchDeleteTable`` 100) with
  ``ValidationException``; moto takes any number.
- Catalog changes are sent to EventBridge, as Glue sends them (moto sends none): after a
  successful ``CreateDatabase``, ``DeleteDatabase``, ``CreateTable``, ``DeleteTable`` or
  ``BatchDeleteTable``, a "Glue Data Catalog Database State Change" event (``changedTables``);
  after ``UpdateTable``, ``CreatePartition``, ``BatchCreatePartition``, ``UpdatePartition``,
  ``DeletePartition``, ``BatchUpdatePartition`` or ``BatchDeletePartition``, a "Glue Data
  Catalog Table State Change" event (``changedPartitions``, each partition's values written
  ``"[2026, 11]"``). ``typeOfChange`` is the API operation; an event names at most 100
  tables or partitions (more make more events); entries a batch call reports as failed are
  not named. The events go to the default event bus of the call's account and region, where
  moto's rules (and ``ferry.local.emulator_eventbridge``'s deliveries) take them. A failed
  call sends nothing. The shape is AWS's documented one ("Automating AWS Glue with
  EventBridge"; ``events/glue-*-state-change.json``).
"""

from __future__ import annotations

import copy
import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

logger = logging.getLogger(__name__)

SOURCE = "aws.glue"
DATABASE_STATE_CHANGE = "Glue Data Catalog Database State Change"
TABLE_STATE_CHANGE = "Glue Data Catalog Table State Change"
#: Glue names at most this many tables or partitions in one event.
NAMES_PER_EVENT = 100

#: The batch calls' list parameter and the most entries Glue's API takes in it.
BATCH_LIMITS: dict[str, tuple[str, int]] = {
    "BatchCreatePartition": ("PartitionInputList", 100),
    "BatchUpdatePartition": ("Entries", 100),
    "BatchDeletePartition": ("PartitionsToDelete", 25),
    "BatchDeleteTable": ("TablesToDelete", 100),
}

#: The operations that send events, by the GlueResponse method that serves each.
NOTIFYING = {
    "create_database": "CreateDatabase",
    "delete_database": "DeleteDatabase",
    "create_table": "CreateTable",
    "delete_table": "DeleteTable",
    "batch_delete_table": "BatchDeleteTable",
    "update_table": "UpdateTable",
    "create_partition": "CreatePartition",
    "batch_create_partition": "BatchCreatePartition",
    "update_partition": "UpdatePartition",
    "delete_partition": "DeletePartition",
    "batch_update_partition": "BatchUpdatePartition",
    "batch_delete_partition": "BatchDeletePartition",
}


def partition_name(values: Iterable[str]) -> str:
    """A partition as Glue's events name it: its values, ``[2026, 11]``."""
    return "[" + ", ".join(str(value) for value in values) + "]"


def catalog_events(
    operation: str,
    parameters: dict[str, Any],
    errors: list[dict[str, Any]],
    account: str,
    region: str,
    now: datetime,
) -> list[dict[str, Any]]:
    """The EventBridge events Glue sends for a successful ``operation`` of ``parameters``.

    ``errors``: the entries a batch call reported as failed (not named in the events).
    """
    database = parameters.get("DatabaseName") or ""
    arn = f"arn:aws:glue:{region}:{account}"

    def event(detail_type: str, resources: list[str], detail: dict[str, Any]) -> dict[str, Any]:
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": detail_type,
            "source": SOURCE,
            "account": account,
            "time": now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": region,
            "resources": resources,
            "detail": detail,
        }

    if operation in ("CreateDatabase", "DeleteDatabase"):
        name = (
            (parameters.get("DatabaseInput") or {}).get("Name")
            if operation == "CreateDatabase"
            else parameters.get("Name")
        )
        detail = {"databaseName": name, "typeOfChange": operation}
        return [event(DATABASE_STATE_CHANGE, [f"{arn}:database/{name}"], detail)]
    if operation in ("CreateTable", "DeleteTable", "BatchDeleteTable"):
        if operation == "CreateTable":
            tables = [(parameters.get("TableInput") or {}).get("Name")]
        elif operation == "DeleteTable":
            tables = [parameters.get("Name")]
        else:
            failed = {error.get("TableName") for error in errors}
            tables = [t for t in parameters.get("TablesToDelete") or [] if t not in failed]
        return [
            event(
                DATABASE_STATE_CHANGE,
                [f"{arn}:table/{database}/{table}" for table in chunk],
                {"databaseName": database, "typeOfChange": operation, "changedTables": chunk},
            )
            for chunk in _chunks(tables)
        ]
    table = parameters.get("TableName") or (parameters.get("TableInput") or {}).get("Name")
    partitions = [partition_name(values) for values in _changed_partitions(operation, parameters)]
    failed = {
        partition_name(error.get("PartitionValues") or error.get("PartitionValueList") or [])
        for error in errors
    }
    partitions = [p for p in partitions if p not in failed]
    if operation != "UpdateTable" and not partitions:
        return []
    return [
        event(
            TABLE_STATE_CHANGE,
            [f"{arn}:table/{database}/{table}"],
            {
                "databaseName": database,
                "tableName": table,
                "typeOfChange": operation,
                "changedPartitions": chunk,
            },
        )
        for chunk in (_chunks(partitions) if partitions else [[]])
    ]


def _changed_partitions(operation: str, parameters: dict[str, Any]) -> list[list[str]]:
    if operation == "CreatePartition":
        return [(parameters.get("PartitionInput") or {}).get("Values") or []]
    if operation == "BatchCreatePartition":
        return [p.get("Values") or [] for p in parameters.get("PartitionInputList") or []]
    if operation == "UpdatePartition":
        return [parameters.get("PartitionValueList") or []]
    if operation == "DeletePartition":
        return [parameters.get("PartitionValues") or []]
    if operation == "BatchUpdatePartition":
        return [e.get("PartitionValueList") or [] for e in parameters.get("Entries") or []]
    if operation == "BatchDeletePartition":
        return [p.get("Values") or [] for p in parameters.get("PartitionsToDelete") or []]
    return []


def _chunks(names: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(names), NAMES_PER_EVENT):
        yield names[start : start + NAMES_PER_EVENT]


def publish(events: list[dict[str, Any]], account: str, region: str) -> None:
    """Put ``events`` on the default event bus of ``account`` in ``region``, as a service does.

    Each enabled rule that matches delivers to its targets; a delivery that fails is logged
    (by ``emulator_eventbridge``), never the caller's failure.
    """
    from moto.events.models import events_backends

    bus = events_backends[account][region].event_buses.get("default")
    if bus is None:
        return
    for event in events:
        # moto's rules take the time as epoch seconds (they format it for each target).
        seconds = datetime.strptime(event["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        message = {**event, "time": seconds.timestamp(), "ingestion-time": time.time()}
        for rule in list(bus.rules.values()):
            try:
                rule.send_to_targets(copy.deepcopy(message))
            except Exception:  # a service's event never fails the call that caused it
                logger.exception("rule %s could not take event %s", rule.name, event["id"])


def install() -> None:
    from moto.glue.exceptions import GlueClientError
    from moto.glue.responses import GlueResponse

    update = GlueResponse.update_table

    def update_table(self: Any) -> Any:
        version = self.parameters.get("VersionId")
        if version is not None:
            table_input = self.parameters.get("TableInput") or {}
            table = self.glue_backend.get_table(
                self.parameters.get("DatabaseName"), table_input.get("Name")
            )
            if str(version) != str(table._current_version):
                raise GlueClientError(
                    "ConcurrentModificationException",
                    "Update table failed due to concurrent modifications.",
                )
        return update(self)

    GlueResponse.update_table = update_table

    for method, operation in NOTIFYING.items():
        setattr(GlueResponse, method, _notifying(getattr(GlueResponse, method), operation))


def _notifying(serve: Any, operation: str) -> Any:
    from moto.glue.exceptions import GlueClientError

    def serve_and_notify(self: Any) -> Any:
        limit = BATCH_LIMITS.get(operation)
        if limit is not None:
            name, most = limit
            if len(self.parameters.get(name) or []) > most:
                member = name[0].lower() + name[1:]
                raise GlueClientError(
                    "ValidationException",
                    f"1 validation error detected: Value at '{member}' failed to satisfy "
                    f"constraint: Member must have length less than or equal to {most}",
                )
        result = serve(self)  # raises when the call fails: nothing is sent
        try:
            errors = (getattr(result, "result", None) or {}).get("Errors") or []
            events = catalog_events(
                operation,
                self.parameters,
                errors,
                self.current_account,
                self.region,
                datetime.now(UTC),
            )
            publish(events, self.current_account, self.region)
        except Exception:  # best effort, as Glue's own events: never the call's failure
            logger.exception("could not send the events of %s", operation)
        return result

    return serve_and_notify
