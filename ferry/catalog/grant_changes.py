"""What a replica must be granted and revoked to match its source: a pure function of both
sides' grants and the config's mappings (``permissions`` in ``ferry.config.permissions``).

- A source grant reaches the replica only through ``principal-mappings``: its principal is
  the mapped one, its target the replica's database and table. A principal no mapping names
  is reported (``GrantChanges.unmapped_principals``), never guessed.
- Ferry manages the replica's grants to the principals the mappings name on the replica's
  side, and no other: a grant to anyone else (an administrator's, the catalog's defaults) is
  left alone, whatever the source holds.
- A managed grant the source no longer holds is revoked (unless ``revoke`` is off). A grant
  whose grant option changed is revoked and given again either way: Hive refuses a grant
  already held, and the option is part of what was given.
- Lake Formation tags follow ``tag-mappings`` the same way: a tag key (or value) no mapping
  covers is reported; tags whose key the mappings name on the replica's side are managed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from ferry.catalog.grants import Grant, GrantChanges, GrantTarget, ResourceTag


class TagRename(Protocol):
    """What a source tag key is on the replica (``ferry.config.permissions.TagMapping``)."""

    @property
    def key(self) -> str: ...

    @property
    def values(self) -> Mapping[str, str] | None: ...


def grant_changes(
    source_grants: Iterable[Grant],
    replica_grants: Iterable[Grant],
    principal_mappings: Mapping[str, str],
    replica_database: str,
    replica_table: str,
    *,
    revoke: bool = True,
    source_tags: Iterable[ResourceTag] = (),
    replica_tags: Iterable[ResourceTag] = (),
    tag_mappings: Mapping[str, TagRename] | None = None,
) -> GrantChanges:
    """The grants and tags that make the replica table's match its source table's.

    ``source_grants`` are on the source's database, table and columns; ``replica_grants`` on
    the replica's (``replica_database``, ``replica_table``).
    """
    wanted: dict[tuple, Grant] = {}
    unmapped: set[str] = set()
    for grant in source_grants:
        principal = principal_mappings.get(grant.principal)
        if principal is None:
            unmapped.add(grant.principal)
            continue
        mapped = Grant(
            principal,
            grant.target.renamed(replica_database, replica_table),
            grant.privilege,
            grant.grantable,
            principal_mappings.get(grant.grantor or "", grant.grantor),
        )
        wanted[_identity(mapped)] = mapped
    managed = set(principal_mappings.values())
    held = {
        _identity(grant): grant
        for grant in replica_grants
        if grant.principal in managed and _on(grant.target, replica_database, replica_table)
    }
    to_grant, to_revoke = [], []
    for key, grant in wanted.items():
        current = held.get(key)
        if current is None:
            to_grant.append(grant)
        elif current.grantable != grant.grantable:
            to_revoke.append(current)
            to_grant.append(grant)
    if revoke:
        to_revoke.extend(grant for key, grant in held.items() if key not in wanted)
    tags = _tag_changes(
        source_tags, replica_tags, tag_mappings or {}, replica_database, replica_table, revoke
    )
    return GrantChanges(
        grant=tuple(sorted(to_grant, key=_by_sort_key)),
        revoke=tuple(sorted(to_revoke, key=_by_sort_key)),
        tag=tags[0],
        untag=tags[1],
        unmapped_principals=tuple(sorted(unmapped)),
        unmapped_tags=tags[2],
    )


def _by_sort_key(item: Grant | ResourceTag) -> tuple:
    return item.sort_key


def _identity(grant: Grant) -> tuple:
    """What a grant is, its grant option apart: one principal, target and privilege."""
    return (grant.principal, grant.target, grant.privilege)


def _on(target: GrantTarget, database: str, table: str) -> bool:
    """Whether ``target`` is the replica's database, or its table (or its columns)."""
    if target.database.lower() != database.lower():
        return False
    return target.table is None or target.table.lower() == table.lower()


def _tag_changes(
    source_tags: Iterable[ResourceTag],
    replica_tags: Iterable[ResourceTag],
    mappings: Mapping[str, TagRename],
    database: str,
    table: str,
    revoke: bool,
) -> tuple[tuple[ResourceTag, ...], tuple[ResourceTag, ...], tuple[str, ...]]:
    """(tags to add, tags to remove, source tags no mapping covers) of the replica."""
    wanted: set[ResourceTag] = set()
    unmapped: set[str] = set()
    for tag in source_tags:
        mapping = mappings.get(tag.key)
        values = None if mapping is None else mapping.values
        value = (
            tag.value if mapping is not None and values is None else (values or {}).get(tag.value)
        )
        if mapping is None or value is None:
            unmapped.add(f"{tag.key}={tag.value}")
            continue
        wanted.add(ResourceTag(tag.target.renamed(database, table), mapping.key, value))
    managed = {mapping.key for mapping in mappings.values()}
    held = {tag for tag in replica_tags if tag.key in managed and _on(tag.target, database, table)}
    # A resource holds one value of a key: a value that changed is removed either way.
    replaced = {(tag.target, tag.key) for tag in wanted}
    untag = {tag for tag in held - wanted if revoke or (tag.target, tag.key) in replaced}
    return (
        tuple(sorted(wanted - held, key=_by_sort_key)),
        tuple(sorted(untag, key=_by_sort_key)),
        tuple(sorted(unmapped)),
    )
