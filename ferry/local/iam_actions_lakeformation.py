"""The IAM checks of a request to Lake Formation, a REST service whose operation is its path
(``POST /GrantPermissions``).

Lake Formation's actions name no resource type: each is checked on ``*``. Granting or
revoking on a named resource also needs ``glue:GetTable`` on the table, or
``glue:GetDatabase`` on the database ("IAM permissions required to grant or revoke Lake
Formation permissions"): data lake administrators included, since Lake Formation's own
permissions come only after IAM's.
"""

from __future__ import annotations

from typing import Any

from ferry.local.authorization import Check
from ferry.local.iam_request import HttpRequest, Unmodelled, arn

#: The Lake Formation operations the local runtime knows (moto's, and the grants port's).
OPERATIONS = frozenset({
    "AddLFTagsToResource", "BatchGrantPermissions", "BatchRevokePermissions", "CreateLFTag",
    "DeleteLFTag", "DeregisterResource", "DescribeResource", "GetDataLakePrincipal",
    "GetDataLakeSettings", "GetLFTag", "GetResourceLFTags", "GrantPermissions",
    "ListDataCellsFilter", "ListLFTags", "ListPermissions", "ListResources",
    "PutDataLakeSettings", "RegisterResource", "RemoveLFTagsFromResource",
    "RevokePermissions", "UpdateLFTag",
})  # fmt: skip
_GRANTING = {"GrantPermissions", "RevokePermissions"}
_BATCH_GRANTING = {"BatchGrantPermissions", "BatchRevokePermissions"}


def lakeformation_checks(request: HttpRequest) -> list[Check] | Unmodelled:
    operation = request.path.strip("/")
    if request.method != "POST" or operation not in OPERATIONS:
        return Unmodelled(f"lakeformation {request.method} {request.path}")
    checks = [Check(f"lakeformation:{operation}", "*")]
    if operation in _GRANTING | _BATCH_GRANTING:
        body = request.json()
        account = body.get("CatalogId") or request.account
        resources = (
            [entry.get("Resource") or {} for entry in body.get("Entries") or []]
            if operation in _BATCH_GRANTING
            else [body.get("Resource") or {}]
        )
        for resource in resources:
            for check in _glue_checks(request, resource, account):
                if check not in checks:
                    checks.append(check)
    return checks


def _glue_checks(request: HttpRequest, resource: dict[str, Any], account: str) -> list[Check]:
    """``glue:GetDatabase`` or ``glue:GetTable`` on the named resource a grant is on, checked
    on the catalog, the database and the table as Glue authorizes them."""
    if "Database" in resource:
        database = resource["Database"]
        owner = database.get("CatalogId") or account
        name = str(database.get("Name", "")).lower()
        resources = [
            arn("glue", request, "catalog", owner),
            arn("glue", request, f"database/{name}", owner),
        ]
        return [Check("glue:GetDatabase", r, account=owner) for r in resources]
    table = resource.get("Table") or resource.get("TableWithColumns")
    if table is None or "Name" not in table:
        return []  # a table wildcard, a data location, an LF-tag: no named Glue resource
    owner = table.get("CatalogId") or account
    database = str(table.get("DatabaseName", "")).lower()
    resources = [
        arn("glue", request, "catalog", owner),
        arn("glue", request, f"database/{database}", owner),
        arn("glue", request, f"table/{database}/{str(table['Name']).lower()}", owner),
    ]
    return [Check("glue:GetTable", r, account=owner) for r in resources]
