"""The Lake Formation and IAM actions of replicating grants (``permissions.lake-formation``).

Granted only when a deployed config has an enabled ``lake-formation`` section with a Glue
catalog this account's roles reach themselves (a replica side reached with ``assume-role``
is the DR account's role's to allow: ``dr_statements``, which ``infra/dr_account.py`` adds), or
the environment's ``ad-hoc-access.grant-principals`` names principals of configs run by hand:
Plan
reads both sides' grants and LF-tags and checks on the replica's side that they can be given
(``Grants.check``: ``GetDataLakeSettings``, the caller's own ``ListPermissions``, and each
mapped principal with ``iam:GetRole`` / ``GetUser``); Commit reads the replica's again and
gives and revokes them. Lake Formation authorizes its actions on ``*`` only (its API takes no
resource-level permissions); what a grant names is authorized by the ``glue:GetTable`` /
``GetDatabase`` the functions already hold on the configs' databases, as AWS requires of
every grantor. ``iam:GetRole`` / ``GetUser`` name exactly the mapped principals.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from aws_cdk import aws_iam as iam

from ferry.config import ReplicationConfig

#: What Plan calls: both sides' grants and tags read, the replica's side checked.
LAKE_FORMATION_READ = (
    "lakeformation:GetDataLakeSettings",
    "lakeformation:GetResourceLFTags",
    "lakeformation:ListPermissions",
)
#: What Commit calls besides: the changes made.
LAKE_FORMATION_WRITE = (
    "lakeformation:AddLFTagsToResource",
    "lakeformation:BatchGrantPermissions",
    "lakeformation:BatchRevokePermissions",
    "lakeformation:RemoveLFTagsFromResource",
)
_IAM_PRINCIPAL = re.compile(r"arn:aws[a-z-]*:iam::(?P<account>\d{12}):(?P<kind>role|user)/\S+")


def mapped_principals(configs: Iterable[ReplicationConfig], account: str) -> list[str] | None:
    """The IAM roles and users of ``account`` the configs' Lake Formation mappings grant to;
    None when no config replicates Lake Formation grants between catalogs this account's
    roles reach themselves (a side reached with ``assume-role`` is that role's to allow)."""
    return _principals_of(
        configs,
        account,
        lambda config: (
            not config.source_catalog.assume_role and not config.replica_catalog.assume_role
        ),
    )


def _principals_of(
    configs: Iterable[ReplicationConfig],
    account: str,
    chosen: Callable[[ReplicationConfig], bool],
) -> list[str] | None:
    """The IAM roles and users of ``account`` that the enabled Lake Formation mappings of the
    ``chosen`` configs grant to; None when no chosen config replicates such grants."""
    found: set[str] | None = None
    for config in configs:
        section = config.permissions.lake_formation
        if section is None or not section.enabled or not chosen(config):
            continue
        found = found or set()
        for principal in section.principal_mappings.values():
            match = _IAM_PRINCIPAL.fullmatch(principal)
            if match is not None and match["account"] == account:
                found.add(principal)
    return None if found is None else sorted(found)


def reads_source_grants_only(configs: Iterable[ReplicationConfig]) -> bool:
    """Whether a config replicates Lake Formation grants from a source this account's roles
    read themselves into a replica side reached with ``assume-role`` (another account's):
    Plan reads the source's grants as its own role, and the rest is the assumed role's."""
    return any(
        config.permissions.lake_formation is not None
        and config.permissions.lake_formation.enabled
        and not config.source_catalog.assume_role
        and config.replica_catalog.assume_role is not None
        for config in configs
    )


def dr_statements(configs: Iterable[ReplicationConfig], account: str) -> list[dict]:
    """What the DR account's role (``infra/dr_account.py``) needs for the configs whose
    replica side it is (``assume-role``) and whose Lake Formation grants are replicated:
    Plan's checks and Commit's changes on the replica's side, and ``iam:GetRole`` /
    ``GetUser`` of the mapped principals of its account; none without such a config."""
    wanted = _principals_of(
        configs, account, lambda config: config.replica_catalog.assume_role is not None
    )
    if wanted is None:
        return []
    statements = [
        {
            "Effect": "Allow",
            "Action": [*LAKE_FORMATION_READ, *LAKE_FORMATION_WRITE],
            "Resource": "*",
        }
    ]
    if wanted:
        statements.append(
            {
                "Effect": "Allow",
                "Action": ["iam:GetRole", "iam:GetUser"],
                "Resource": wanted,
            }
        )
    return statements


def allow_grants(
    grantee: iam.IGrantable,
    configs: Iterable[ReplicationConfig],
    account: str,
    *,
    write: bool,
    ad_hoc: Iterable[str] = (),
) -> None:
    """Let ``grantee`` read (Plan) or also make (``write``: Commit) the configs' grants, and
    those of configs run by hand whose mapped principals ``ad_hoc`` names
    (``ad-hoc-access.grant-principals``)."""
    configs = list(configs)
    mapped, ad_hoc = mapped_principals(configs, account), sorted(set(ad_hoc))
    if mapped is None and not ad_hoc:
        if not write and reads_source_grants_only(configs):
            grantee.grant_principal.add_to_principal_policy(
                iam.PolicyStatement(actions=list(LAKE_FORMATION_READ), resources=["*"])
            )
        return
    principals = sorted({*(mapped or ()), *ad_hoc})
    actions = LAKE_FORMATION_READ + (LAKE_FORMATION_WRITE if write else ())
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=list(actions), resources=["*"])
    )
    if principals:
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=["iam:GetRole", "iam:GetUser"], resources=principals)
        )
