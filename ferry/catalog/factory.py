"""Build the catalog a config section describes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ferry.catalog import Catalog

if TYPE_CHECKING:
    from ferry.config import CatalogConfig
    from ferry.storage.aws import AwsClients


def open_catalog(config: CatalogConfig, aws: AwsClients) -> Catalog:
    """The catalog ``config`` describes; a Glue catalog reached through ``assume-role`` is
    read and written with the role's clients (``AwsClients.for_side``), whoever opens it."""
    # Each adapter imported for a catalog of its kind: a run between Hive metastores imports
    # nothing of Glue's, nor a run between Glue catalogs the Thrift client.
    if config.glue is not None:
        from ferry.catalog.glue import GlueCatalog

        return GlueCatalog(
            config.name,
            aws.for_side(config).client("glue", config.glue.region),
            catalog_id=config.glue.catalog_id,
            page_size=config.batch_size,
        )
    from ferry.catalog.hive import HiveMetastoreCatalog

    return HiveMetastoreCatalog(config.name, config.metastore_uris, page_size=config.batch_size)
