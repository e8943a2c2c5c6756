"""Notifications to consumers over SNS, exactly in Circus Train's protocol 1.2.

Existing Circus Train consumers keep working: the same ``type`` values (START, SUCCESS,
FAILURE), the same fields, present in the same cases; the partition list is dropped
(``messageTruncated``) when the message would exceed SNS's size limit.

There is one builder of what a replication tells consumers (``replication_event``, for
every type and both drivers), one builder of its message (``message_body``) and one rule
for a message that
cannot be published: ``SnsNotifier.publish`` raises ``NotificationError`` (transient, so
both drivers retry it), and the step that publishes fails after its retries. A FAILURE
message that cannot be published is logged by the abort step, which must still report the
original error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ferry.core.errors import NotificationError
from ferry.core.model import Column
from ferry.planning.diff import COPYING_MODES

if TYPE_CHECKING:
    from ferry.config import CatalogConfig, ReplicationConfig, SnsEventListener, TableReplication

    # Named only: the plan's model pulls in pyiceberg and sqlglot, which a function that
    # notifies without planning does without at its cold start.
    from ferry.planning.replication_plan import ReplicationPlan

PROTOCOL_VERSION = "1.2"
SNS_MAX_BYTES = 256 * 1024
_HEADROOM = 1024  # subject and attributes also count against the limit

START, SUCCESS, FAILURE = "START", "SUCCESS", "FAILURE"


@dataclass(frozen=True)
class ReplicationEvent:
    """What one table replication tells its consumers.

    ``modified_partitions`` is None for an unpartitioned table (the fields are then absent,
    as in Circus Train); ``bytes_replicated`` is None when no data is replicated (a view, a
    metadata-only mode) or the type is not SUCCESS.
    """

    type: str  # START | SUCCESS | FAILURE
    event_id: str
    source_catalog: str
    replica_catalog: str
    source_table: str
    replica_table: str
    replica_metastore_uris: str
    replica_table_location: str | None
    start_time: datetime
    end_time: datetime | None = None
    partition_keys: Sequence[Column] = ()
    modified_partitions: Sequence[Sequence[str]] | None = None
    bytes_replicated: int | None = None
    error_message: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    #: An Iceberg table's SUCCESS: the replica's metadata now and before, and the source
    #: snapshots it got; None for every other table.
    iceberg: IcebergChange | None = None
    #: SUCCESS of a config with a ``permissions`` section: how many grants, revokes, tags and
    #: untags the replica got, and how many source principals and tags no mapping covers.
    permissions: Mapping[str, int] | None = None
    #: A SUCCESS's column statistics and keys written, counted (``statistics_carried``);
    #: None when there were none.
    statistics: Mapping[str, int] | None = None


@dataclass(frozen=True)
class IcebergChange:
    """What an Iceberg replica's consumers need to find the new version: ``metadataLocation``
    (the replica's current metadata.json), ``previousMetadataLocation`` (None on the first
    replication) and ``addedSnapshotIds`` (empty when nothing changed)."""

    metadata_location: str
    previous_metadata_location: str | None
    added_snapshot_ids: Sequence[int]


def replication_event(
    config: ReplicationConfig,
    replication: TableReplication,
    kind: str,
    event_id: str,
    started: datetime,
    ended: datetime | None,
    replica_metastore_uris: str,
    plan: ReplicationPlan | None = None,
    *,
    copied: bool = True,
    error_message: str | None = None,
) -> ReplicationEvent:
    """What consumers are told of one table replication (``kind``: START, SUCCESS, FAILURE;
    ``ended``: None for START).

    Without a ``plan`` (a failure before Plan finished) the replica's location is the
    config's; ``copied`` False reports no partitions and no bytes (nothing changed, or the
    run failed).
    """
    data = plan is not None and plan.mode in COPYING_MODES
    partitioned = plan is not None and plan.source_table.is_partitioned
    return ReplicationEvent(
        type=kind,
        event_id=event_id,
        source_catalog=config.source_catalog.name,
        replica_catalog=config.replica_catalog.name,
        source_table=replication.source_table.qualified_name,
        replica_table=replication.replica_qualified_name,
        replica_metastore_uris=replica_metastore_uris,
        replica_table_location=(
            plan.replica_table.location if plan else replication.replica_table.table_location
        ),
        start_time=started,
        end_time=ended,
        partition_keys=plan.source_table.partition_keys if plan else (),
        modified_partitions=(
            ([list(p.values) for p in plan.replica_partitions] if copied else [])
            if partitioned and plan
            else None
        ),
        bytes_replicated=(plan.manifest.bytes if copied else 0) if data and plan else None,
        error_message=error_message,
        headers=config.sns_event_listener.headers if config.sns_event_listener else {},
        iceberg=_iceberg_change(plan, copied) if kind == SUCCESS else None,
        permissions=(
            plan.grants.counts(carried=copied)
            if kind == SUCCESS and plan is not None and plan.grants is not None
            else None
        ),
        statistics=statistics_carried(plan) if kind == SUCCESS and copied else None,
    )


def statistics_carried(plan: ReplicationPlan | None) -> dict[str, int] | None:
    """What a committed plan wrote of column statistics and keys: the table's columns, the
    partitions and their columns, the keys added and dropped; None for none."""
    from ferry.planning.statistics_records import statistics_counts

    counts = statistics_counts(plan.statistics if plan is not None else None)
    if counts is None:
        return None
    return {
        "tableColumns": counts["tableColumns"],
        "partitions": counts["partitions"],
        "partitionColumns": counts["partitionColumns"],
        "keysAdded": counts["keysToAdd"],
        "keysDropped": counts["keysToDrop"],
    }


def _iceberg_change(plan: ReplicationPlan | None, copied: bool) -> IcebergChange | None:
    run = plan.iceberg if plan is not None else None
    if run is None:
        return None
    if not copied or not run.changed:  # nothing changed: the replica's metadata stays
        return IcebergChange(run.previous_metadata_location or run.metadata_location, None, ())
    return IcebergChange(
        run.metadata_location, run.previous_metadata_location, tuple(run.new_snapshot_ids)
    )


def catalog_description(catalog: CatalogConfig, region: str | None) -> str:
    """``replicaMetastoreUris``: the metastore URIs, or ``glue:<region>`` (``region``: the
    one the Glue catalog runs in when its config names none)."""
    if catalog.glue is not None:
        return f"glue:{catalog.glue.region or region}"
    return catalog.hive_metastore_uris or ""


def message_body(event: ReplicationEvent, max_bytes: int = SNS_MAX_BYTES - _HEADROOM) -> str:
    """The JSON message, fields in Circus Train's order and present in its cases."""
    message: dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION, "type": event.type}
    if event.headers:
        message["headers"] = dict(event.headers)
    message["startTime"] = _iso(event.start_time)
    if event.type != START:
        message["endTime"] = _iso(event.end_time) if event.end_time else None
    message.update(
        {
            "eventId": event.event_id,
            "sourceCatalog": event.source_catalog,
            "replicaCatalog": event.replica_catalog,
            "sourceTable": event.source_table,
            "replicaTable": event.replica_table,
            "replicaTableLocation": event.replica_table_location,
            "replicaMetastoreUris": event.replica_metastore_uris,
        }
    )
    if event.type == SUCCESS and event.modified_partitions is not None:
        message["partitionKeys"] = {column.name: column.type for column in event.partition_keys}
        message["modifiedPartitions"] = [list(values) for values in event.modified_partitions]
    if event.type == SUCCESS and event.bytes_replicated is not None:
        message["bytesReplicated"] = event.bytes_replicated
    if event.type == SUCCESS and event.iceberg is not None:
        message["iceberg"] = {
            "metadataLocation": event.iceberg.metadata_location,
            "previousMetadataLocation": event.iceberg.previous_metadata_location,
            "addedSnapshotIds": list(event.iceberg.added_snapshot_ids),
        }
    if event.type == SUCCESS and event.permissions is not None:
        message["permissions"] = dict(event.permissions)
    if event.type == SUCCESS and event.statistics:
        message["statistics"] = dict(event.statistics)  # counts: a few bytes whatever the table
    if event.type == FAILURE:
        message["errorMessage"] = event.error_message or ""
    body = json.dumps(message)
    if len(body.encode()) > max_bytes and "modifiedPartitions" in message:
        message["modifiedPartitions"] = []
        message["messageTruncated"] = True
        body = json.dumps(message)
    if len(body.encode()) > max_bytes and "iceberg" in message:
        message["iceberg"]["addedSnapshotIds"] = []
        message["messageTruncated"] = True
        body = json.dumps(message)
    return body


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class SnsNotifier:
    """Publishes replication events to the listener's topics.

    ``client_for`` gives an SNS client for a region (the listener's ``region``, else the
    topic ARN's own), so one config may notify topics in several regions.
    """

    def __init__(self, listener: SnsEventListener, client_for: Callable[[str | None], Any]):
        self.listener = listener
        self._client_for = client_for

    def publish(self, event: ReplicationEvent) -> None:
        topic = self.listener.topic_for(event.type)
        arguments: dict[str, Any] = {
            "TopicArn": topic,
            "Message": message_body(event),
            # Consumers filter on the type without parsing the body.
            "MessageAttributes": {"type": {"DataType": "String", "StringValue": event.type}},
        }
        if self.listener.subject:
            arguments["Subject"] = self.listener.subject[:100]
        try:
            self._client_for(self.listener.region or region_of_arn(topic)).publish(**arguments)
        except (BotoCoreError, ClientError) as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise NotificationError(
                f"could not publish {event.type} of event {event.event_id} to {topic}: {reason}"
            ) from None


class NoNotifier:
    """Used when the config has no ``sns-event-listener``."""

    def publish(self, event: ReplicationEvent) -> None:
        pass


Notifier = SnsNotifier | NoNotifier


def notifier_for(
    config: ReplicationConfig, sns_client_for: Callable[[str | None], Any]
) -> Notifier:
    """The config's notifier: its ``sns-event-listener``'s topics, or none."""
    listener = config.sns_event_listener
    if listener is None:
        return NoNotifier()
    return SnsNotifier(listener, sns_client_for)


def region_of_arn(arn: str) -> str | None:
    parts = arn.split(":")
    return parts[3] if len(parts) > 3 and parts[3] else None
