"""The stack of the disaster-recovery account: the role Ferry's roles assume there, and the
policies of its buckets (``infra/dr_buckets.py``).

DR guidance keeps the replica in an account of its own. The environment's ``dr-account``
settings name it; this stack, deployed in that account, holds one role
(``dr-account.role-name``) that:

- trusts exactly the primary account's Ferry roles: the principal is the primary account,
  and ``aws:PrincipalArn`` must be one of this environment's roles (the functions' and the
  Spark job's, all named ``Ferry-<environment>-…`` by the CDK), with the external id when
  the settings give one (``sts:ExternalId``);
- may read and write the replica side as ``infra/access.py`` grants it in one account: the
  DR buckets' objects and listings, the Glue databases' tables (read and write), and the
  buckets' KMS keys through S3 only (``kms:ViaService``).

The DR buckets the settings mark ``create: true`` are the stack's, with their policies and,
with ``kms``, the stack's key; for the others the stack outputs the statements their
policies need (``infra/dr_buckets.py``).

Replication configs name the role as their ``replica-catalog.assume-role.role-arn``
(``arn:aws:iam::<dr account>:role/<role-name>``); ``infra/access.py`` grants Ferry's roles
``sts:AssumeRole`` on exactly the role ARNs the configs name.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.access import GLUE_READ, GLUE_WRITE, S3_READ
from infra.dr_buckets import (
    KMS_THROUGH_S3,
    S3_BUCKETS,
    S3_OBJECTS,
    DrBuckets,
    primary_role_pattern,
)
from infra.grants_access import dr_statements


def trust_statement(
    primary_account: str, principal_arns: list[str], external_id: str | None = None
) -> dict[str, Any]:
    """The DR role's trust: the primary account, only for ``principal_arns`` (IAM's
    wildcards allowed), with the external id when given."""
    conditions: dict[str, dict[str, Any]] = {
        "ArnLike": {
            "aws:PrincipalArn": principal_arns[0] if len(principal_arns) == 1 else principal_arns
        }
    }
    if external_id:
        conditions["StringEquals"] = {"sts:ExternalId": external_id}
    return {
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:aws:iam::{primary_account}:root"},
        "Action": "sts:AssumeRole",
        "Condition": conditions,
    }


def permission_statements(
    region: str,
    account: str,
    buckets: list[str],
    glue_databases: list[str],
    kms_keys: list[str] = (),  # type: ignore[assignment]
    read_locations: list[str] = (),  # type: ignore[assignment]
) -> list[dict[str, Any]]:
    """What the DR role may do: the named buckets and Glue databases, and read the source
    locations (``s3://bucket/prefix/``) an S3 → S3 copy reads as the role (their buckets'
    policies must allow it too: another account's); nothing else."""
    statements: list[dict[str, Any]] = []
    if read_locations:
        statements.append(
            {
                "Effect": "Allow",
                "Action": list(S3_READ),
                "Resource": sorted(
                    {
                        "arn:aws:s3:::" + location.removeprefix("s3://").rstrip("/") + "/*"
                        for location in read_locations
                    }
                ),
            }
        )
    if buckets:
        statements.append(
            {
                "Effect": "Allow",
                "Action": list(S3_OBJECTS),
                "Resource": [f"arn:aws:s3:::{bucket}/*" for bucket in sorted(buckets)],
            }
        )
        statements.append(
            {
                "Effect": "Allow",
                "Action": list(S3_BUCKETS),
                "Resource": [f"arn:aws:s3:::{bucket}" for bucket in sorted(buckets)],
            }
        )
    if glue_databases:
        prefix = f"arn:aws:glue:{region}:{account}"
        resources = [f"{prefix}:catalog"]
        for database in sorted(glue_databases):
            resources += [f"{prefix}:database/{database}", f"{prefix}:table/{database}/*"]
        statements.append(
            {"Effect": "Allow", "Action": [*GLUE_READ, *GLUE_WRITE], "Resource": resources}
        )
    if kms_keys:
        statements.append(
            {
                "Effect": "Allow",
                "Action": list(KMS_THROUGH_S3),
                "Resource": sorted(kms_keys),
                "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
            }
        )
    return statements


class DrAccountStack(cdk.Stack):
    """The DR account's role for one environment (``dr-account`` of its settings)."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: Any, **kwargs: Any):
        dr = settings.dr_account
        super().__init__(
            scope,
            construct_id,
            env=cdk.Environment(account=dr.account, region=dr.region),
            description=f"Ferry {settings.name}: the DR account's role and buckets",
            **kwargs,
        )
        self.settings = settings
        trust = trust_statement(
            settings.account,
            [primary_role_pattern(settings.account, settings.name)],
            dr.external_id,
        )
        self.role = iam.Role(
            self,
            "DrRole",
            role_name=dr.role_name,
            assumed_by=iam.AccountPrincipal(settings.account).with_conditions(trust["Condition"]),
            max_session_duration=cdk.Duration.seconds(int(dr.max_session_duration.total_seconds())),
            description=f"Ferry {settings.name}: the replica side in this account",
        )
        # An S3 → S3 copy into a DR bucket reads its source as the role: the read locations
        # of the configs whose replica side is reached through a role.
        read_locations = sorted(
            {
                location
                for replication in settings.replications
                if settings.configs[replication.config].replica_catalog.assume_role is not None
                for location in replication.read_locations
            }
        )
        statements = permission_statements(
            dr.region, dr.account, dr.bucket_names, dr.glue_databases, dr.kms_keys, read_locations
        )
        # Lake Formation grants replicated into this account: the replica's side is this role's.
        statements += dr_statements(settings.configs.values(), dr.account)
        policy = iam.Policy(
            self,
            "DrRolePolicy",
            document=iam.PolicyDocument.from_json(
                {"Version": "2012-10-17", "Statement": statements}
            ),
        )
        policy.attach_to_role(self.role)
        cdk.CfnOutput(self, "RoleArn", value=self.role.role_arn)
        # The buckets' side: policies (and the key) of the buckets the stack creates, the
        # statements to merge for the others.
        self.buckets = DrBuckets(self, "DrBuckets", settings=settings, role=self.role)
