"""The AWS emulator's Lake Formation keeps grants and LF-tags as AWS does, where moto 5.2 does
not (Ferry's grant replication, ``ferry.catalog.grants_lakeformation``, relies on each):

- ``BatchGrantPermissions`` and ``BatchRevokePermissions`` keep each entry's
  ``PermissionsWithGrantOption``: moto reads a key of another name and drops the option.
- A grant's resource gets the request's catalog id where it names none, as AWS fills it in:
  moto stores it as sent, and a listing filtered by catalog id missed it.
- ``ListPermissions`` filtered by a table returns the grants on its columns too
  (``TableWithColumns``), as AWS "returns the table and the table w columns"; moto left them
  out, and failed (HTTP 500) when the database held a grant on all its tables
  (``TableWildcard``), which is not the named table's.
- ``AddLFTagsToResource`` refuses a tag value the tag does not have (AWS's
  ``EntityNotFoundException`` failure, "Tag or tag value does not exist"), and adds to the
  resource's tags, a key's new value replacing its old one, instead of replacing them all.
- ``GetResourceLFTags`` and ``RemoveLFTagsFromResource`` of a resource that was never
  tagged answer no tags (moto failed with a ``KeyError``, an HTTP 500); removing a tag value
  the resource does not hold is a no-op.
- A grant or revoke by a role session the emulator gave out (a deployed role's, as IAM is
  enforced for, ``ferry.local.emulator_iam``) is refused unless the role is a data lake
  administrator of the catalog or holds each permission with the grant option on the
  resource (on the table, for a grant on its columns): ``AccessDeniedException``, and for the
  batch calls a failure per refused entry, the others made, as Lake Formation answers. moto
  checks nothing. Not emulated: the implicit permissions of a database's or table's creator.
"""

from __future__ import annotations

import copy
from typing import Any

#: The resource shapes that name a Glue catalog (``CatalogId``) and can be tagged.
_CATALOG_RESOURCES = ("Database", "Table", "TableWithColumns", "LFTag")
#: Lake Formation's words for a grant its caller may not give.
NOT_AUTHORIZED = (
    "Resource does not exist or requester is not authorized to access requested permissions."
)


def with_catalog_id(resource: dict[str, Any] | None, catalog_id: str) -> dict[str, Any] | None:
    """``resource`` with ``catalog_id`` where it names none (AWS fills it in)."""
    if not resource:
        return resource
    filled = copy.deepcopy(resource)
    for shape in _CATALOG_RESOURCES:
        if isinstance(filled.get(shape), dict):
            filled[shape].setdefault("CatalogId", catalog_id)
    return filled


def install() -> None:
    from moto.lakeformation.models import LakeFormationBackend

    grant, revoke = LakeFormationBackend.grant_permissions, LakeFormationBackend.revoke_permissions

    def grant_permissions(self: Any, catalog_id: str, principal: Any, resource: Any,
                          *args: Any, **kwargs: Any) -> None:  # fmt: skip
        grant(self, catalog_id, principal, with_catalog_id(resource, catalog_id), *args, **kwargs)

    def revoke_permissions(self: Any, catalog_id: str, principal: Any, resource: Any,
                           *args: Any, **kwargs: Any) -> None:  # fmt: skip
        revoke(self, catalog_id, principal, with_catalog_id(resource, catalog_id), *args, **kwargs)

    LakeFormationBackend.grant_permissions = grant_permissions
    LakeFormationBackend.revoke_permissions = revoke_permissions
    LakeFormationBackend.batch_grant_permissions = _batch(grant_permissions)
    LakeFormationBackend.batch_revoke_permissions = _batch(revoke_permissions)
    LakeFormationBackend.list_permissions = _with_column_grants(
        LakeFormationBackend.list_permissions
    )
    _grantors_checked()
    LakeFormationBackend.add_lf_tags_to_resource = _add_lf_tags_to_resource
    LakeFormationBackend.get_resource_lf_tags = _get_resource_lf_tags
    LakeFormationBackend.remove_lf_tags_from_resource = _remove_lf_tags_from_resource


