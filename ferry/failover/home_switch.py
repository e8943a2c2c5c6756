"""The switch of ``ferry replicate``'s own state: its locks and copy slots.

``ferry replicate`` has no triggers of its own (a cron or a person starts it), so suspending
its replications means: no run may hold a table's lock or a copy slot any more. A lock whose
holder no longer runs (its process is gone, or its lease expired) is released with the copy
slot of its event; a lock held by a live run is refused (``FailoverError``) unless
``cancel_runs``, which releases it anyway: that run then fails at Commit, which re-checks
the replica and finds it promoted. With ``wait``, live holders are first waited for (their
lock asked again each second) until they release it or the wait is over. Resuming has
nothing to start again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ferry.config import ReplicationConfig, TableReplication
from ferry.copying.budget import Slots
from ferry.core.errors import FailoverError
from ferry.failover import SwitchReport
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import Lease


@dataclass
class HomeSwitch:
    """``ReplicationSwitch`` for ``--home`` (SQLite) or ``--state-table`` (DynamoDB)."""

    state: ReplicaState
    slots: Slots | None
    #: The replica key (``ferry.lifecycle.replica_state.replica_of``) of a config's replication.
    key_of: Callable[[ReplicationConfig, TableReplication], str]
    now: Callable[[], datetime]
    gone: Callable[[Lease], bool]
    sleep: Callable[[float], None] = time.sleep

    def suspend(
        self,
        config: ReplicationConfig,
        tables: Sequence[str],
        *,
        cancel_runs: bool,
        wait: timedelta,
    ) -> SwitchReport:
        """Release the tables' locks and copy slots (see the module); all or nothing: a live
        holder without ``cancel_runs`` is refused before any is released."""
        keys = {name: self.key_of(config, config.replication_of(name)) for name in tables}
        leases, live = self._leases(keys)
        awaited: list[str] = []
        deadline = time.monotonic() + wait.total_seconds()
        while live and not cancel_runs and time.monotonic() < deadline:
            self.sleep(min(1.0, max(deadline - time.monotonic(), 0.0)))
            still = {lease.holder for _, lease in self._leases(keys)[1]}
            awaited += [lease.holder for _, lease in live if lease.holder not in still]
            leases, live = self._leases(keys)
        if live and not cancel_runs:
            name, lease = live[0]
            raise FailoverError(
                f"{name} is being replicated by event {lease.holder} (lock held until "
                f"{lease.expires_at:%Y-%m-%dT%H:%M:%SZ}); wait for it, or give --cancel-runs"
            )
        released = 0
        for _, lease in leases:
            released += bool(self.state.store.release(lease.replica, lease.holder))
            if self.slots is not None:
                released += bool(self.slots.release(lease.holder))
        return SwitchReport(
            stopped_runs=tuple(lease.holder for _, lease in live),
            awaited_runs=tuple(awaited),
            released_claims=released,
            notes=("ferry replicate has no triggers: stop the cron or schedule that starts it",),
        )

    def _leases(self, keys: dict[str, str]) -> tuple[list, list]:
        """The tables' held locks, and those of them whose holder still runs."""
        leases = []
        for name, key in keys.items():
            lease = self.state.store.lease(key)
            if lease is not None and lease.holder is not None:
                leases.append((name, lease))
        now = self.now()
        live = [
            (n, lease) for n, lease in leases if not lease.expired(now) and not self.gone(lease)
        ]
        return leases, live

    def resume(self, config: ReplicationConfig, tables: Sequence[str]) -> SwitchReport:
        return SwitchReport(
            notes=("ferry replicate has no triggers: start the cron or schedule that runs it",)
        )
