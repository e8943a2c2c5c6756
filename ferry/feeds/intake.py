"""From a catalog's changes to one replication per table: the intake, the window's claim
and close, and the Hive poller.

- **Intake** (``ChangeFeeds.hand_over``): the changes of tables the config selects are
  noted in their table's window (``ferry.feeds.windows``); the first change of a burst opens
  the window and starts its execution of the change window state machine
  (``ferry/statemachine/catalog_changes.asl.json``), named after the window, so that a
  repeated start is the same execution. AWS Glue's events arrive one by one
  (``glue_event``); the poller hands over what it read of the notification log.
- **Claim** (``claim``), when the window's wait is over: the changes noted so far, and
  whether they need a run. The source catalog decides: a table that exists is replicated; a
  table that is gone is replicated (its replica dropped) only by a config that propagates
  deletes, and when there is a replica to drop. A table created and dropped within the
  window needs nothing.
- **Close** (``close``), after the run: the window closes unless changes came during the
  run; then it waits once more and runs one follow-up, never a queue of them.
- **Poll** (``poll``): reads the notification log after the last position handed over,
  hands the events over, then advances the position, for up to the time it is given. A
  crash between the two hands the same events over again: harmless, as a window counts
  changes and the run compares the catalogs. A poller that finds no position (a new config,
  an edited one, a state table that lost its items) replays the log from the oldest event
  it keeps: a replayed change only opens a window, whose claim asks the source catalog, and
  whose run compares the catalogs. A log cleaned past the position is a gap: every table
  the config selects is handed over (a full comparison), with a warning.
- **Resume** (``resume``, at each poll and each intake): a window open past its wait whose
  execution is not running (stopped, failed past its retries, lost) is given another, so
  that no window waits for a change that may never come.
"""

from __future__ import annotations

import hashlib
import json
import logging
import string
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any

from ferry.catalog import Catalog
from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.catalog.hive_events import MAX_EVENTS, HiveNotificationLog
from ferry.config import CatalogConfig, ReplicationConfig, ReplicationStrategy
from ferry.core import faults
from ferry.core.clock import Clock, utc_now
from ferry.core.errors import ConfigError, NotificationLogGapError
from ferry.feeds.catalog_changes import (
    CatalogChange,
    GlueEventOrigin,
    glue_changes,
    hive_changes,
    in_scope,
)
from ferry.feeds.windows import FeedState, Window
from ferry.planning import selection
from ferry.replicas.ledger.records import iso
from ferry.statemachine.feed_payloads import (
    CatalogEventInput,
    ChangeWindowInput,
    ClaimResult,
    CloseWindowInput,
    CloseWindowResult,
    IntakeResult,
    PollInput,
    PollResult,
)

logger = logging.getLogger(__name__)

#: The change kind of a table handed over because the log lost its events (a gap).
FULL_COMPARISON = "FULL_COMPARISON"
#: Past its wait and this long, a window's execution is looked at: if it has ended without
#: closing the window (stopped by hand, failed in its own steps, lost), the next poll or
#: intake starts another.
RESUME_AFTER = timedelta(minutes=1)
#: Step Functions' longest execution name; a name holds ``[A-Za-z0-9_-]`` only.
MAX_EXECUTION_NAME = 80
_NAME_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-_")
#: The poller's own interval when the config declares no ``catalog-events`` trigger.
DEFAULT_POLL_INTERVAL = timedelta(seconds=5)

ConfigLoader = Callable[[str], ReplicationConfig]
CatalogOpener = Callable[[CatalogConfig], AbstractContextManager[Catalog]]


class WindowExecutions:
    """The change window state machine's executions, started by name (Step Functions)."""

    def __init__(self, client: Any, state_machine_arn: str):
        self.client = client
        self.state_machine_arn = state_machine_arn

    def start(self, name: str, execution_input: dict[str, Any]) -> None:
        """Start ``name``; one already started with that name is the same window's."""
        try:
            self.client.start_execution(
                stateMachineArn=self.state_machine_arn,
                name=name,
                input=json.dumps(execution_input),
            )
        except self.client.exceptions.ExecutionAlreadyExists:
            pass

    def running(self, name: str) -> bool:
        arn = self.state_machine_arn.replace(":stateMachine:", ":execution:", 1) + f":{name}"
        try:
            return self.client.describe_execution(executionArn=arn)["status"] == "RUNNING"
        except self.client.exceptions.ExecutionDoesNotExist:
            return False


def execution_name(window: Window, restart: int = 0) -> str:
    """The window's execution: the same name for every start of one window, within Step
    Functions' 80 characters of ``[A-Za-z0-9_-]`` whatever the config's and table's names; a
    restart's ends with its number.

    The config and the table are in the digest; the table's name leads, cut to what is
    left, for people.
    """
    digest = hashlib.sha256(f"{window.config_uri}\0{window.table}".encode()).hexdigest()[:16]
    opened = window.opened.strftime("%Y%m%dT%H%M%S%fZ")
    tail = f"{digest}-{opened}" + (f"-r{restart}" if restart else "")
    table = "".join(c if c in _NAME_CHARACTERS else "-" for c in window.table)
    table = table[: max(0, MAX_EXECUTION_NAME - len(tail) - 1)]
    return f"{table}-{tail}" if table else tail


