"""Build the catalog a config section describes."""

from __future__ import annotations

from ferry.catalog import Catalog
from ferry.catalog.glue import GlueCatalog
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.config import CatalogConfig
from ferry.storage.aws import AwsClients


def open_catalog(config: CatalogConfig, aws: AwsClients) -> Catalog:
    """The catalog ``config`` describes; a Glue catalog reached through ``assume-role`` is
    read and written with the role's clients (``AwsClients.for_side``), whoever opens it."""
    if config.glue is not None:
        return GlueCatalog(
            config.name,
            aws.for_side(config).client("glue", config.glue.region),
            catalog_id=config.glue.catalog_id,
            page_size=config.batch_size,
        )
    return HiveMetastoreCatalog(config.name, config.metastore_uris, page_size=config.batch_size)
