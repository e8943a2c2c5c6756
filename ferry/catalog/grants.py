"""The grants port: who may do what on a catalog's databases, tables and columns.

Permissions live apart from the catalog port (``ferry.catalog.Catalog``): Lake Formation is
a service and a client of its own beside Glue, and a Hive metastore's privileges are calls of
their own. ``LakeFormationGrants`` (``grants_lakeformation``) and ``HiveGrants``
(``grants_hive``) implement it. What a replica must be granted and revoked is computed from
both sides' grants by ``ferry.catalog.grant_changes``, a pure function; ``Grants.apply``
checks the changes first (every principal exists, every grant may be given) and then makes
them, so a mistake is one ``GrantError`` line and nothing changed.

One ``Grant`` is one privilege of one principal on one target: Lake Formation's lists of
permissions and Hive's one-privilege rows both become sets of them, so two sides compare
as sets.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ferry.core.errors import GrantError


@dataclass(frozen=True)
class GrantTarget:
    """What a grant is on: a database (``table`` None), a table, or some of its columns."""

    database: str
    table: str | None = None
    #: Lake Formation's ``TableWithColumns.ColumnNames``, a Hive column grant's one column;
    #: None: the whole table.
    columns: tuple[str, ...] | None = None
    #: Lake Formation's ``ColumnWildcard``: every column but these (``()``: every column).
    excluded_columns: tuple[str, ...] | None = None

    def __str__(self) -> str:
        name = self.database if self.table is None else f"{self.database}.{self.table}"
        if self.columns is not None:
            return f"{name} ({', '.join(self.columns)})"
        if self.excluded_columns:
            return f"{name} (all columns but {', '.join(self.excluded_columns)})"
        return name

    @property
    def sort_key(self) -> tuple:
        """Databases before their tables, tables before their columns, by name."""
        return (
            self.database, self.table or "", self.columns is not None, self.columns or (),
            self.excluded_columns or (),
        )  # fmt: skip

    def renamed(self, database: str, table: str | None) -> GrantTarget:
        """The same target in another database and table (the replica's names)."""
        return GrantTarget(
            database, table if self.table is not None else None, self.columns,
            self.excluded_columns,
        )  # fmt: skip


@dataclass(frozen=True)
class Grant:
    """One privilege of one principal on one target, and whether it may pass it on.

    ``principal``: Lake Formation's ``DataLakePrincipalIdentifier``, or Hive's
    ``USER:name`` / ``ROLE:name`` / ``GROUP:name``. ``grantor``: who gave it (Hive keeps it;
    not part of what the grant is).
    """

    principal: str
    target: GrantTarget
    privilege: str
    grantable: bool = False
    grantor: str | None = field(default=None, compare=False)

    @property
    def sort_key(self) -> tuple:
        return (self.principal, self.target.sort_key, self.privilege, self.grantable)

    def __str__(self) -> str:
        option = " with grant option" if self.grantable else ""
        return f"{self.privilege} on {self.target} to {self.principal}{option}"


@dataclass(frozen=True)
class ResourceTag:
    """One Lake Formation tag (key and value) assigned to a database, table or column."""

    target: GrantTarget
    key: str
    value: str

    @property
    def sort_key(self) -> tuple:
        return (self.target.sort_key, self.key, self.value)

    def __str__(self) -> str:
        return f"{self.key}={self.value} on {self.target}"


@dataclass(frozen=True)
class GrantChanges:
    """What a replica must be granted, revoked, tagged and untagged to match its source, and
    what of the source no mapping covers (reported, never guessed)."""

    grant: tuple[Grant, ...] = ()
    revoke: tuple[Grant, ...] = ()
    tag: tuple[ResourceTag, ...] = ()
    untag: tuple[ResourceTag, ...] = ()
    #: Source principals no mapping names, each once.
    unmapped_principals: tuple[str, ...] = ()
    #: Source tags (``key=value``) no tag mapping covers, each once.
    unmapped_tags: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the replica needs no change (unmapped ones may still be reported)."""
        return not (self.grant or self.revoke or self.tag or self.untag)

    @property
    def principals(self) -> set[str]:
        """The replica's principals these changes grant to."""
        return {grant.principal for grant in self.grant}

    def counts(self, *, carried: bool = True) -> dict[str, int]:
        """How many grants, revokes, tags and untags (none when not ``carried``), and how many
        source principals and tags were left unmapped: what the SUCCESS message says."""
        done = (self.grant, self.revoke, self.tag, self.untag) if carried else ((),) * 4
        return {
            "granted": len(done[0]),
            "revoked": len(done[1]),
            "tagged": len(done[2]),
            "untagged": len(done[3]),
            "unmappedPrincipals": len(self.unmapped_principals),
            "unmappedTags": len(self.unmapped_tags),
        }

    def notices(self) -> list[str]:
        """One line for each source principal or tag that no mapping covers."""
        return [
            f"source principal {p} is not in principal-mappings: its grants are not replicated"
            for p in self.unmapped_principals
        ] + [
            f"source tag {t} is not in tag-mappings: it is not replicated"
            for t in self.unmapped_tags
        ]


class Grants(ABC):
    """The grants of one catalog (one side of a replication)."""

    #: Where the grants are, for messages (``lakeformation:us-east-1``, metastore URIs).
    description: str

    @abstractmethod
    def list_grants(self, database: str, table: str, columns: Sequence[str]) -> list[Grant]:
        """Every grant on ``database``, on its table ``table``, and on the table's columns
        (``columns``: the table's column names)."""

    def list_tags(self, database: str, table: str, columns: Sequence[str]) -> list[ResourceTag]:
        """The tags assigned to the database, the table and its columns (none by default:
        only Lake Formation has tags)."""
        return []

    @abstractmethod
    def missing_principals(self, principals: Iterable[str]) -> list[str]:
        """Those of ``principals`` this side does not have, where it can tell (others are
        taken as existing)."""

    @abstractmethod
    def not_grantable(self, grants: Sequence[Grant]) -> list[Grant]:
        """Those of ``grants`` (to give or revoke) the caller may not give here."""

    @abstractmethod
    def _write(self, changes: GrantChanges) -> None:
        """Make ``changes``: revokes and untags first, then grants and tags."""

    def check(self, changes: GrantChanges) -> None:
        """``GrantError`` (one line) when a principal ``changes`` grants to does not exist here
        or a grant or revoke may not be given by the caller; nothing is changed either way
        (Plan can check what Commit will apply)."""
        if changes.empty:
            return
        missing = self.missing_principals(sorted(changes.principals))
        if missing:
            raise GrantError(
                f"{self.description}: principal {missing[0]} does not exist "
                f"(mapped in principal-mappings); nothing was granted or revoked"
            )
        refused = self.not_grantable([*changes.revoke, *changes.grant])
        if refused:
            raise GrantError(
                f"{self.description}: Ferry may not give {refused[0]} (it is neither an "
                f"administrator nor holds the grant option); nothing was granted or revoked"
            )

    def apply(self, changes: GrantChanges) -> None:
        """Check ``changes`` (``check``) and make them: revokes and untags first."""
        self.check(changes)
        if not changes.empty:
            self._write(changes)
