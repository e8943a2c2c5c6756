"""How fresh each replica is: how long the source has held a change the replica lacks.

``measure`` answers one ``TableFreshness`` per table of a config (a pattern's tables
expanded as a run expands them), from what each catalog already says cheaply and what the
state store keeps — never from data files:

- what the replica holds: the source version and read time Commit recorded on the replica
  table (``ferry.source.version``, ``ferry.source.read-at``), or the state store's last
  success when it is later (a run with nothing to do writes no catalog);
- what the source has since: a Hive metastore's or Glue's table change time
  (``transient_lastDdlTime``, ``UpdateTime``), the partitions the replica lacks and when
  each was created (only those are fetched: the names of both sides are compared first),
  an Iceberg table's snapshots committed after the one the replica holds.

*Behind* is now minus the time of the oldest change the replica lacks (zero when in sync);
a replica is over its RPO when that exceeds the table replication's ``rpo``. ``ferry
status`` prints it; the periodic freshness check publishes it as a metric.
"""

from ferry.freshness.measure import FreshnessState, TableFreshness, measure

__all__ = ["FreshnessState", "TableFreshness", "measure"]
