"""Which credentials reach each side of a replication.

A side whose catalog section names ``assume-role`` is in another account: its Glue catalog
is opened with the role's clients (``AwsClients.for_side``) and its buckets are reached
with the same clients (``fs.reach_bucket_with``). Every other call keeps Ferry's own
credentials: the source side, the work location, the state, notifications.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse

from ferry.config import AssumeRole, CatalogConfig, ReplicationConfig
from ferry.storage import fs
from ferry.storage.aws import AwsClients

#: Beside a run's manifest: the buckets reached with a role, and the role, for the Spark job
#: (which reads the manifest, not the config).
SIDES_FILE = "sides.json"


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
            clients = aws.for_side(catalog)
            for bucket in sorted(buckets):
                fs.reach_bucket_with(bucket, clients)
    return config


def write_sides(config: ReplicationConfig, manifest_uri: str) -> None:
    """Write, beside the manifest, which buckets the copy reaches with which role (nothing
    when no side is in another account)."""
    sides = {}
    for catalog in (config.source_catalog, config.replica_catalog):
        for bucket in sorted(buckets_of(config, catalog)):
            assert catalog.assume_role is not None
            sides[bucket] = catalog.assume_role.model_dump(mode="json", by_alias=True)
    if sides:
        fs.write_bytes(_sides_uri(manifest_uri), json.dumps(sides, sort_keys=True).encode())


def read_sides(manifest_uri: str) -> dict[str, AssumeRole]:
    """The roles ``write_sides`` wrote beside the manifest, by bucket; none when it wrote none."""
    try:  # one request: most runs have no side in another account
        written: dict[str, Any] = json.loads(fs.read_bytes(_sides_uri(manifest_uri)))
    except FileNotFoundError:
        return {}
    return {bucket: AssumeRole.model_validate(role) for bucket, role in written.items()}


def reach_buckets(roles: dict[str, AssumeRole], aws: AwsClients) -> None:
    """Reach each bucket with its role's clients (the Spark job's driver and workers)."""
    for bucket, role in sorted(roles.items()):
        fs.reach_bucket_with(bucket, aws.assuming(role))


def side_of_batch(batch: dict[str, Any], manifest_uri: str, aws: AwsClients) -> AwsClients:
    """The clients an S3 server-side copy of ``batch`` signs with: its target bucket's role
    when ``write_sides`` named one (S3 copies into the bucket the request goes to, so the
    role reads the source too: the source bucket's policy must allow it), else ``aws``."""
    from ferry.copying.manifest import batch_tasks

    roles = read_sides(manifest_uri)
    if not roles:
        return aws
    reach_buckets(roles, aws)
    for task in batch_tasks(dict(batch))[:1]:
        role = roles.get(urlparse(task.target).netloc)
        if role is not None:
            return aws.assuming(role)
    return aws


def _sides_uri(manifest_uri: str) -> str:
    return fs.join(manifest_uri.rsplit("/", 1)[0], SIDES_FILE)