def _batch(serve: Any) -> Any:
    def batch(self: Any, catalog_id: str, entries: list[dict[str, Any]]) -> None:
        for entry in entries or []:
            serve(
                self, catalog_id, entry.get("Principal"), entry.get("Resource"),
                entry.get("Permissions") or [], entry.get("PermissionsWithGrantOption") or [],
            )  # fmt: skip

    return batch


def _with_column_grants(list_permissions: Any) -> Any:
    def listing(self: Any, catalog_id: str, principal: Any = None, resource: Any = None,
                resource_type: Any = None) -> list[dict[str, Any]]:  # fmt: skip
        table = getattr(resource, "table", None)
        if (
            table is None or table.name is None or catalog_id not in self.grants
            or resource.catalog is not None or resource.database is not None
        ):  # fmt: skip
            return list_permissions(self, catalog_id, principal, resource, resource_type)
        # A named table's grants: on the table and on its columns; a grant on every table of
        # the database (``TableWildcard``) is not the table's (moto's filter failed on one).
        found = []
        for permission in self.grants[catalog_id].permissions:
            held = permission.resource.get("Table") or permission.resource.get("TableWithColumns")
            if held is None or (principal is not None and permission.principal != principal):
                continue
            if (held.get("DatabaseName"), held.get("Name")) != (table.database_name, table.name):
                continue
            if table.catalog_id is not None and held.get("CatalogId") != table.catalog_id:
                continue
            found.append(permission.to_external_form())
        return found

    return listing


def _tags_of(self: Any, resource: dict[str, Any]) -> list[tuple[dict, tuple]]:
    """The stores and keys of a resource's tags: (the store, its key) per tagged object."""
    places = []
    if "Database" in resource:
        database = resource["Database"]
        key = (database.get("CatalogId", self.account_id), database["Name"])
        places.append((self.lf_database_tags, key))
    if "Table" in resource:
        table = resource["Table"]
        key = (table.get("CatalogId", self.account_id), table["DatabaseName"], table["Name"])
        places.append((self.lf_table_tags, key))
    if "TableWithColumns" in resource:
        table = resource["TableWithColumns"]
        for column in table.get("ColumnNames") or []:
            key = (
                table.get("CatalogId", self.account_id), table["DatabaseName"], table["Name"],
                column,
            )  # fmt: skip
            places.append((self.lf_columns_tags, key))
    return places


def _add_lf_tags_to_resource(self: Any, catalog_id: str, resource: dict[str, Any],
                             tags: list[dict[str, Any]]) -> list[dict[str, Any]]:  # fmt: skip
    defined = self.list_lf_tags(catalog_id)
    failures = []
    for tag in tags:
        tag.setdefault("CatalogId", catalog_id)
        values = defined.get(tag["TagKey"])
        if values is None or not set(tag.get("TagValues") or []) <= set(values):
            failures.append({
                "LFTag": tag,
                "Error": {"ErrorCode": "EntityNotFoundException",
                          "ErrorMessage": "Tag or tag value does not exist."},
            })  # fmt: skip
    if failures:
        return failures
    for store, key in _tags_of(self, resource):
        kept = [t for t in store.get(key, []) if t["TagKey"] not in {n["TagKey"] for n in tags}]
        store[key] = kept + [dict(tag) for tag in tags]
    return []


def _get_resource_lf_tags(self: Any, catalog_id: str, resource: dict[str, Any]) -> tuple:
    database_tags: list = []
    table_tags: list = []
    column_tags: list = []
    for store, key in _tags_of(self, resource):
        found = store.get(key) or []
        if store is self.lf_database_tags:
            database_tags = found
        elif store is self.lf_table_tags:
            table_tags = found
        elif found:
            column_tags.append({"Name": key[-1], "LFTags": found})
    return database_tags, table_tags, column_tags


