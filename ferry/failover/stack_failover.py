"""What the deployed Failover function does for one config (``lambdas/failover.py``).

``ferry failover --environment`` invokes it twice around the failover switch
(``ferry.failover.stack_switch``): ``check`` first (each replica exists and was replicated
by Ferry: nothing has changed yet when one is not), then, once the switch has stopped the
config's triggers and runs, ``promote``: the baseline of each replica in the stack's work
bucket (``failover/``), then its promotion (``ferry.failover.config_failover``). The function's role
reads the replica catalog, alters the configured replica tables and lists the replica
locations; it cannot stop or start anything, which the switch does.

Both actions are idempotent: a table already promoted keeps its failover id and baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from ferry.catalog import Catalog
from ferry.config import ReplicationConfig, TableReplication
from ferry.core.errors import FailoverError
from ferry.failover import SwitchReport
from ferry.failover.config_failover import FailoverReport, check_replicas, fail_over
from ferry.statemachine.failover_payloads import FailoverInput


class AlreadySuspended:
    """The switch as the function sees it: the command has suspended the config already
    (the function's role may not touch triggers or runs)."""

    def suspend(
        self,
        config: ReplicationConfig,
        tables: Sequence[str],
        *,
        cancel_runs: bool,
        wait: timedelta,
    ) -> SwitchReport:
        return SwitchReport()

    def resume(self, config: ReplicationConfig, tables: Sequence[str]) -> SwitchReport:
        return SwitchReport()


def replications_of(config: ReplicationConfig, tables: Sequence[str]) -> list[TableReplication]:
    """The named tables' replications (every one of the config's when none is named); a
    ``table-name-pattern`` is expanded from the source catalog, lost in a failover: its
    tables are named."""
    if tables:
        found = []
        for name in tables:
            try:
                found.append(config.replication_of(name))
            except Exception as error:  # noqa: BLE001 - the config's own one line
                raise FailoverError(str(error)) from None
        return found
    for replication in config.table_replications:
        if replication.source_table.is_pattern:
            raise FailoverError(
                f"table-replications: {replication.source_table.database_name}."
                f"{replication.source_table.table_name_pattern} is a table-name-pattern, "
                "which only the source catalog can expand: name its tables"
            )
    return list(config.table_replications)


def run(
    request: FailoverInput,
    config: ReplicationConfig,
    replica: Catalog,
    work_uri: str,
    key_of: Callable[[TableReplication], str],
    now: Callable[[], datetime],
) -> FailoverReport:
    """``check`` or ``promote`` the config's replicas (see the module)."""
    replications = replications_of(config, request.tables)
    if request.action == "check":
        check_replicas(replica, replications)
        return FailoverReport(request.failover_id, [])
    return fail_over(
        config, replications, replica, AlreadySuspended(), work_uri, key_of,
        request.failover_id, now,
    )  # fmt: skip
