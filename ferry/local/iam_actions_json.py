"""The IAM checks of a request to a JSON service, whose operation is in ``X-Amz-Target``:
Glue, DynamoDB, Secrets Manager, Step Functions, KMS and EventBridge."""

from __future__ import annotations

import re
from typing import Any

from ferry.local.authorization import Check
from ferry.local.iam_request import HttpRequest, Unmodelled, arn, key_arn, target

#: Glue operations by the resources AWS authorizes them on: the database's, or the table's.
_GLUE_DATABASE_OPERATIONS = {"GetDatabase", "CreateDatabase", "UpdateDatabase"}
_GLUE_TABLE_OPERATIONS = {
    "GetTable", "CreateTable", "UpdateTable", "DeleteTable", "GetTableVersions",
    "GetPartition", "GetPartitions", "BatchGetPartition", "CreatePartition",
    "BatchCreatePartition", "UpdatePartition", "BatchUpdatePartition", "DeletePartition",
    "BatchDeletePartition",
}  # fmt: skip
#: The column statistics operations, on the table's resources like the others, and the action
#: AWS's API reference names for each ("The IAM permission required for this operation is
#: GetTable"), which the authorization reference does not: both are checked.
_GLUE_STATISTICS_OPERATIONS = {
    "GetColumnStatisticsForTable": "GetTable",
    "GetColumnStatisticsForPartition": "GetPartition",
    "UpdateColumnStatisticsForTable": "UpdateTable",
    "UpdateColumnStatisticsForPartition": "UpdatePartition",
    "DeleteColumnStatisticsForTable": "DeleteTable",
    "DeleteColumnStatisticsForPartition": "DeletePartition",
}


def glue_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    operation = target(request)
    body = request.json()
    account = body.get("CatalogId") or request.account
    catalog = arn("glue", request, "catalog", account)
    action = f"glue:{operation}"

    def on(*resources: str, action: str = action) -> list[Check]:
        return [Check(action, catalog, account=account)] + [
            Check(action, arn("glue", request, r, account), account=account) for r in resources
        ]

    if operation in _GLUE_DATABASE_OPERATIONS:
        name = body.get("Name") or (body.get("DatabaseInput") or {}).get("Name", "")
        return on(f"database/{name.lower()}")
    if operation == "DeleteDatabase":
        name = body["Name"].lower()
        return on(f"database/{name}", f"table/{name}/*", f"userDefinedFunction/{name}/*")
    if operation == "GetDatabases":
        return on("database/*")
    database = str(body.get("DatabaseName", "")).lower()
    if operation == "GetTables":
        return on(f"database/{database}", f"table/{database}/*")
    if operation in _GLUE_TABLE_OPERATIONS:
        table = (
            body.get("TableName")
            or body.get("Name")
            or (body.get("TableInput") or {}).get("Name", "")
        )
        return on(f"database/{database}", f"table/{database}/{str(table).lower()}")
    if operation in _GLUE_STATISTICS_OPERATIONS:
        resources = (f"database/{database}", f"table/{database}/{str(body['TableName']).lower()}")
        also = f"glue:{_GLUE_STATISTICS_OPERATIONS[operation]}"
        return on(*resources) + on(*resources, action=also)
    if operation == "BatchDeleteTable":
        return on(
            f"database/{database}",
            *(f"table/{database}/{t.lower()}" for t in body["TablesToDelete"]),
        )
    return Unmodelled(f"glue {operation}")


def dynamodb_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    operation = target(request)
    body = request.json()
    action = f"dynamodb:{operation}"
    if operation in ("BatchWriteItem", "BatchGetItem"):
        return [Check(action, arn("dynamodb", request, f"table/{t}")) for t in body["RequestItems"]]
    if operation == "ListTables":
        return [Check(action, "*")]
    if "TableName" in body:
        table = arn("dynamodb", request, f"table/{body['TableName']}")
        return [Check(action, table, _leading_keys(operation, body))]
    return Unmodelled(f"dynamodb {operation}")