def _remove_lf_tags_from_resource(self: Any, catalog_id: str, resource: dict[str, Any],
                                  tags: list[dict[str, Any]]) -> None:  # fmt: skip
    for store, key in _tags_of(self, resource):
        held = store.get(key)
        if not held:
            continue
        for tag in tags:
            removed = set(tag.get("TagValues") or [])
            for pair in held:
                if pair["TagKey"] == tag["TagKey"]:
                    pair["TagValues"] = [v for v in pair["TagValues"] if v not in removed]
        store[key] = [pair for pair in held if pair["TagValues"]]


def _grantors_checked() -> None:
    """Grants and revokes of the emulator's role sessions keep Lake Formation's grantor rule."""
    from moto.core.exceptions import JsonRESTError
    from moto.lakeformation.responses import LakeFormationResponse

    class AccessDenied(JsonRESTError):
        code = 403

    for method in ("grant_permissions", "revoke_permissions"):
        serve = getattr(LakeFormationResponse, method)

        def single(self: Any, serve: Any = serve) -> str:
            entry = {name: self._get_param(name) for name in _ENTRY_KEYS}
            if not _may_give(self, entry):
                raise AccessDenied("AccessDeniedException", NOT_AUTHORIZED)
            return serve(self)

        setattr(LakeFormationResponse, method, single)
    for method in ("batch_grant_permissions", "batch_revoke_permissions"):
        serve = getattr(LakeFormationResponse, method)

        def batch(self: Any, serve: Any = serve) -> str:
            import json

            entries = self._get_param("Entries") or []
            refused = [entry for entry in entries if not _may_give(self, entry)]
            if refused:
                # Serve the others only: the backend reads the entries from the parameters.
                self._get_param = _without(self._get_param, "Entries", [
                    entry for entry in entries if entry not in refused
                ])  # fmt: skip
            answer = json.loads(serve(self))
            answer["Failures"] = [
                {"RequestEntry": entry,
                 "Error": {"ErrorCode": "AccessDeniedException", "ErrorMessage": NOT_AUTHORIZED}}
                for entry in refused
            ]  # fmt: skip
            return json.dumps(answer)

        setattr(LakeFormationResponse, method, batch)


_ENTRY_KEYS = ("Principal", "Resource", "Permissions", "PermissionsWithGrantOption")


def _without(get_param: Any, name: str, value: Any) -> Any:
    def replaced(key: str, *args: Any, **kwargs: Any) -> Any:
        return value if key == name else get_param(key, *args, **kwargs)

    return replaced


def _may_give(response: Any, entry: dict[str, Any]) -> bool:
    """Whether the caller of ``response`` may grant (or revoke) ``entry``: always, unless it is
    a role session the emulator gave out that is neither a data lake administrator nor holds
    each permission with the grant option."""
    from ferry.local.authorization import Authorizer
    from ferry.local.iam_request import signature_of

    headers = {key.lower(): value for key, value in response.headers.items()}
    signed = signature_of(headers, {})
    caller = Authorizer.caller_of(signed.access_key_id if signed else None)
    if caller is None:
        return True
    backend = response.lakeformation_backend
    catalog_id = response._get_param("CatalogId") or response.current_account
    settings = backend.get_data_lake_settings(catalog_id)
    admins = {a.get("DataLakePrincipalIdentifier") for a in settings.get("DataLakeAdmins") or []}
    if caller.role_arn in admins:
        return True
    wanted = set(entry.get("Permissions") or []) | set(
        entry.get("PermissionsWithGrantOption") or []
    )
    resource = with_catalog_id(entry.get("Resource"), catalog_id) or {}
    held: set[str] = set()
    for permission in getattr(backend.grants.get(catalog_id), "permissions", ()):
        if permission.principal == {"DataLakePrincipalIdentifier": caller.role_arn} and _covers(
            permission.resource, resource
        ):
            held.update(permission.permissions_with_grant_options)
    return "ALL" in held or wanted <= held


def _covers(held: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether a grant on ``held`` lets its holder give one on ``wanted``: the same resource,
    or the table of a grant on some of its columns."""
    if held == wanted:
        return True
    columns, table = wanted.get("TableWithColumns"), held.get("Table")
    if columns is None or table is None:
        return False
    names = ("CatalogId", "DatabaseName", "Name")
    return all(columns.get(name) == table.get(name) for name in names)
