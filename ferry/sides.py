"""Which credentials reach each side of a replication.

A side whose catalog section names ``assume-role`` is in another account: its Glue catalog
is opened with the role's clients (``AwsClients.for_side``) and its buckets are reached
with the role's session (``fs.reach_bucket_with``). Every other call keeps Ferry's own
credentials: the source side, the work location, the state, notifications.
"""

from __future__ import annotations

from urllib.parse import urlparse

from ferry import fs
from ferry.aws import AwsClients
from ferry.config import CatalogConfig, ReplicationConfig


def buckets_of(config: ReplicationConfig, catalog: CatalogConfig) -> set[str]:
    """The buckets a side's role reaches: those its ``assume-role`` lists, and, on the replica
    side, those of the replica table locations the config writes."""
    if catalog.assume_role is None:
        return set()
    buckets = set(catalog.assume_role.buckets)
    if catalog is config.replica_catalog:
        for replication in config.table_replications:
            location = replication.replica_table.table_location
            if location and fs.scheme_of(location) in fs.S3_SCHEMES:
                buckets.add(urlparse(location).netloc)
    return buckets


def reach_sides(config: ReplicationConfig, aws: AwsClients) -> ReplicationConfig:
    """Reach the buckets of ``config``'s sides in other accounts with their roles; ``config``."""
    for catalog in (config.source_catalog, config.replica_catalog):
        buckets = buckets_of(config, catalog)
        if buckets:
            session = aws.for_side(catalog).session
            for bucket in sorted(buckets):
                fs.reach_bucket_with(bucket, session)
    return config
