"""Build the grants port of a replication's side: its catalog's own kind of permissions."""

from __future__ import annotations

from ferry.catalog import Catalog
from ferry.catalog.grants import Grants
from ferry.catalog.grants_hive import HiveGrants
from ferry.catalog.grants_lakeformation import LakeFormationGrants, principal_of
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.config import CatalogConfig
from ferry.storage.aws import AwsClients


def open_grants(config: CatalogConfig, catalog: Catalog, aws: AwsClients) -> Grants:
    """The grants of ``catalog`` (opened from ``config``): a Hive metastore's privileges, or
    Lake Formation's grants on a Glue catalog, with the side's clients (``assume-role``'s
    when it names one) and as the principal they sign as.

    Mapped principals are looked up in IAM only in the caller's own account: a Glue catalog
    of another account is that account's to check.
    """
    if isinstance(catalog, HiveMetastoreCatalog):
        return HiveGrants(catalog)
    assert config.glue is not None, "a catalog is a Hive metastore's or Glue's (CatalogConfig)"
    side, region = aws.for_side(config), config.glue.region
    identity = side.client("sts", region).get_caller_identity()
    catalog_id = config.glue.catalog_id or identity["Account"]
    own_account = catalog_id == identity["Account"]
    return LakeFormationGrants(
        side.client("lakeformation", region),
        catalog_id,
        principal_of(identity["Arn"]),
        iam=side.client("iam", region) if own_account else None,
    )
