"""``ferry failover``: promote a config's replicas, so that writers may write to them.

In order, each step safe to repeat:

1. every check, before anything changes: each table's replica exists and was replicated by
   Ferry (``ferry.replication.event``), and the replica catalog answers. The source catalog
   is never read: it is the one that was lost;
2. the switch stops the config's triggers and runs and releases the tables' claims
   (``ReplicationSwitch.suspend``);
3. per table, the baseline of what the replica holds (``ferry.failover.baseline``), kept
   before the table is marked;
4. per table, ``ferry.promoted`` = ``<failover id>@<time>`` (one alter of the table).

A table already promoted is left as it is, with its failover id and baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ferry.catalog import Catalog
from ferry.config import ReplicationConfig, TableReplication
from ferry.core import faults
from ferry.core.errors import FailoverError
from ferry.core.model import Table
from ferry.failover import PROMOTED, ReplicationSwitch, SwitchReport
from ferry.failover import baseline as baselines
from ferry.failover.promotion import failover_id_of, promote, promotion_value
from ferry.replicas.replica import REPLICATION_EVENT, SOURCE_READ_AT, SOURCE_VERSION
from ferry.storage import fs


@dataclass(frozen=True)
class TableFailover:
    """What ``ferry failover`` did to one table, and what its replica holds."""

    source_table: str
    replica_table: str
    failover_id: str
    promoted: str
    already_promoted: bool
    source_version: str | None
    source_read_at: str | None
    #: now − source read-at: the RPO the failover achieved, in seconds.
    rpo_seconds: float | None
    partitions: int
    baseline_uri: str

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class FailoverReport:
    failover_id: str
    tables: list[TableFailover]
    switch: SwitchReport = field(default_factory=SwitchReport)


def check_replicas(replica: Catalog, replications: Sequence[TableReplication]) -> dict[str, Table]:
    """Each replication's replica table, by source name; ``FailoverError`` for the first
    that does not exist or that Ferry never replicated."""
    found = {}
    for replication in replications:
        name = replication.replica_qualified_name
        source = replication.source_table.qualified_name
        table = replica.get_table(replication.replica_database, replication.replica_table_name)
        if table is None:
            raise FailoverError(
                f"{source}: its replica {name} does not exist; nothing to fail over to"
            )
        if REPLICATION_EVENT not in table.parameters:
            raise FailoverError(
                f"{source}: {name} was never replicated by Ferry (no {REPLICATION_EVENT}); "
                "not promoting it"
            )
        found[source] = table
    return found


def fail_over(
    config: ReplicationConfig,
    replications: Sequence[TableReplication],
    replica: Catalog,
    switch: ReplicationSwitch,
    work_uri: str,
    key_of: Callable[[TableReplication], str],
    failover_id: str,
    now: Callable[[], datetime],
    *,
    cancel_runs: bool = False,
    wait: timedelta = timedelta(0),
    threads: int = 8,
) -> FailoverReport:
    """Promote the replicas of ``replications`` (see the module's steps)."""
    tables = check_replicas(replica, replications)
    names = [r.source_table.qualified_name for r in replications]
    report = switch.suspend(config, names, cancel_runs=cancel_runs, wait=wait)
    faults.point("failover.suspended")
    results = []
    for replication in replications:
        source = replication.source_table.qualified_name
        table = tables[source]
        uri = baselines.baseline_uri(work_uri, key_of(replication))
        existing = failover_id_of(table)
        if existing is None:
            kept = baselines.capture(replica, table, source, failover_id, threads)
            baselines.save(uri, kept)
            faults.point("failover.baseline")
            table = promote(replica, table, promotion_value(failover_id, now()))
        else:
            kept = baselines.load(uri) or baselines.capture(
                replica, table, source, existing, threads
            )
            if not fs.exists(uri):
                baselines.save(uri, kept)
        results.append(_outcome(replication, table, kept, existing is not None, uri, now()))
    return FailoverReport(failover_id, results, report)


def _outcome(
    replication: TableReplication,
    table: Table,
    kept: baselines.Baseline,
    already: bool,
    uri: str,
    now: datetime,
) -> TableFailover:
    read_at = table.parameters.get(SOURCE_READ_AT)
    rpo = None
    if read_at:
        try:
            moment = datetime.fromisoformat(read_at.replace("Z", "+00:00"))
            moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
            rpo = max((now - moment).total_seconds(), 0.0)
        except ValueError:
            rpo = None
    return TableFailover(
        source_table=replication.source_table.qualified_name,
        replica_table=replication.replica_qualified_name,
        failover_id=failover_id_of(table) or kept.failover_id,
        promoted=table.parameters.get(PROMOTED, ""),
        already_promoted=already,
        source_version=table.parameters.get(SOURCE_VERSION),
        source_read_at=read_at,
        rpo_seconds=rpo,
        partitions=len(kept.partitions) if kept.partitioned else 0,
        baseline_uri=uri,
    )
