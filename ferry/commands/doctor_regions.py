"""``ferry doctor``: what the functions in a VPC reach in other regions than the deployment's.

VPC endpoints, interface and gateway alike, serve their own region only: a function (or the
Spark application) in a VPC reaches another region's Glue, S3 or SNS only through a NAT, the
default route of its subnets. A config whose catalog, bucket or topic is in another region
then needs a NAT route from every subnet, whatever endpoints the VPC has.

The regions come from the config (a Glue catalog's ``region``, a trigger's ``region``, an
SNS topic's ARN) and, for a bucket, from S3 (``HeadBucket`` names a bucket's region, also in
a refusal): the replica table locations, the trigger buckets and the settings'
``read-locations`` of each config.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ferry.commands.doctor_findings import FAILED, OK, Finding


@dataclass(frozen=True)
class Elsewhere:
    """Something a config reaches in another region: ``what`` names it."""

    config: str
    what: str
    region: str


def reached_elsewhere(settings: Any, bucket_region: Callable[[str], str | None]) -> list[Elsewhere]:
    """Each catalog, bucket and topic of the settings' configs that is not in their region
    (a bucket whose region cannot be found is left out: its own check says why)."""
    home = settings.region
    read_locations: dict[str, list[str]] = {}
    for replication in getattr(settings, "replications", []):
        read_locations.setdefault(replication.config.name, []).extend(replication.read_locations)
    found: dict[tuple[str, str], Elsewhere] = {}
    for path, config in settings.configs.items():
        for what, region in _regions_of(config, read_locations.get(path.name, []), bucket_region):
            if region and region != home:
                found.setdefault((path.name, what), Elsewhere(path.name, what, region))
    return list(found.values())


def _regions_of(
    config: Any, read_locations: list[str], bucket_region: Callable[[str], str | None]
) -> Iterator[tuple[str, str | None]]:
    for key, catalog in (
        ("source-catalog", config.source_catalog),
        ("replica-catalog", config.replica_catalog),
    ):
        if catalog.glue is not None:
            yield f"{key} {catalog.name} (Glue)", catalog.glue.region
    buckets: dict[str, str] = {}
    declared: dict[str, str] = {}  # a trigger's region, as its config declares it
    for table in config.table_replications:
        location = table.replica_table.table_location or ""
        if location.split("://", 1)[0] in ("s3", "s3a", "s3n"):
            buckets.setdefault(_bucket(location), "a replica table location")
    for trigger in config.triggers.s3:
        buckets.setdefault(trigger.bucket, "a trigger bucket")
        if trigger.region:
            declared[trigger.bucket] = trigger.region
    for location in read_locations:
        bucket = _bucket(location)
        if "*" not in bucket and "?" not in bucket:
            buckets.setdefault(bucket, "a read location")
    for bucket, role in sorted(buckets.items()):
        yield f"bucket {bucket} ({role})", declared.get(bucket) or bucket_region(bucket)
    listener = config.sns_event_listener
    if listener is not None:
        for topic in {listener.topic, listener.start_topic, listener.success_topic,
                      listener.fail_topic} - {None}:  # fmt: skip
            yield f"SNS topic {topic}", topic.split(":")[3]


def _bucket(location: str) -> str:
    return location.split("://", 1)[1].split("/", 1)[0]


def check_other_regions(
    elsewhere: list[Elsewhere], without_nat: list[str], region: str
) -> list[Finding]:
    """One line for each thing reached in another region while a subnet has no NAT route;
    one line in all when the NAT reaches them (none when everything is in ``region``)."""
    if not elsewhere:
        return []
    if not without_nat:
        regions = sorted({e.region for e in elsewhere})
        return [Finding("other regions", OK, f"{', '.join(regions)} reached through the NAT route")]
    subnets = ", ".join(without_nat)
    return [
        Finding(
            f"{item.config} from the VPC",
            FAILED,
            f"{item.what} is in {item.region}; VPC endpoints serve {region} only and "
            f"{subnets} {'has' if len(without_nat) == 1 else 'have'} no NAT route",
            "add a NAT gateway route (0.0.0.0/0) to the subnets' route tables",
        )
        for item in elsewhere
    ]


def head_bucket_region(s3: Any, bucket: str) -> str | None:
    """``bucket``'s region as S3 names it (``x-amz-bucket-region``), also when it refuses
    the request; None when there is no such bucket or no answer."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        reply = s3.head_bucket(Bucket=bucket)
    except ClientError as error:
        reply = error.response
    except BotoCoreError:
        return None
    headers = reply.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    return reply.get("BucketRegion") or headers.get("x-amz-bucket-region") or None
