"""The AWS Glue Data Catalog adapter (boto3); the API's dictionaries are
``ferry.catalog.glue_shapes``'.

The client is injected; it honours ``AWS_ENDPOINT_URL`` like every boto3 client, so the same
code talks to AWS or to the local emulator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from ferry.catalog import PAGE_SIZE, Catalog, batched, partition_sort_key
from ferry.catalog.glue_shapes import (
    partition_input,
    storage_from_glue,
    table_from_glue,
    table_input,
)
from ferry.catalog.glue_statistics import GlueStatistics
from ferry.core.errors import CatalogError, CatalogUnreachableError, ConcurrentChangeError
from ferry.core.model import CatalogKind, Database, Partition, Table

# Glue's BatchCreatePartition and BatchUpdatePartition take at most 100 entries a call.
GLUE_WRITE_BATCH = 100
# BatchDeletePartition takes at most 25.
GLUE_DELETE_BATCH = 25


class GlueCatalog(GlueStatistics, Catalog):
    """The Glue Data Catalog of one account and region; its column statistics are
    ``GlueStatistics``'. Glue holds no keys (``supports_constraints`` is False)."""

    kind = CatalogKind.GLUE

    def __init__(
        self, name: str, client: Any, catalog_id: str | None = None, page_size: int = PAGE_SIZE
    ):
        self.name = name
        self.page_size = page_size
        self._glue = client
        self._catalog = {"CatalogId": catalog_id} if catalog_id else {}
        self.description = f"glue:{client.meta.region_name}"

    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        try:
            return getattr(self._glue, operation)(**self._catalog, **kwargs)
        except EndpointConnectionError as error:
            raise CatalogUnreachableError(
                f"cannot reach Glue catalog '{self.name}': {error}"
            ) from None
        except BotoCoreError as error:
            raise CatalogUnreachableError(f"Glue catalog '{self.name}': {error}") from None

    # -- reads ----------------------------------------------------------------------------

    def get_database(self, name: str) -> Database | None:
        try:
            db = self._call("get_database", Name=name)["Database"]
        except ClientError as error:
            if _code(error) == "EntityNotFoundException":
                return None
            raise self._refused("read database", name, error) from None
        return Database(
            name=db["Name"],
            description=db.get("Description"),
            location=db.get("LocationUri"),
            parameters=db.get("Parameters", {}),
        )

    def get_table(self, database: str, name: str) -> Table | None:
        try:
            table = self._call("get_table", DatabaseName=database, Name=name)["Table"]
        except ClientError as error:
            if _code(error) == "EntityNotFoundException":
                return None
            raise self._refused("read table", f"{database}.{name}", error) from None
        return table_from_glue(table)

    def get_tables(self, database: str, names: Sequence[str]) -> dict[str, Table]:
        """``GetTables`` of the whole database, in pages: the ones among ``names``."""
        wanted = {name.lower() for name in names}
        arguments: dict[str, Any] = {"DatabaseName": database}
        found: dict[str, Table] = {}
        try:
            while True:
                page = self._call("get_tables", **arguments)
                for table in page.get("TableList", []):
                    if table["Name"].lower() in wanted:
                        found[table["Name"].lower()] = table_from_glue(table)
                if not page.get("NextToken"):
                    return found
                arguments["NextToken"] = page["NextToken"]
        except ClientError as error:
            if _code(error) == "EntityNotFoundException":
                return {}
            raise self._refused("list tables of", database, error) from None

    def list_table_names(self, database: str) -> list[str]:
        arguments: dict[str, Any] = {"DatabaseName": database}
        names: list[str] = []
        try:
            while True:
                page = self._call("get_tables", **arguments)
                names.extend(table["Name"] for table in page.get("TableList", []))
                if not page.get("NextToken"):
                    return names
                arguments["NextToken"] = page["NextToken"]
        except ClientError as error:
            if _code(error) == "EntityNotFoundException":
                return []
            raise self._refused("list tables of", database, error) from None

    def _all_partitions(self, table: Table, expression: str | None) -> list[dict[str, Any]]:
        arguments: dict[str, Any] = {"DatabaseName": table.database, "TableName": table.name}
        if expression:
            arguments["Expression"] = expression
        partitions: list[dict[str, Any]] = []
        try:
            while True:
                page = self._call("get_partitions", MaxResults=self.page_size, **arguments)
                partitions.extend(page.get("Partitions", []))
                if not page.get("NextToken"):
                    return partitions
                arguments["NextToken"] = page["NextToken"]
        except ClientError as error:
            raise self._refused("list partitions of", table.qualified_name, error) from None

    def list_partitions(
        self, table: Table, partition_filter: str | None = None, limit: int | None = None
    ) -> list[Partition]:
        if not table.partition_keys:
            return []
        partitions = [
            Partition(
                values=tuple(p["Values"]),
                storage=storage_from_glue(p.get("StorageDescriptor")),
                parameters=p.get("Parameters", {}),
                changed_at=p.get("CreationTime"),
            )
            for p in self._all_partitions(table, partition_filter)
        ]
        partitions.sort(key=lambda p: partition_sort_key(table.partition_keys, p.values))
        return partitions if limit is None else partitions[:limit]

    def list_partition_values(self, table: Table) -> set[tuple[str, ...]]:
        return {tuple(p["Values"]) for p in self._all_partitions(table, None)}

    # -- writes ---------------------------------------------------------------------------

    def create_database(self, database: Database) -> None:
        database_input: dict[str, Any] = {
            "Name": database.name,
            "Parameters": dict(database.parameters),
        }
        if database.description:
            database_input["Description"] = database.description
        if database.location:
            database_input["LocationUri"] = database.location
        try:
            self._call("create_database", DatabaseInput=database_input)
        except ClientError as error:
            if _code(error) != "AlreadyExistsException":
                raise self._refused("create database", database.name, error) from None

    def create_table(self, table: Table) -> None:
        try:
            self._call("create_table", DatabaseName=table.database, TableInput=table_input(table))
        except ClientError as error:
            raise self._refused("create table", table.qualified_name, error) from None

    def alter_table(self, table: Table) -> None:
        try:
            self._call("update_table", DatabaseName=table.database, TableInput=table_input(table))
        except ClientError as error:
            raise self._refused("update table", table.qualified_name, error) from None

    def alter_table_if(self, table: Table, key: str, expected: str) -> None:
        """Glue's optimistic concurrency: ``UpdateTable`` with the ``VersionId`` of the copy
        whose parameter was checked; a concurrent update moves the version and this one
        fails with ``ConcurrentModificationException``."""
        what = table.qualified_name
        try:
            current = self._call("get_table", DatabaseName=table.database, Name=table.name)
        except ClientError as error:
            raise self._refused("read table", what, error) from None
        found = current["Table"].get("Parameters", {}).get(key)
        changed = ConcurrentChangeError(
            f"replica table {what} changed since it was read (its {key} is no longer {expected})"
        )
        if found != expected:
            raise changed
        try:
            self._call(
                "update_table",
                DatabaseName=table.database,
                TableInput=table_input(table),
                VersionId=current["Table"]["VersionId"],
            )
        except ClientError as error:
            if _code(error) == "ConcurrentModificationException":
                raise changed from None
            raise self._refused("update table", what, error) from None

    def add_partitions(self, table: Table, partitions: Sequence[Partition]) -> None:
        self._write_batches(
            "batch_create_partition", "PartitionInputList", partition_input,
            "add partitions to", table, partitions,
        )  # fmt: skip

    def alter_partitions(self, table: Table, partitions: Sequence[Partition]) -> None:
        self._write_batches(
            "batch_update_partition", "Entries",
            lambda p: {"PartitionValueList": list(p.values), "PartitionInput": partition_input(p)},
            "update partitions of", table, partitions,
        )  # fmt: skip

    def _write_batches(
        self,
        operation: str,
        field: str,
        entry: Callable[[Partition], dict[str, Any]],
        action: str,
        table: Table,
        partitions: Sequence[Partition],
    ) -> None:
        for batch in batched(partitions, GLUE_WRITE_BATCH):
            try:
                reply = self._call(
                    operation,
                    DatabaseName=table.database,
                    TableName=table.name,
                    **{field: [entry(p) for p in batch]},
                )
            except ClientError as error:
                raise self._refused(action, table.qualified_name, error) from None
            self._raise_batch_errors(reply, action, table)

    def drop_partitions(self, table: Table, values: Sequence[tuple[str, ...]]) -> None:
        # BatchDeletePartition takes at most 25 entries a call; a missing one is an error
        # entry, not a failure, and is fine here (an earlier attempt dropped it).
        for batch in batched(values, GLUE_DELETE_BATCH):
            try:
                reply = self._call(
                    "batch_delete_partition",
                    DatabaseName=table.database,
                    TableName=table.name,
                    PartitionsToDelete=[{"Values": list(v)} for v in batch],
                )
            except ClientError as error:
                raise self._refused("drop partitions of", table.qualified_name, error) from None
            errors = [
                e
                for e in reply.get("Errors") or []
                if e.get("ErrorDetail", {}).get("ErrorCode") != "EntityNotFoundException"
            ]
            self._raise_batch_errors({"Errors": errors}, "drop partitions of", table)

    def drop_table(self, database: str, name: str) -> None:
        try:
            self._call("delete_table", DatabaseName=database, Name=name)
        except ClientError as error:
            if _code(error) != "EntityNotFoundException":
                raise self._refused("drop table", f"{database}.{name}", error) from None

    def drop_database(self, name: str) -> None:
        try:
            self._call("delete_database", Name=name)
        except ClientError as error:
            if _code(error) != "EntityNotFoundException":
                raise self._refused("drop database", name, error) from None

    def _raise_batch_errors(self, reply: dict[str, Any], action: str, table: Table) -> None:
        # Batch calls succeed as a whole and report each failed entry in "Errors".
        errors = reply.get("Errors") or []
        if errors:
            first = errors[0]
            detail = first.get("ErrorDetail", {})
            raise CatalogError(
                f"Glue catalog '{self.name}' refused to {action} {table.qualified_name}: "
                f"{len(errors)} failed, first {first.get('PartitionValues')}: "
                f"{detail.get('ErrorCode')}: {detail.get('ErrorMessage')}"
            )

    def _refused(self, action: str, what: str, error: ClientError) -> CatalogError:
        return CatalogError(
            f"Glue catalog '{self.name}' refused to {action} {what}: {_code(error)}: "
            f"{error.response.get('Error', {}).get('Message', '')}"
        )


def _code(error: ClientError) -> str:
    return error.response.get("Error", {}).get("Code", "")