class ChangeFeeds:
    """The change feeds' steps, with their collaborators injected."""

    def __init__(
        self,
        state: FeedState,
        executions: WindowExecutions,
        load_config: ConfigLoader,
        open_catalog: CatalogOpener,
        clock: Clock = utc_now,
        *,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.state = state
        self.executions = executions
        self.load_config = load_config
        self.open_catalog = open_catalog
        self.clock = clock
        self.sleep = sleep
        self.monotonic = monotonic

    # -- intake

    def glue_event(self, payload: CatalogEventInput) -> IntakeResult:
        """Hand over the changes of one of AWS Glue's events, if from the config's source."""
        faults.point("intake.glue-event")  # before anything is noted: a retry starts afresh
        config = self.load_config(payload.config_uri)
        origin, changes = glue_changes(payload.event)
        resumed = self.resume(payload.config_uri, config)
        if not _from_source(config.source_catalog, origin):
            return IntakeResult(tables=[], opened=[], ignored=len(changes), resumed=resumed)
        intake = self.hand_over(payload.config_uri, config, changes)
        return intake.model_copy(update={"resumed": resumed})

    def hand_over(
        self, config_uri: str, config: ReplicationConfig, changes: Sequence[CatalogChange]
    ) -> IntakeResult:
        """Note the changes in their tables' windows; open and start those not yet open."""
        scoped = in_scope(config, changes)
        if scoped.ignored:
            logger.info("%d change(s) of tables %s does not select", scoped.ignored, config_uri)
        seconds = int(_trigger_window(config).total_seconds())
        opened: list[str] = []
        now = self.clock()
        for table, noted in sorted(scoped.tables.items()):
            window = self.state.note(config_uri, table, noted.count, noted.first, noted.kinds, now)
            if window.execution is not None:
                continue  # its execution holds it (or ``resume`` gives it another)
            name = execution_name(window)
            self.executions.start(
                name, {"configUri": config_uri, "table": table, "windowSeconds": seconds}
            )
            self.state.started(window, name)
            opened.append(table)
        return IntakeResult(tables=sorted(scoped.tables), opened=opened, ignored=scoped.ignored)

    def resume(self, config_uri: str, config: ReplicationConfig) -> list[str]:
        """Give each window open past its wait whose execution is not running another
        execution, which claims at once; the tables whose windows were resumed.

        The window records the new execution first, on the condition that it still holds
        the one found gone: of two pollers or intakes, one starts it.
        """
        now = self.clock()
        overdue = _trigger_window(config) + RESUME_AFTER
        resumed = []
        for window in self.state.open_windows(config_uri):
            if now - window.opened < overdue:
                continue
            if self.executions.running(window.execution or execution_name(window)):
                continue
            name = execution_name(window, window.restarts + 1)
            if not self.state.restarted(window, name):
                continue
            logger.warning(
                "the window of %s (execution %s) is open and no execution holds it: starting %s",
                window.table,
                window.execution,
                name,
            )
            self.executions.start(
                name, {"configUri": config_uri, "table": window.table, "windowSeconds": 0}
            )
            resumed.append(window.table)
        return resumed

    # -- the window's execution

    def claim(self, payload: ChangeWindowInput) -> ClaimResult:
        """Claim the table's changes; say whether the source catalog calls for a run."""
        window = self.state.claim(payload.config_uri, payload.table)
        if window is None:
            return ClaimResult(run=False, reason="no changes", changes=0, tables=[], trigger={})
        config = self.load_config(payload.config_uri)
        run, reason = self._needs_run(config, payload.table)
        trigger = {
            "catalogEvents": {
                "changes": window.changes - window.claimed,
                "kinds": sorted(window.kinds),
                "windowOpened": iso(window.opened),
            },
            "time": iso(window.first_change or window.opened),
        }
        return ClaimResult(
            run=run,
            reason=reason,
            changes=window.changes,
            tables=[payload.table] if run else [],
            trigger=trigger,
        )

    def _needs_run(self, config: ReplicationConfig, table: str) -> tuple[bool, str]:
        replications = [r for r in config.table_replications if r.selects(table)]
        if not replications:
            return False, f"the config no longer selects {table}"
        database, _, name = table.partition(".")
        with self.open_catalog(config.source_catalog) as source:
            if source.get_table(database, name) is not None:
                return True, "changed"
        if not any(
            r.replication_strategy is ReplicationStrategy.PROPAGATE_DELETES for r in replications
        ):
            return False, "dropped at the source; the config does not propagate deletes"
        with self.open_catalog(config.replica_catalog) as replica:
            for replication in replications:
                concrete = replication.for_table(name)
                if replica.get_table(concrete.replica_database, concrete.replica_table_name):
                    return True, "dropped at the source: the replica is dropped"
        return False, "dropped at the source, and no replica exists"

    def close(self, payload: CloseWindowInput) -> CloseWindowResult:
        faults.point("window.close")
        closed = self.state.close(payload.config_uri, payload.table, payload.claimed)
        return CloseWindowResult(more=not closed)

    # -- the Hive poller

    def poll(self, payload: PollInput, seconds: float) -> PollResult:
        """Read the config's source notification log for up to ``seconds``, every
        ``catalog-events.poll-interval``, handing its changes over."""
        config = self.load_config(payload.config_uri)
        interval = _poll_interval(config).total_seconds()
        deadline = self.monotonic() + seconds
        counts = _PollCounts()
        with self.open_catalog(config.source_catalog) as catalog:
            if not isinstance(catalog, HiveMetastoreCatalog):
                raise ConfigError(
                    f"{payload.config_uri}: source-catalog {config.source_catalog.name} is not "
                    "a Hive metastore: the Glue Data Catalog sends its changes to EventBridge, "
                    "it has no notification log to poll"
                )
            log = HiveNotificationLog(catalog)
            counts.resumed = self.resume(payload.config_uri, config)
            while True:
                full = self._poll_once(payload.config_uri, config, catalog, log, counts)
                if full:
                    continue  # more events are waiting: read them now
                if self.monotonic() + interval > deadline:
                    break
                self.sleep(interval)
        return counts.result(self.state.position(payload.config_uri))

    def _poll_once(
        self,
        config_uri: str,
        config: ReplicationConfig,
        catalog: HiveMetastoreCatalog,
        log: HiveNotificationLog,
        counts: _PollCounts,
    ) -> bool:
        """One read of the log; True when it returned as many events as one read may."""
        counts.polls += 1
        read = self.state.position(config_uri)
        after = read
        if read is None:  # no position: replay what the log keeps
            oldest = log.oldest_event_id()
            after = log.current_event_id() if oldest is None else oldest - 1
            counts.replayed = True
            logger.info("%s has no position: replaying its log after event %d", config_uri, after)
        try:
            events = log.events_after(after, MAX_EVENTS)
        except NotificationLogGapError as gap:
            logger.warning("%s: every table the config selects is compared in full", gap)
            current = log.current_event_id()
            tables = selection.expand(config, (), catalog.list_table_names, config_uri)
            now = self.clock()
            changes = [
                CatalogChange(r.source_table.database_name, r.source_table.table_name,
                              FULL_COMPARISON, now)
                for r in tables
            ]  # fmt: skip
            counts.add(self.hand_over(config_uri, config, changes))
            counts.gap = True
            self.state.advance(config_uri, read, current, self.clock())
            return False
        if not events:
            if read is None:
                self.state.advance(config_uri, None, after, self.clock())
            return False
        faults.point("poller.read")  # read, nothing handed over: a retry reads them again
        counts.events += len(events)
        counts.add(self.hand_over(config_uri, config, hive_changes(events)))
        faults.point("poller.handed-over")
        self.state.advance(config_uri, read, events[-1].event_id, self.clock())
        return len(events) >= MAX_EVENTS


class _PollCounts:
    def __init__(self) -> None:
        self.events = self.ignored = self.polls = 0
        self.tables: set[str] = set()
        self.opened: list[str] = []
        self.gap = self.replayed = False
        self.resumed: list[str] = []

    def add(self, intake: IntakeResult) -> None:
        self.tables.update(intake.tables)
        self.opened += intake.opened
        self.ignored += intake.ignored

    def result(self, position: int | None) -> PollResult:
        return PollResult(
            events=self.events,
            position=position,
            tables=sorted(self.tables),
            opened=self.opened,
            ignored=self.ignored,
            gap=self.gap,
            polls=self.polls,
            replayed=self.replayed,
            resumed=self.resumed,
        )


def _trigger_window(config: ReplicationConfig) -> timedelta:
    trigger = config.triggers.catalog_events
    return trigger.window if trigger is not None else timedelta(0)


def _poll_interval(config: ReplicationConfig) -> timedelta:
    trigger = config.triggers.catalog_events
    return trigger.poll_interval if trigger is not None else DEFAULT_POLL_INTERVAL


def _from_source(source: CatalogConfig, origin: GlueEventOrigin) -> bool:
    """True when an event of AWS Glue came from the config's source catalog (its account and
    region, where the config names them)."""
    if source.glue is None:
        return False
    if source.glue.catalog_id and origin.account and source.glue.catalog_id != origin.account:
        return False
    return not (source.glue.region and origin.region and source.glue.region != origin.region)