#: The partition key of Ferry's state table (``ferry.replicas.ledger``'s key design). The mapping
#: sees a request, not the table's key schema: the condition key is given for this name.
_PARTITION_KEY = "pk"


def _leading_keys(operation: str, body: dict[str, Any]) -> dict[str, Any]:
    """``dynamodb:LeadingKeys``, the partition key values a request touches, as AWS gives it
    for item reads and writes and for a Query's key condition (``pk = :value``)."""
    item = body.get("Item") if operation == "PutItem" else body.get("Key")
    if operation in ("GetItem", "PutItem", "UpdateItem", "DeleteItem") and isinstance(item, dict):
        value = item.get(_PARTITION_KEY, {}).get("S")
        return {"dynamodb:LeadingKeys": [value]} if value is not None else {}
    if operation == "Query":
        condition = body.get("KeyConditionExpression", "")
        names = {v: k for k, v in body.get("ExpressionAttributeNames", {}).items()}
        for name, placeholder in re.findall(r"([#\w]+)\s*=\s*(:\w+)", condition):
            if names.get(_PARTITION_KEY) == name or name == _PARTITION_KEY:
                value = body.get("ExpressionAttributeValues", {}).get(placeholder, {}).get("S")
                if value is not None:
                    return {"dynamodb:LeadingKeys": [value]}
    return {}


def secretsmanager_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    operation = target(request)
    body = request.json()
    if "SecretId" not in body:
        return Unmodelled(f"secretsmanager {operation}")
    return [Check(f"secretsmanager:{operation}", _secret_arn(body["SecretId"], request))]


def _secret_arn(identifier: str, request: HttpRequest) -> str:
    if identifier.startswith("arn:"):
        return identifier
    from moto.secretsmanager.models import secretsmanager_backends

    backend = secretsmanager_backends[request.account][request.signed.region]
    if identifier in backend.secrets:
        return backend.secrets[identifier].arn
    return arn("secretsmanager", request, f"secret:{identifier}")


def states_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    operation = target(request)
    body = request.json()
    resource = body.get("stateMachineArn") or body.get("executionArn") or body.get("mapRunArn")
    if not resource:
        return Unmodelled(f"states {operation}")
    return [Check(f"states:{operation}", resource)]


def kms_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    operation = target(request)
    key = request.json().get("KeyId")
    if not key:
        return Unmodelled(f"kms {operation}")
    return [Check(f"kms:{operation}", key_arn(key, request.signed.region, request.account))]


# EventBridge (the failover switch turns rules off) -------------------------------------------

#: EventBridge operations on one rule, named in the body (``Name``, or ``Rule`` for targets).
_EVENTS_RULE_OPERATIONS = {
    "DescribeRule", "DisableRule", "EnableRule", "PutRule", "DeleteRule", "PutTargets",
    "RemoveTargets", "ListTargetsByRule",
}  # fmt: skip


def events_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    """A rule's operations on the rule (``rule/<name>`` on the default bus,
    ``rule/<bus>/<name>`` on another); ``PutEvents`` on each bus it puts on."""
    operation = target(request)
    body = request.json()
    action = f"events:{operation}"
    if operation in _EVENTS_RULE_OPERATIONS:
        name = body.get("Name") or body.get("Rule")
        if not name:
            return Unmodelled(f"events {operation}")
        bus = str(body.get("EventBusName") or "default").rsplit("/", 1)[-1]
        rule = f"rule/{name}" if bus == "default" else f"rule/{bus}/{name}"
        return [Check(action, arn("events", request, rule))]
    if operation == "PutEvents":
        buses = {str(entry.get("EventBusName") or "default") for entry in body.get("Entries", [])}
        return [
            Check(
                action,
                bus if bus.startswith("arn:") else arn("events", request, f"event-bus/{bus}"),
            )
            for bus in sorted(buses)
        ]
    return Unmodelled(f"events {operation}")
