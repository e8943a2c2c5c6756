"""Notifications to consumers over SNS, in Circus Train's message format.

Existing Circus Train consumers keep working: the same ``type`` values (START, SUCCESS,
FAILURE) and the same fields; the partition list is dropped (``messageTruncated``) when the
message would exceed SNS's size limit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ferry.model import Column

if TYPE_CHECKING:
    from ferry.aws import AwsClients
    from ferry.config import SnsEventListener

PROTOCOL_VERSION = "1.2"
SNS_MAX_BYTES = 256 * 1024
_HEADROOM = 1024  # subject and attributes also count against the limit


@dataclass(frozen=True)
class ReplicationEvent:
    """What one table replication tells its consumers."""

    type: str  # START | SUCCESS | FAILURE
    event_id: str
    source_table: str
    replica_table: str
    replica_catalog_uris: str
    start_time: datetime
    end_time: datetime | None = None
    replica_table_location: str | None = None
    partition_keys: Sequence[Column] = ()
    modified_partitions: Sequence[Sequence[str]] = field(default_factory=list)
    bytes_replicated: int = 0
    error_message: str | None = None


def message_body(event: ReplicationEvent, max_bytes: int = SNS_MAX_BYTES - _HEADROOM) -> str:
    message: dict[str, Any] = {
        "protocolVersion": PROTOCOL_VERSION,
        "type": event.type,
        "startTime": _iso(event.start_time),
        "eventId": event.event_id,
        "sourceTable": event.source_table,
        "replicaTable": event.replica_table,
        "replicaMetastoreUris": event.replica_catalog_uris,
    }
    if event.type != "START":
        message["endTime"] = _iso(event.end_time) if event.end_time else None
        message["replicaTableLocation"] = event.replica_table_location
        message["partitionKeys"] = {column.name: column.type for column in event.partition_keys}
        message["modifiedPartitions"] = [list(values) for values in event.modified_partitions]
        message["bytesReplicated"] = event.bytes_replicated
        message["messageTruncated"] = False
    if event.error_message is not None:
        message["errorMessage"] = event.error_message
    body = json.dumps(message)
    if len(body.encode()) > max_bytes:
        message["modifiedPartitions"] = []
        message["messageTruncated"] = True
        body = json.dumps(message)
    return body


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class SnsNotifier:
    """Publishes replication events to one topic (the SNS client is injected)."""

    def __init__(self, client: Any, topic_arn: str, subject: str | None = None):
        self._sns = client
        self.topic_arn = topic_arn
        self.subject = subject

    def publish(self, event: ReplicationEvent) -> None:
        arguments: dict[str, Any] = {
            "TopicArn": self.topic_arn,
            "Message": message_body(event),
            # Consumers filter on the type without parsing the body.
            "MessageAttributes": {"type": {"DataType": "String", "StringValue": event.type}},
        }
        if self.subject:
            arguments["Subject"] = self.subject[:100]
        self._sns.publish(**arguments)


class NoNotifier:
    """Used when the config has no ``sns-event-listener``."""

    def publish(self, event: ReplicationEvent) -> None:
        pass


def notifier_for(listener: SnsEventListener | None, aws: AwsClients) -> SnsNotifier | NoNotifier:
    """The notifier a config's ``sns-event-listener`` asks for (its topic's region by default)."""
    if listener is None:
        return NoNotifier()
    region = listener.region or aws.region_of_arn(listener.topic)
    return SnsNotifier(aws.client("sns", region), listener.topic, listener.subject)
