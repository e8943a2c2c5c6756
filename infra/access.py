"""Least privilege, derived from the environment's settings and its replication configs.

Every grant names the configured resources: the read and write locations of the settings
file (S3 objects and the listing of exactly those prefixes), the Glue databases the configs
name (their tables, never the whole catalog), and the SNS topics they publish to. What a
function may do follows from the steps it runs (``infra/functions.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlparse

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from ferry.config import CatalogConfig, ReplicationConfig
from infra.settings import EnvironmentSettings

GLUE_READ = (
    "glue:GetDatabase",
    "glue:GetDatabases",
    "glue:GetTable",
    "glue:GetTables",
    "glue:GetPartition",
    "glue:GetPartitions",
    "glue:BatchGetPartition",
    # Column statistics: AWS's API reference names GetTable / GetPartition for these, the
    # service authorization reference their own actions; a role holds both.
    "glue:GetColumnStatisticsForTable",
    "glue:GetColumnStatisticsForPartition",
)
GLUE_WRITE = (
    "glue:CreateDatabase",
    "glue:DeleteDatabase",
    "glue:CreateTable",
    "glue:UpdateTable",
    "glue:DeleteTable",
    "glue:CreatePartition",
    "glue:BatchCreatePartition",
    "glue:UpdatePartition",
    "glue:BatchUpdatePartition",
    "glue:DeletePartition",
    "glue:BatchDeletePartition",
    "glue:UpdateColumnStatisticsForTable",
    "glue:UpdateColumnStatisticsForPartition",
    "glue:DeleteColumnStatisticsForTable",
    "glue:DeleteColumnStatisticsForPartition",
)
#: What a failover does in the replica catalog: read a replica table, its partitions (the
#: baseline), and mark it promoted (``ferry.failover.promotion``).
GLUE_PROMOTE = ("glue:GetDatabase", "glue:GetTable", "glue:GetPartitions", "glue:UpdateTable")
S3_READ = ("s3:GetObject", "s3:GetObjectVersion")
#: What using the environment's KMS key takes: S3 objects, SNS messages, DynamoDB items.
KEY_USE = (
    "kms:Decrypt",
    "kms:DescribeKey",
    "kms:Encrypt",
    "kms:GenerateDataKey",
    "kms:ReEncryptFrom",
    "kms:ReEncryptTo",
)
S3_WRITE = ("s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")


@dataclass
class _Catalog:
    region: str
    account: str
    databases: set[str] = field(default_factory=set)


@dataclass
class _Tables:
    region: str
    account: str
    #: (database, table) pairs; ``*``: every table of the database (a pattern's).
    tables: set[tuple[str, str]] = field(default_factory=set)


class DataAccess:
    """The grants of one environment: data locations, catalogs, topics."""

    def __init__(self, scope: Stack, settings: EnvironmentSettings):
        self.stack = scope
        self.settings = settings
        configs = list(settings.configs.values())
        ad_hoc = settings.ad_hoc_access
        self.read_locations = sorted(
            {location for r in settings.replications for location in r.read_locations}
            | set(ad_hoc.read_locations)
        )
        self.write_locations = sorted(settings.write_locations)
        self.read_keys = sorted(
            {key for r in settings.replications for key in r.read_kms_keys}
            | set(ad_hoc.read_kms_keys)
        )
        self.write_keys = sorted(settings.write_kms_keys)
        failback = settings.failback
        #: What failback's reverse run writes of the sources (``failback``; none: nothing).
        self.failback_locations = sorted(failback.write_locations) if failback else []
        self.failback_keys = sorted(failback.kms_keys) if failback else []
        self.failback_glue = self._failback_glue(configs)
        self.source_glue = self._glue(configs, source=True)
        self.replica_glue = self._glue(configs, source=False)
        #: The deployed configs' replica tables in Glue (no ad-hoc access): what a failover
        #: promotes.
        self.replica_tables = self._replica_tables(configs)
        #: The roles the configs' replica sides in other accounts are reached with.
        self.replica_roles = sorted(
            {
                config.replica_catalog.assume_role.role_arn
                for config in configs
                if config.replica_catalog.assume_role is not None
            }
        )
        #: The roles the configs' sides in other accounts are reached with (``assume-role``).
        self.side_roles = sorted(
            {
                catalog.assume_role.role_arn
                for config in configs
                for catalog in (config.source_catalog, config.replica_catalog)
                if catalog.assume_role is not None
            }
            | set(ad_hoc.assume_roles)
        )
        self.topics = sorted(
            {
                topic
                for config in configs
                if config.sns_event_listener
                for topic in (
                    config.sns_event_listener.topic,
                    config.sns_event_listener.start_topic,
                    config.sns_event_listener.success_topic,
                    config.sns_event_listener.fail_topic,
                )
                if topic
            }
            | set(ad_hoc.topics)
        )

    # -- S3 ------------------------------------------------------------------------------

    def read_data(self, grantee: iam.IGrantable) -> None:
        """Read and list the source data (and the replica's, to compare and verify)."""
        locations = [*self.read_locations, *self.write_locations]
        allow(grantee, S3_READ, _objects(locations))
        self._list(grantee, locations)
        _through_s3(grantee, ("kms:Decrypt",), [*self.read_keys, *self.write_keys])

    def write_replicas(self, grantee: iam.IGrantable) -> None:
        """Write new snapshots below the write locations, nowhere else."""
        allow(grantee, S3_WRITE, _objects(self.write_locations))
        self._list(grantee, self.write_locations)
        # A copy reads from a source bucket's key and writes with the replica bucket's.
        _through_s3(grantee, ("kms:GenerateDataKey", "kms:Decrypt"), self.write_keys)

    def delete_replicas(self, grantee: iam.IGrantable) -> None:
        """Delete retired snapshots (abort, housekeeping): below the write locations only."""
        allow(grantee, ("s3:DeleteObject",), _objects(self.write_locations))
        self._list(grantee, self.write_locations)

    # -- Glue ----------------------------------------------------------------------------

    def read_catalogs(self, grantee: iam.IGrantable) -> None:
        for catalog in (*self.source_glue, *self.replica_glue):
            allow(grantee, GLUE_READ, self._glue_arns(catalog))

    def write_replica_catalog(self, grantee: iam.IGrantable) -> None:
        for catalog in self.replica_glue:
            allow(grantee, GLUE_WRITE, self._glue_arns(catalog))

    # -- failback ------------------------------------------------------------------------

    def write_sources(
        self, grantee: iam.IGrantable, *, data: bool, delete: bool, catalog: bool
    ) -> None:
        """What failback's reverse run does to the sources, as the settings' ``failback``
        allows (nothing without it): write its snapshots below ``write-locations`` (``data``),
        remove one that fails verification or that nothing references (``delete``), alter the
        source tables of ``databases`` (``catalog``)."""
        if not self.failback_locations:
            return
        if data:
            allow(grantee, S3_WRITE, _objects(self.failback_locations))
            _through_s3(grantee, ("kms:GenerateDataKey", "kms:Decrypt"), self.failback_keys)
        if delete:
            allow(grantee, ("s3:DeleteObject",), _objects(self.failback_locations))
        if catalog:
            for source in self.failback_glue:
                allow(grantee, GLUE_WRITE, self._glue_arns(source))

    def _failback_glue(self, configs: Iterable[ReplicationConfig]) -> list[_Catalog]:
        """The configs' source Glue catalogs, each with the failback's databases."""
        failback = self.settings.failback
        if failback is None or not failback.databases:
            return []
        catalogs: dict[tuple[str, str], _Catalog] = {}
        for config in configs:
            glue = config.source_catalog.glue
            if glue is None or config.source_catalog.assume_role is not None:
                continue
            region = glue.region or self.settings.region
            account = glue.catalog_id or self.settings.account
            entry = catalogs.setdefault((region, account), _Catalog(region, account))
            entry.databases.update(failback.databases)
        return [catalogs[key] for key in sorted(catalogs)]

    # -- failover ------------------------------------------------------------------------

    def promote_replicas(self, grantee: iam.IGrantable, extra: Iterable[str] = ()) -> None:
        """What a failover of a deployed config does to its replicas: read them in the
        replica catalog and alter exactly them (Glue: each configured replica table, a
        ``table-name-pattern``'s database's tables; a Hive metastore is reached through the
        VPC), list their locations (the baseline's fingerprints) and read an Iceberg
        replica's metadata (its current snapshot), below the write locations only.
        ``extra``: more Glue actions on the same tables (failback's, on their partitions)."""
        for catalog in self.replica_tables:
            prefix = f"arn:aws:glue:{catalog.region}:{catalog.account}"
            databases = sorted({database for database, _ in catalog.tables})
            tables = [f"{prefix}:table/{d}/{t}" for d, t in sorted(catalog.tables)]
            parents = [f"{prefix}:catalog", *(f"{prefix}:database/{d}" for d in databases)]
            allow(grantee, GLUE_PROMOTE, [*parents, *tables])
            if extra:
                allow(grantee, tuple(extra), [*parents, *tables])
        self._list(grantee, self.write_locations)
        locations = map(_split, self.write_locations)
        metadata = {f"arn:aws:s3:::{bucket}/{prefix}*/metadata/*" for bucket, prefix in locations}
        allow(grantee, S3_READ, sorted(metadata))
        _through_s3(grantee, ("kms:Decrypt",), self.write_keys)
        if self.replica_roles:
            allow(grantee, ("sts:AssumeRole",), self.replica_roles)

    # -- other accounts ------------------------------------------------------------------

    def assume_side_roles(self, grantee: iam.IGrantable) -> None:
        """Assume exactly the roles the configs name for a side in another account (the DR
        role, ``infra/dr_account.py``): its catalog and buckets are reached with it."""
        if self.side_roles:
            allow(grantee, ("sts:AssumeRole",), self.side_roles)

    # -- SNS -----------------------------------------------------------------------------

    def publish(self, grantee: iam.IGrantable) -> None:
        if self.topics:
            allow(grantee, ("sns:Publish",), self.topics)

    # -- pieces --------------------------------------------------------------------------

    def _glue(self, configs: Iterable[ReplicationConfig], *, source: bool) -> list[_Catalog]:
        catalogs: dict[tuple[str, str], _Catalog] = {}
        for config in configs:
            catalog: CatalogConfig = config.source_catalog if source else config.replica_catalog
            if catalog.glue is None or catalog.assume_role is not None:
                continue  # another account's catalog: its role is granted there
            region = catalog.glue.region or self.settings.region
            account = catalog.glue.catalog_id or self.settings.account
            entry = catalogs.setdefault((region, account), _Catalog(region, account))
            for replication in config.table_replications:
                entry.databases.add(
                    replication.source_table.database_name.lower()
                    if source
                    else replication.replica_database.lower()
                )
        for access in self.settings.ad_hoc_access.glue:
            region = access.region or self.settings.region
            account = access.catalog_id or self.settings.account
            entry = catalogs.setdefault((region, account), _Catalog(region, account))
            # Read: sources and replicas alike (a plan reads both); written: replicas only.
            entry.databases.update(
                access.read_databases + access.write_databases
                if source
                else access.write_databases
            )
        return [catalog for catalog in catalogs.values() if catalog.databases]

    def _replica_tables(self, configs: Iterable[ReplicationConfig]) -> list[_Tables]:
        catalogs: dict[tuple[str, str], _Tables] = {}
        for config in configs:
            catalog = config.replica_catalog
            if catalog.glue is None or catalog.assume_role is not None:
                continue  # a Hive metastore (the VPC), or another account's (its role)
            region = catalog.glue.region or self.settings.region
            account = catalog.glue.catalog_id or self.settings.account
            entry = catalogs.setdefault((region, account), _Tables(region, account))
            for replication in config.table_replications:
                entry.tables.add(
                    (
                        replication.replica_database.lower(),
                        replication.replica_table_name.lower() or "*",
                    )
                )
        return [catalogs[key] for key in sorted(catalogs)]

    @staticmethod
    def _glue_arns(catalog: _Catalog) -> list[str]:
        prefix = f"arn:aws:glue:{catalog.region}:{catalog.account}"
        arns = [f"{prefix}:catalog"]
        for database in sorted(catalog.databases):
            arns += [f"{prefix}:database/{database}", f"{prefix}:table/{database}/*"]
        return arns

    def _list(self, grantee: iam.IGrantable, locations: Iterable[str]) -> None:
        by_bucket: dict[str, set[str]] = {}
        for location in locations:
            bucket, prefix = _split(location)
            by_bucket.setdefault(bucket, set()).update({prefix, f"{prefix}*"})
        for bucket, prefixes in sorted(by_bucket.items()):
            grantee.grant_principal.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=["s3:ListBucket"],
                    resources=[f"arn:aws:s3:::{bucket}"],
                    conditions={"StringLike": {"s3:prefix": sorted(prefixes)}},
                )
            )


