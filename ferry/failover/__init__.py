"""Failover and failback: the replica becomes the primary, and what DR wrote comes home.

``ferry failover CONFIG`` stops a config's triggers and runs, releases its claims and marks
each replica **promoted**; ``ferry failback CONFIG`` replicates back only what changed in the
promoted replicas and restores the original direction once both sides are equal. This module
holds what the commands, the deployed switch and the per-format failbacks share:

- ``PROMOTED``: the parameter a promoted replica table carries (``<failover id>@<ISO time>``).
  Ferry refuses to overwrite a table that carries it: Plan and Commit raise
  ``PromotedReplicaError``, Resolve tables leaves the table out of the run and says why.
- ``Prefer``: the side an operator names as the winner when both changed since the failover.
- ``ReplicationSwitch``: what stops and restarts a config's replications where they run
  (the local state store for ``ferry replicate``'s home, the deployed stack otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

# On a promoted replica table: ``<failover id>@<ISO-8601 time>``. Set by ``ferry failover``,
# removed by ``ferry failback`` once both sides are equal. Defined with the other replica
# parameter keys (``ferry.replicas.replica``), which Plan and Commit check without importing this
# package, which imports them.
from ferry.replicas.replica import PROMOTED

if TYPE_CHECKING:
    from ferry.config import ReplicationConfig

__all__ = ["PROMOTED", "Prefer", "ReplicationSwitch", "SwitchReport"]


class Prefer(StrEnum):
    """Which side wins a table changed on both sides since the failover."""

    REPLICA = "replica"  # what DR wrote goes home, over the source's own changes
    SOURCE = "source"  # the source's changes stand; DR's conflicting changes are dropped


@dataclass(frozen=True)
class SwitchReport:
    """What a switch did: each a human-readable name (a rule, a schedule, an execution)."""

    triggers: tuple[str, ...] = ()  # rules and schedules disabled (suspend) or enabled (resume)
    stopped_runs: tuple[str, ...] = ()  # runs of the config stopped
    awaited_runs: tuple[str, ...] = ()  # runs of the config waited for until they ended
    released_claims: int = 0  # locks and copy slots of the tables released
    notes: tuple[str, ...] = field(default=())  # anything a person should know


class ReplicationSwitch(Protocol):
    """Stops and restarts a config's replications where they run. Both calls are
    idempotent: suspending what is suspended, or resuming what runs, changes nothing."""

    def suspend(
        self,
        config: ReplicationConfig,
        tables: Sequence[str],
        *,
        cancel_runs: bool,
        wait: timedelta,
    ) -> SwitchReport:
        """Stop the config's triggers and schedules (all of them only when ``tables`` is
        every table of the config; otherwise the tables are left out of each run by their
        promotion), stop (``cancel_runs``) or wait up to ``wait`` for its running runs, and
        release the claims of ``tables`` (source qualified names)."""
        ...

    def resume(self, config: ReplicationConfig, tables: Sequence[str]) -> SwitchReport:
        """Start the config's triggers and schedules again."""
        ...
