"""Checks of a Hive source's change feed. ``ferry doctor``'s, run by the deployed
CatalogPoller function without polling: does the metastore write its notification log, and
has the log not gone backwards since the poller last read it (``ferry.feeds``)? And
``ferry local trigger``'s, before it installs a poller: does anyone answer at the metastore's
URI, and does it write a notification log (``notification_log_problem``)?"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.catalog.hive_events import HiveNotificationLog
from ferry.core.errors import CatalogUnreachableError, ConfigError, NotAMetastoreError
from ferry.feeds.intake import ChangeFeeds
from ferry.statemachine.check_payloads import CatalogCheckInput, NotificationLogCheckResult

NOTIFICATION_LOG = "notification-log"
#: What a metastore needs to write its notification log (Hive's own listener).
LISTENER = "org.apache.hive.hcatalog.listener.DbNotificationListener"
#: The settings that register a metastore's listeners (``get_config_value`` reads them).
LISTENER_KEYS = ("hive.metastore.transactional.event.listeners", "hive.metastore.event.listeners")
LISTENER_SETTING = (
    f"hive.metastore.transactional.event.listeners (or hive.metastore.event.listeners) = "
    f"{LISTENER}, with the hive-hcatalog-server-extensions jar on its classpath"
)


def check_notification_log(
    feeds: ChangeFeeds, payload: CatalogCheckInput | Mapping[str, Any]
) -> NotificationLogCheckResult:
    """The source metastore's current event id against the poller's stored position.

    Passes when the log has events (a metastore without the listener answers 0) and is
    not below the position: a log below it was started anew (a new metastore database),
    and the poller would find a gap and compare every selected table in full.
    """
    payload = CatalogCheckInput.model_validate(payload)
    config = feeds.load_config(payload.config_uri)
    source = config.source_catalog
    if source.hive_metastore_uris is None:
        raise ConfigError(
            f"{payload.config_uri}: source-catalog {source.name} is not a Hive metastore: it "
            "has no notification log (the Glue Data Catalog sends its changes to EventBridge)"
        )
    with feeds.open_catalog(source) as catalog:
        if not isinstance(catalog, HiveMetastoreCatalog):
            raise ConfigError(f"{payload.config_uri}: {source.name} is not a Hive metastore")
        metastore = f"{source.name} ({catalog.description})"
        current = HiveNotificationLog(catalog).current_event_id()
    position = feeds.state.position(payload.config_uri)
    if current <= 0:
        detail = f"{metastore} writes no notification log: set {LISTENER_SETTING}"
        ok = False
    elif position is not None and current < position:
        detail = (
            f"{metastore}'s notification log is at event {current}, below event {position} "
            "the poller read: the log was started anew (its next poll compares every "
            f"selected table in full); check that the metastore keeps {LISTENER}"
        )
        ok = False
    else:
        read = (
            "not polled yet: its first poll replays the log"
            if position is None
            else f"the poller read up to {position}"
        )
        detail = f"{metastore} writes its notification log (event {current}; {read})"
        ok = True
    return NotificationLogCheckResult(
        metastore=metastore, current=current, position=position, ok=ok, detail=detail
    )


def notification_log_problem(catalog: HiveMetastoreCatalog) -> str | None:
    """Why the metastore behind ``catalog`` cannot feed a poller, in one line; None when it
    writes its notification log.

    It does when one of its listener settings names a notification listener (Hive's, or a
    stand-in such as the local runtime's), or when its log has events. A metastore that
    answers neither call is reported as nobody answering.
    """
    where = catalog.description
    try:
        listeners = [_setting(catalog, key) for key in LISTENER_KEYS]
        current = HiveNotificationLog(catalog).current_event_id()
    except (CatalogUnreachableError, NotAMetastoreError):
        return f"nobody answers at {where} (no Hive metastore there)"
    if current > 0 or any("Notification" in value for value in listeners):
        return None
    return f"the metastore at {where} writes no notification log: set {LISTENER_SETTING}"


def _setting(catalog: HiveMetastoreCatalog, key: str) -> str:
    """A metastore's setting; "" when it does not say (some refuse to tell some keys)."""
    try:
        return str(catalog.call(lambda client: client.get_config_value(key, "")) or "")
    except (CatalogUnreachableError, NotAMetastoreError):
        raise
    except Exception:  # ConfigValSecurityException, or any other reply of the metastore's
        return ""
