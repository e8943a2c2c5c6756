"""What every state shares, passed in: the work location, the AWS clients, the clock, the
state store, the copy budget and the configs' environment (``StateContext``).

A state module (``ferry/states/<state>.py``) takes one ``StateContext`` and its input model;
the Lambda handlers build one per cold start (``lambdas/runtime.py``), ``ferry replicate``
one per run (``ferry/commands/replicate.py``). Nothing here is reached for through a global.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ferry import statemachine
from ferry.catalog import Catalog
from ferry.catalog.factory import open_catalog
from ferry.config import CatalogConfig, ReplicationConfig, TableReplication, load_config_uri
from ferry.copying.side_credentials import reach_sides
from ferry.core.clock import Clock, utc_now
from ferry.core.event_id import new_event_id
from ferry.lifecycle import replica_state
from ferry.lifecycle.notify import START, ReplicationEvent, catalog_description, notifier_for
from ferry.lifecycle.notify import replication_event as _replication_event
from ferry.planning import selection
from ferry.replicas.ledger import Lease
from ferry.replicas.ledger.records import one_line
from ferry.storage.aws import AwsClients

if TYPE_CHECKING:
    from ferry.copying.budget import EnvironmentBudget, Holder
    from ferry.freshness import TableFreshness

    # Named only: the plan's model pulls in pyiceberg and sqlglot, which the states that never
    # plan nor read a plan (and their functions' cold starts) do without.
    from ferry.planning.plan_document import PlanDocument
    from ferry.planning.replication_plan import ReplicationPlan

logger = logging.getLogger(__name__)

CatalogOpener = Callable[[CatalogConfig, AwsClients], Catalog]


class StateContext:
    """The collaborators of the states (work location, AWS clients, clock, state store)."""

    def __init__(
        self,
        work_uri: str,
        aws: AwsClients | None = None,
        clock: Clock = utc_now,
        *,
        event_ids: Callable[[datetime], str] | None = None,
        catalogs: CatalogOpener = open_catalog,
        state: replica_state.ReplicaState | None = None,
        config_environment: Mapping[str, str] | None = None,
        budget: EnvironmentBudget | None = None,
        adopt: frozenset[str] = frozenset(),
    ):
        self.work_uri = work_uri.rstrip("/")
        #: What the configs' ``${NAME}`` placeholders resolve from (None: this process's
        #: environment); the functions add the values of their Secrets Manager secret.
        self.config_environment = config_environment
        #: Replica locks and the snapshot ledger (``ferry.lifecycle.replica_state``); None: neither.
        self.state = state
        self.aws = aws or AwsClients()
        self.clock = clock
        self.event_ids = event_ids or (lambda started: new_event_id(lambda: started))
        self.catalogs = catalogs
        #: The environment's copy slots (``ferry.copying.budget``); None: every claim granted
        #: at once.
        self.budget = budget
        #: Replica tables (``database.table``, lower case) taken as replicas though they are
        #: none yet: ``ferry failback``'s original source tables, and only those.
        self.adopt = frozenset(name.lower() for name in adopt)

    def run_state(self, function: str, payload: Any, *extra: Any) -> Any:
        """The state module of ``function`` (``ferry.statemachine.STATES``) run on ``payload``
        with this context: what the in-process driver (``ferry.commands.in_process``) runs at a
        Task, the module the function's handler runs."""
        return importlib.import_module(statemachine.STATES[function]).run(self, payload, *extra)

    # -- configs and catalogs -------------------------------------------------------------

    def load(self, config_uri: str) -> ReplicationConfig:
        """The config at ``config_uri``, its sides in other accounts reached with their roles."""
        return reach_sides(load_config_uri(config_uri, self.config_environment), self.aws)

    def open(self, catalog: CatalogConfig) -> Catalog:
        return self.catalogs(catalog, self.aws)

    def describe(self, catalog: CatalogConfig) -> str:
        return catalog_description(catalog, self._region_of(catalog))

    def replica_key(self, config: ReplicationConfig, replication: TableReplication) -> str:
        """The replica table's key in the locks and the ledger (``ferry.replicas.ledger``)."""
        return replica_state.replica_of(
            config.replica_catalog, replication, self._region_of(config.replica_catalog)
        )

    def _region_of(self, catalog: CatalogConfig) -> str | None:
        """The SDK's default region where a Glue catalog names none; a Hive metastore's
        description and key name no region, and asking would make an AWS session."""
        return self.aws.region if catalog.glue is not None and not catalog.glue.region else None

    def select_tables(
        self, config: ReplicationConfig, tables: Sequence[str] = (), source: str = "config"
    ) -> list[TableReplication]:
        """The run's table replications, patterns expanded (the source catalog read if needed)."""
        if not selection.needs_catalog(config, tables):
            return selection.expand(config, tables, source=source)
        with self.open(config.source_catalog) as catalog:
            return selection.expand(config, tables, catalog.list_table_names, source)

    # -- consumers ------------------------------------------------------------------------

    def publish(self, config: ReplicationConfig, event: ReplicationEvent) -> None:
        notifier_for(config, lambda region: self.aws.client("sns", region)).publish(event)

    def event(
        self,
        config: ReplicationConfig,
        replication: TableReplication,
        kind: str,
        event_id: str,
        started: datetime,
        plan: ReplicationPlan | None = None,
        **details: Any,
    ) -> ReplicationEvent:
        """What consumers are told (``ferry.lifecycle.notify.replication_event``), ended now."""
        return _replication_event(
            config, replication, kind, event_id, started,
            None if kind == START else self.clock(),
            self.describe(config.replica_catalog), plan, **details,
        )  # fmt: skip

    # -- locks, slots and outcomes (``ferry.replicas.ledger``, ``ferry.copying.budget``) -----------

    def lock_holder_gone(self, lease: Lease) -> bool:
        """A lock's holder that no longer runs: a process of this machine, or an execution
        of the pipeline that ended without releasing it."""
        if replica_state.holder_is_gone(lease):
            return True
        if lease.owner and lease.owner.startswith("arn:aws:states:"):
            region = lease.owner.split(":")[3]
            return replica_state.execution_has_ended(
                self.aws.client("stepfunctions", region), lease.owner
            )
        return False

    def slot_holder_gone(self, holder: Holder) -> bool:
        """A slot's holder that no longer runs, told as a lock's is (``lock_holder_gone``)."""
        return self.lock_holder_gone(
            Lease("copy-budget", holder.event_id, holder.acquired_at, holder.expires_at,
                  holder.owner)
        )  # fmt: skip

    def release_copy_slot(self, event_id: str) -> None:
        """Free the event's copy slot, or take it out of line (nothing when it has neither)."""
        if self.budget is not None:
            self.budget.slots.release(event_id)

    def record_success(self, config: ReplicationConfig, document: PlanDocument) -> None:
        """The replica holds the source as Plan read it: its outcome says so
        (``ferry.replicas.ledger.Outcome``: what ``ferry status`` reads)."""
        if self.state is None:
            return
        plan = document.plan
        self.state.store.record_success(
            self.replica_key(config, plan.replication),
            plan.replication.replica_qualified_name,
            plan.event_id,
            self.clock(),
            plan.source_version,
            document.source_read_at,
        )

    def record_failure(
        self,
        config: ReplicationConfig,
        replication: TableReplication,
        event_id: str,
        error: str,
    ) -> None:
        """A failed run, in the replica's outcome; a store that fails here is logged only:
        Abort must still release the lock and tell consumers."""
        if self.state is None:
            return
        try:
            self.state.store.record_failure(
                self.replica_key(config, replication),
                replication.replica_qualified_name,
                event_id,
                self.clock(),
                one_line(error),
            )
        except Exception as failure:  # noqa: BLE001 - the failure being aborted comes first
            logger.warning("could not record the failure of event %s: %s", event_id, failure)

    # -- freshness (the periodic check's and a failed table's, ferry.freshness.metrics) ----

    def measure_freshness(
        self, config_uri: str, tables: Sequence[str] = ()
    ) -> list[TableFreshness]:
        """Each table's freshness of the config at ``config_uri`` (``tables``: some of them),
        from both catalogs and the state store (``ferry.freshness``)."""
        from ferry.freshness import measure

        config = self.load(config_uri)
        store = self.state.store if self.state is not None else None
        with (
            self.open(config.source_catalog) as source,
            self.open(config.replica_catalog) as replica,
        ):
            return measure(
                config, source, replica, store, self.clock(), tables=tables, region=self.aws.region
            )
