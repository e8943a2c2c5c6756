"""The grants port on AWS Lake Formation: a Glue catalog's grants and LF-tags.

Reads with ``ListPermissions`` (a table's filter returns its column grants too) and
``GetResourceLFTags``; writes with ``BatchRevokePermissions`` / ``BatchGrantPermissions``
(20 entries a call, Lake Formation's limit) and ``RemoveLFTagsFromResource`` /
``AddLFTagsToResource``. ``ListPermissions`` returns only what the caller may see: the role
that reads a source must be a data lake administrator there (or hold the grant options).

Before writing, ``apply`` checks what Lake Formation would refuse part-way: a mapped IAM role
or user of the catalog's own account that does not exist (``iam:GetRole`` / ``GetUser``), and
a grant the caller may not give (it is no data lake administrator, and ``ListPermissions``
of its own shows no grant option for it).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from botocore.exceptions import ClientError

from ferry.catalog import batched
from ferry.catalog.grants import Grant, GrantChanges, Grants, GrantTarget, ResourceTag
from ferry.core.errors import CatalogError

#: Entries Lake Formation takes in one ``BatchGrantPermissions`` / ``BatchRevokePermissions``.
BATCH_ENTRIES = 20
_IAM_ARN = re.compile(
    r"arn:aws[a-z-]*:iam::(?P<account>\d{12}):(?P<kind>role|user)/(?:.*/)?(?P<name>[^/]+)"
)
_ASSUMED_ROLE = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/.*"
)


def principal_of(caller_arn: str) -> str:
    """The Lake Formation principal of an STS caller: an assumed role's session is its role
    (``arn:aws:iam::<account>:role/<name>``); a user is its own ARN."""
    found = _ASSUMED_ROLE.fullmatch(caller_arn)
    if found is None:
        return caller_arn
    return f"arn:{found['partition']}:iam::{found['account']}:role/{found['role']}"


class LakeFormationGrants(Grants):
    """The Lake Formation grants of the Glue catalog ``catalog_id`` (an account id).

    ``caller``: the principal Ferry acts as there (``principal_of`` its STS identity);
    ``iam``: the account's IAM client, to tell a mapped principal that does not exist.
    """

    def __init__(self, client: Any, catalog_id: str, caller: str, iam: Any | None = None):
        self.client = client
        self.catalog_id = catalog_id
        self.caller = caller
        self.iam = iam
        self.description = f"lakeformation:{client.meta.region_name}:{catalog_id}"

    # -- reads ----------------------------------------------------------------------------

    def list_grants(self, database: str, table: str, columns: Sequence[str]) -> list[Grant]:
        grants = []
        for resource in (self._database(database), self._table(GrantTarget(database, table))):
            for entry in self._permissions(Resource=resource):
                grants.extend(_grants_of(entry))
        return grants

    def list_tags(self, database: str, table: str, columns: Sequence[str]) -> list[ResourceTag]:
        tags = []
        found = self._resource_tags(self._database(database))
        tags += _tags_of(GrantTarget(database), found.get("LFTagOnDatabase"))
        table_target = GrantTarget(database, table)
        tags += _tags_of(table_target, self._resource_tags(self._table(table_target)).get(
            "LFTagsOnTable"
        ))  # fmt: skip
        if columns:
            resource = self._table(GrantTarget(database, table, tuple(columns)))
            for column in self._resource_tags(resource).get("LFTagsOnColumns") or []:
                target = GrantTarget(database, table, (column["Name"].lower(),))
                tags += _tags_of(target, column.get("LFTags"))
        return tags

    def _permissions(self, **filters: Any) -> Iterator[dict[str, Any]]:
        token = None
        while True:
            page = self._call(
                "ListPermissions",
                CatalogId=self.catalog_id,
                **filters,
                **({"NextToken": token} if token else {}),
            )
            yield from page.get("PrincipalResourcePermissions") or []
            token = page.get("NextToken")
            if not token:
                return

    def _resource_tags(self, resource: dict[str, Any]) -> dict[str, Any]:
        return self._call(
            "GetResourceLFTags",
            CatalogId=self.catalog_id,
            Resource=resource,
            ShowAssignedLFTags=True,
        )

    # -- checks ---------------------------------------------------------------------------

    def missing_principals(self, principals: Iterable[str]) -> list[str]:
        missing = []
        for principal in principals:
            found = _IAM_ARN.fullmatch(principal)
            if self.iam is None or found is None or found["account"] != self.catalog_id:
                continue  # another account's principals are not this side's to look up
            try:
                if found["kind"] == "role":
                    self.iam.get_role(RoleName=found["name"])
                else:
                    self.iam.get_user(UserName=found["name"])
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
                    raise
                missing.append(principal)
        return missing

    def not_grantable(self, grants: Sequence[Grant]) -> list[Grant]:
        settings = self._call("GetDataLakeSettings", CatalogId=self.catalog_id)
        admins = settings.get("DataLakeSettings", {}).get("DataLakeAdmins") or []
        if any(admin.get("DataLakePrincipalIdentifier") == self.caller for admin in admins):
            return []
        held: dict[GrantTarget, set[str]] = {}
        refused = []
        for grant in grants:
            # A column grant is given by one who may give it on the table.
            target = GrantTarget(grant.target.database, grant.target.table)
            if target not in held:
                held[target] = self._grant_options(target)
            options = held[target]
            if grant.privilege not in options and "ALL" not in options:
                refused.append(grant)
        return refused

    def _grant_options(self, target: GrantTarget) -> set[str]:
        """What the caller holds with the grant option on ``target``."""
        resource = self._database(target.database) if target.table is None else self._table(target)
        principal = {"DataLakePrincipalIdentifier": self.caller}
        options: set[str] = set()
        for entry in self._permissions(Principal=principal, Resource=resource):
            options.update(entry.get("PermissionsWithGrantOption") or [])
        return options

    # -- writes ---------------------------------------------------------------------------

    def _write(self, changes: GrantChanges) -> None:
        for target, tags in _by_target(changes.untag).items():
            self._call(
                "RemoveLFTagsFromResource",
                CatalogId=self.catalog_id,
                Resource=self._resource(target),
                LFTags=self._tag_pairs(tags),
            )
        self._batches("BatchRevokePermissions", changes.revoke)
        self._batches("BatchGrantPermissions", changes.grant)
        for target, tags in _by_target(changes.tag).items():
            answer = self._call(
                "AddLFTagsToResource",
                CatalogId=self.catalog_id,
                Resource=self._resource(target),
                LFTags=self._tag_pairs(tags),
            )
            _refuse_failures("AddLFTagsToResource", answer.get("Failures"))

    def _batches(self, operation: str, grants: Sequence[Grant]) -> None:
        entries = []
        by_resource: dict[tuple[str, GrantTarget], list[Grant]] = defaultdict(list)
        for grant in grants:
            by_resource[(grant.principal, grant.target)].append(grant)
        for index, ((principal, target), held) in enumerate(by_resource.items()):
            entries.append({
                "Id": str(index),
                "Principal": {"DataLakePrincipalIdentifier": principal},
                "Resource": self._resource(target),
                "Permissions": sorted(g.privilege for g in held),
                "PermissionsWithGrantOption": sorted(g.privilege for g in held if g.grantable),
            })  # fmt: skip
        for batch in batched(entries, BATCH_ENTRIES):
            answer = self._call(operation, CatalogId=self.catalog_id, Entries=batch)
            _refuse_failures(operation, answer.get("Failures"))

    def _tag_pairs(self, tags: Sequence[ResourceTag]) -> list[dict[str, Any]]:
        values: dict[str, list[str]] = defaultdict(list)
        for tag in tags:
            values[tag.key].append(tag.value)
        return [
            {"CatalogId": self.catalog_id, "TagKey": key, "TagValues": sorted(found)}
            for key, found in sorted(values.items())
        ]

    # -- shapes ---------------------------------------------------------------------------

    def _database(self, name: str) -> dict[str, Any]:
        return {"Database": {"CatalogId": self.catalog_id, "Name": name}}

    def _table(self, target: GrantTarget) -> dict[str, Any]:
        names = {"CatalogId": self.catalog_id, "DatabaseName": target.database}
        if target.columns is not None:
            return {"TableWithColumns": {**names, "Name": target.table,
                                         "ColumnNames": list(target.columns)}}  # fmt: skip
        if target.excluded_columns is not None:
            wildcard = {"ExcludedColumnNames": list(target.excluded_columns)}
            return {"TableWithColumns": {**names, "Name": target.table,
                                         "ColumnWildcard": wildcard}}  # fmt: skip
        return {"Table": {**names, "Name": target.table}}

    def _resource(self, target: GrantTarget) -> dict[str, Any]:
        return self._database(target.database) if target.table is None else self._table(target)

    def _call(self, operation: str, **parameters: Any) -> dict[str, Any]:
        methods = {api: name for name, api in self.client.meta.method_to_api_mapping.items()}
        try:
            return getattr(self.client, methods[operation])(**parameters)
        except ClientError as error:
            problem = error.response.get("Error", {})
            raise CatalogError(
                f"{self.description}: {operation} refused: {problem.get('Code')}: "
                f"{problem.get('Message')}"
            ) from None


def _grants_of(entry: dict[str, Any]) -> list[Grant]:
    """One ``Grant`` per permission of a ``PrincipalResourcePermissions`` entry (a grant on
    every table of a database, ``TableWildcard``, is not a table's, and is skipped)."""
    target = _target_of(entry.get("Resource") or {})
    if target is None:
        return []
    principal = entry["Principal"]["DataLakePrincipalIdentifier"]
    grantable = set(entry.get("PermissionsWithGrantOption") or [])
    privileges = set(entry.get("Permissions") or []) | grantable
    return [Grant(principal, target, p, p in grantable) for p in sorted(privileges)]


def _target_of(resource: dict[str, Any]) -> GrantTarget | None:
    if "Database" in resource:
        return GrantTarget(resource["Database"]["Name"].lower())
    table = resource.get("Table")
    if table is not None:
        if "Name" not in table:
            return None
        return GrantTarget(table["DatabaseName"].lower(), table["Name"].lower())
    columns = resource.get("TableWithColumns")
    if columns is not None:
        database, name = columns["DatabaseName"].lower(), columns["Name"].lower()
        if "ColumnNames" in columns:
            names = tuple(sorted(c.lower() for c in columns["ColumnNames"]))
            return GrantTarget(database, name, columns=names)
        wildcard = columns.get("ColumnWildcard") or {}
        excluded = tuple(sorted(c.lower() for c in wildcard.get("ExcludedColumnNames") or []))
        return GrantTarget(database, name, excluded_columns=excluded)
    return None


def _tags_of(target: GrantTarget, pairs: list[dict[str, Any]] | None) -> list[ResourceTag]:
    return [
        ResourceTag(target, pair["TagKey"], value)
        for pair in pairs or []
        for value in pair.get("TagValues") or []
    ]


def _by_target(tags: Sequence[ResourceTag]) -> dict[GrantTarget, list[ResourceTag]]:
    grouped: dict[GrantTarget, list[ResourceTag]] = defaultdict(list)
    for tag in tags:
        grouped[tag.target].append(tag)
    return grouped


def _refuse_failures(operation: str, failures: list[dict[str, Any]] | None) -> None:
    if failures:
        problem = failures[0].get("Error") or {}
        raise CatalogError(
            f"lakeformation: {operation} refused {len(failures)} entr"
            f"{'y' if len(failures) == 1 else 'ies'}: {problem.get('ErrorCode')}: "
            f"{problem.get('ErrorMessage')}"
        )
