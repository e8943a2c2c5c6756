"""Catalog change feeds: a change in the source catalog starts a replication of its table.

AWS Glue sends its Data Catalog's changes to EventBridge; a Hive metastore writes them to
its notification log, which a scheduled function polls. Both become ``CatalogChange``s
(``ferry.feeds.catalog_changes``), merged per table in a window (``ferry.feeds.windows``)
that one execution of the change window state machine replicates (``ferry.feeds.intake``).
``ferry doctor`` checks a Hive source's log (``ferry.feeds.feed_checks``). The triggers'
EventBridge patterns and inputs (``ferry.feeds.trigger_events``) start a replication on a
schedule or an S3 event, the same on AWS and locally.
"""

from ferry.feeds.catalog_changes import CatalogChange, glue_changes, hive_changes, in_scope
from ferry.feeds.intake import ChangeFeeds, WindowExecutions, execution_name
from ferry.feeds.windows import FeedState, Window

__all__ = [
    "CatalogChange",
    "ChangeFeeds",
    "FeedState",
    "Window",
    "WindowExecutions",
    "execution_name",
    "glue_changes",
    "hive_changes",
    "in_scope",
]