def _through_s3(grantee: iam.IGrantable, actions: Iterable[str], keys: list[str]) -> None:
    """Use the data's KMS keys, only as S3 does on the grantee's behalf (SSE-KMS), each in
    its own region (``kms:ViaService``)."""
    by_region: dict[str, list[str]] = {}
    for key in keys:
        by_region.setdefault(key.split(":")[3], []).append(key)
    for region, region_keys in sorted(by_region.items()):
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=list(actions),
                resources=sorted(set(region_keys)),
                conditions={"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
            )
        )


def trusted_service(
    service: str, account: str, source_arns: Iterable[str] = ()
) -> iam.ServicePrincipal:
    """``service``, acting for a resource of ``account`` (and, where the service names the
    resource it acts for, one of ``source_arns``, IAM's wildcards allowed): a role's trust
    that no other account's rule, schedule or job can use (the confused deputy).
    ``aws:SourceAccount`` and ``aws:SourceArn`` are the keys the service sets when it
    assumes the role."""
    conditions: dict[str, dict[str, object]] = {"StringEquals": {"aws:SourceAccount": account}}
    arns = list(source_arns)
    if arns:
        conditions["ArnLike"] = {"aws:SourceArn": arns if len(arns) > 1 else arns[0]}
    return iam.ServicePrincipal(service, conditions=conditions)


def allow(grantee: iam.IGrantable, actions: Iterable[str], resources: list[str]) -> None:
    """One statement of exactly these actions on exactly these resources (no wildcards)."""
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=list(actions), resources=resources)
    )


def allow_prefix(
    grantee: iam.IGrantable, bucket_arn: str, prefix: str, actions: Iterable[str]
) -> None:
    """Object ``actions`` below one prefix of a bucket, and the listing of that prefix."""
    allow(grantee, actions, [f"{bucket_arn}/{prefix}*"])
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[bucket_arn],
            conditions={"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}},
        )
    )


def _split(location: str) -> tuple[str, str]:
    parsed = urlparse(location)
    prefix = parsed.path.lstrip("/")
    return parsed.netloc, prefix if not prefix or prefix.endswith("/") else prefix + "/"


def _objects(locations: Iterable[str]) -> list[str]:
    return sorted({f"arn:aws:s3:::{b}/{p}*" for b, p in map(_split, locations)})
