"""Who may read a replica: the ``permissions`` section.

A source's grants reach its replica only through these mappings: each source principal (and
each Lake Formation tag) the replica should know is named here with what it is on the
replica's side. A grant whose principal no mapping names is reported, never guessed
(``ferry.catalog.grant_changes``). Both sections are optional; a section that is absent
replicates nothing of its kind.

```yaml
permissions:
  lake-formation:
    principal-mappings:
      "arn:aws:iam::111111111111:role/analyst": "arn:aws:iam::222222222222:role/analyst"
    tag-mappings:
      team: team                                  # the same key, values as they are
      env: {key: environment, values: {prod: dr}} # another key, each value named
  hive-privileges:
    principal-mappings: {"ROLE:analysts": "ROLE:analysts", "USER:etl": "USER:etl_dr"}
```
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator, model_validator

from ferry.config.base import _Model

#: Lake Formation's own names for groups of principals.
LAKE_FORMATION_GROUPS = frozenset({"IAM_ALLOWED_PRINCIPALS", "ALLIAMPrincipals"})
#: The most characters of a ``DataLakePrincipalIdentifier`` (Lake Formation's API).
MAX_LAKE_FORMATION_PRINCIPAL = 255
_ACCOUNT_ID = re.compile(r"\d{12}")
_ARN = re.compile(r"arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:(?:\d{12})?:\S+")
_HIVE_PRINCIPAL = re.compile(r"(?P<type>USER|ROLE|GROUP):(?P<name>\S(?:.*\S)?)", re.IGNORECASE)


def check_lake_formation_principal(value: Any) -> str:
    """A Lake Formation principal: an ARN (an IAM role or user, a SAML or Identity Center
    group, an organization), an account id, or ``IAM_ALLOWED_PRINCIPALS``."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = f"{value:012d}"  # YAML reads an unquoted account id as a number
    if (
        isinstance(value, str)
        and len(value) <= MAX_LAKE_FORMATION_PRINCIPAL
        and (
            value in LAKE_FORMATION_GROUPS or _ACCOUNT_ID.fullmatch(value) or _ARN.fullmatch(value)
        )
    ):
        return value
    raise ValueError(
        f"{value!r} is not a Lake Formation principal: give an IAM role or user ARN "
        "(arn:aws:iam::123456789012:role/analyst), another principal's ARN, a 12-digit "
        "account id, or IAM_ALLOWED_PRINCIPALS"
    )


def check_hive_principal(value: Any) -> str:
    """A Hive metastore principal, ``USER:name``, ``ROLE:name`` or ``GROUP:name``; the type
    is written upper-case (``role:analysts`` is ``ROLE:analysts``)."""
    found = _HIVE_PRINCIPAL.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise ValueError(
            f"{value!r} is not a Hive principal: give USER:name, ROLE:name or GROUP:name"
        )
    return f"{found['type'].upper()}:{found['name']}"


def _principal_mappings(value: Any, check: Any) -> Any:
    if not isinstance(value, dict):
        return value
    return {check(source): check(replica) for source, replica in value.items()}


class TagMapping(_Model):
    """What one source LF-tag is on the replica: its key there, and its values.

    Without ``values`` every value is carried as it is; with them, only the values named
    (any other is reported).
    """

    key: str = Field(min_length=1, max_length=128)
    values: dict[str, str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _key_alone(cls, data: Any) -> Any:
        """``team: team`` is ``team: {key: team}``."""
        return {"key": data} if isinstance(data, str) else data


class LakeFormationPermissions(_Model):
    """Lake Formation grants and LF-tags of a Glue source, granted on a Glue replica."""

    enabled: bool = True
    #: A grant the source revoked is revoked at the replica (only grants to principals
    #: the mappings name on the replica's side are ever revoked).
    revoke: bool = True
    principal_mappings: dict[str, str] = Field(default_factory=dict)
    tag_mappings: dict[str, TagMapping] = Field(default_factory=dict)

    @field_validator("principal_mappings", mode="before")
    @classmethod
    def _principals(cls, value: Any) -> Any:
        return _principal_mappings(value, check_lake_formation_principal)


class HivePrivileges(_Model):
    """Hive metastore privileges of a Hive source, granted on a Hive replica."""

    enabled: bool = True
    #: A privilege the source revoked is revoked at the replica (only privileges of
    #: principals the mappings name on the replica's side are ever revoked).
    revoke: bool = True
    principal_mappings: dict[str, str] = Field(default_factory=dict)

    @field_validator("principal_mappings", mode="before")
    @classmethod
    def _principals(cls, value: Any) -> Any:
        return _principal_mappings(value, check_hive_principal)


class PermissionsSettings(_Model):
    """The ``permissions`` section: which of a source's grants its replicas receive."""

    lake_formation: LakeFormationPermissions | None = None
    hive_privileges: HivePrivileges | None = None


def check_permissions_catalogs(
    permissions: PermissionsSettings, source_is_glue: bool, replica_is_glue: bool
) -> None:
    """Lake Formation grants go from a Glue catalog to a Glue catalog, Hive privileges from a
    Hive metastore to a Hive metastore: a section the catalogs cannot serve is refused."""
    lake_formation = permissions.lake_formation
    if lake_formation is not None and lake_formation.enabled:
        if not (source_is_glue and replica_is_glue):
            raise ValueError(
                "permissions.lake-formation: Lake Formation grants are replicated from a Glue "
                "source-catalog to a Glue replica-catalog; remove the section or set its "
                "enabled: false"
            )
    hive = permissions.hive_privileges
    if hive is not None and hive.enabled and (source_is_glue or replica_is_glue):
        raise ValueError(
            "permissions.hive-privileges: Hive privileges are replicated from a Hive metastore "
            "source-catalog to a Hive metastore replica-catalog; remove the section or set "
            "its enabled: false"
        )
