"""``ferry failback``: bring what DR wrote home, then restore the original direction.

Every check comes first, for every table, and refuses with one line before anything is
written: a table not promoted (no failover to fail back from), no baseline, a primary that
does not answer, a table changed on both sides with no ``--prefer``. Then, per table, each
step recorded in the table's failback journal (next to its baseline) once it is done, so a
run killed anywhere and run again converges to the same end state:

1. **planned**: the changes (``ferry.failover.side_changes``) and the original source table as it
   was are written to the journal; a run again uses them rather than reading the sides anew
   (once DR's partitions are home, the source would look changed);
2. **copied**: the reverse config (``ferry.failover.reverse``) is written to the work area and
   replicated with Ferry's own steps (``ferry replicate``'s driver), the original source
   table adopted as the reverse replica because this command says so: only DR's changed
   partitions, into a new snapshot folder below the original table's location. A killed
   copy resumes; a partition already committed at the source is unchanged and not copied
   again;
3. **restored**: the forward replica's partitions that came home record the source's new
   fingerprint (the next forward run copies nothing of them); the original table gets its
   own type, location and parameters back and its partitions lose Ferry's bookkeeping;
   partitions dropped in DR are dropped at the source under PROPAGATE_DELETES (metadata
   only: the source's files stay); the reverse replica's ledger is forgotten, so nothing
   of the source's data is ever a candidate for housekeeping;
4. **done**: ``ferry.promoted`` is removed from the replica and the switch resumes the
   config's triggers (every run: resuming what runs changes nothing).

An Iceberg replica's failback is ``ferry.iceberg.failback_snapshots``'s (its snapshot ids kept);
once it returns, its promotion is removed here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ferry.catalog import Catalog
from ferry.config import ReplicationConfig, TableReplication
from ferry.core import faults
from ferry.core.clock import utc_now
from ferry.core.errors import FailoverError, FerryError
from ferry.core.event_id import new_event_id
from ferry.failover import PROMOTED, Prefer, ReplicationSwitch, SwitchReport
from ferry.failover import baseline as baselines
from ferry.failover.failback_steps import (
    FailbackTable,
    TableFailback,
    check_reverse,
    failover_id,
    journal_of,
    outcome,
    replica_buckets,
    restore,
    reverse_table,
)
from ferry.failover.journal import COPIED, DONE, PLANNED, RESTORED, Journal, journal_uri
from ferry.failover.promotion import failover_id_of, unpromote
from ferry.failover.reverse import reverse_document
from ferry.failover.side_changes import compare
from ferry.failover.sides import replica_side, source_side
from ferry.iceberg.recognise import is_iceberg
from ferry.planning import source_versions
from ferry.storage import fs

#: Runs the reverse config: (config URI, source tables, tables to adopt) → each table's
#: outcome (``ferry.commands.table_outcomes.TableOutcome``).
ReverseRun = Callable[[str, Sequence[str], frozenset[str]], list[Any]]


@dataclass
class FailbackReport:
    tables: list[TableFailback]
    reverse_config: str | None = None
    reverse_text: str | None = None
    switch: SwitchReport = field(default_factory=SwitchReport)


def fail_back(
    config: ReplicationConfig,
    config_path: Path | str,
    replications: Sequence[TableReplication],
    source: Catalog,
    replica: Catalog,
    switch: ReplicationSwitch,
    work_uri: str,
    key_of: Callable[[TableReplication], str],
    run_reverse: ReverseRun,
    *,
    prefer: Prefer | None = None,
    dry_run: bool = False,
    threads: int = 8,
    forget_reverse: Callable[[TableReplication], None] = lambda replication: None,
    reverse_folder: str | None = None,
) -> FailbackReport:
    """Fail the tables of ``replications`` back (see the module's steps).

    ``config_path``: the config file, or the URI of a deployed config's object, the reverse
    config is written from. ``forget_reverse``: forgets what the reverse run recorded of the
    original table (its ledger entries), so that nothing of the source's data is ever
    housekeeping's. ``reverse_folder``: where the reverse config is written (default: the
    work area's ``failover/``, beside the baselines).
    """
    tables, icebergs = _check(replications, source, replica, work_uri, key_of, threads)
    _refuse_conflicts(tables, prefer)
    event_id = new_event_id()
    for replication, kept in icebergs if not dry_run else ():
        # Every Iceberg table's conflicts are found before any is written home.
        _iceberg_failback(replication, kept, source, replica, prefer, True, event_id)
    iceberg = [
        _iceberg_failback(replication, kept, source, replica, prefer, dry_run, event_id)
        for replication, kept in icebergs
    ]
    for table in tables:
        if table.journal is None and table.changes is not None:
            table.journal = journal_of(table, prefer)
    report = FailbackReport([])
    pending = [t for t in tables if not t.done]
    coming = [t for t in pending if t.journal and t.journal.home and COPIED not in t.journal.steps]
    reverse_uri = fs.join(
        reverse_folder or fs.join(work_uri, baselines.FAILOVER_FOLDER),
        f"{failover_id(pending)}-reverse.yml",
    )
    reverse = [reverse_table(t) for t in coming]
    document = reverse_document(config_path, reverse, replica_buckets(config, coming))
    text = yaml.safe_dump(document, sort_keys=False)
    if coming:
        check_reverse(text, reverse_uri)
    report.reverse_text = text if coming else None
    report.reverse_config = reverse_uri if coming else None
    if dry_run:
        report.tables = [outcome(t, "PLANNED") for t in tables] + iceberg
        return report
    for table in pending:
        if PLANNED not in table.journal.steps:  # type: ignore[union-attr]
            table.journal.did(PLANNED, table.journal_uri)  # type: ignore[union-attr]
    if coming:
        _bring_home(coming, reverse_uri, text, run_reverse)
    for table in pending:
        _finish(table, source, replica, threads, forget_reverse)
    # Always: a run killed after the last table was done but before this still resumes. A
    # replica still promoted is left out of the runs the triggers start.
    report.switch = switch.resume(config, [r.source_table.qualified_name for r in replications])
    for replication, _ in icebergs:  # its failback returned: both sides are equal
        current = replica.get_table(replication.replica_database, replication.replica_table_name)
        if current is not None:
            unpromote(replica, current)
    report.tables = [
        outcome(t, "ALREADY_FAILED_BACK" if t.done else "FAILED_BACK") for t in tables
    ] + iceberg
    for entry in report.tables:
        if entry.status == "FAILED_BACK" and coming:
            entry.reverse_config = reverse_uri
    return report


def _refuse_conflicts(tables: Sequence[FailbackTable], prefer: Prefer | None) -> None:
    """A table changed on both sides needs ``--prefer``: refused, nothing written."""
    conflicts = [
        t.changes.described()
        for t in tables
        if t.journal is None and t.changes is not None and t.changes.on_both and prefer is None
    ]
    if conflicts:
        raise FailoverError(
            "changed on both sides since the failover, nothing changed; name the winner with "
            "--prefer replica|source: " + " | ".join(conflicts)
        )


def _bring_home(
    coming: Sequence[FailbackTable], reverse_uri: str, text: str, run_reverse: ReverseRun
) -> None:
    """Step 2 (see the module): the reverse config written and run, each table copied."""
    fs.write_bytes(reverse_uri, text.encode())
    faults.point("failback.reverse-config")
    adopt = frozenset(t.replication.source_table.qualified_name.lower() for t in coming)
    names = [f"{t.replication.replica_qualified_name}" for t in coming]
    outcomes = run_reverse(reverse_uri, names, adopt)
    failed = [o for o in outcomes if not o.ok]
    if failed or len(outcomes) < len(coming):
        first = failed[0] if failed else None
        raise FerryError(
            "bringing DR's changes home failed"
            + (f" for {first.source_table}: {first.error_type}: {first.error}" if first else "")
            + "; run ferry failback again to continue"
        )
    faults.point("failback.reverse-run")
    for table in coming:
        table.journal.did(COPIED, table.journal_uri)  # type: ignore[union-attr]


def _finish(
    table: FailbackTable, source: Catalog, replica: Catalog, threads: int,
    forget_reverse: Callable[[TableReplication], None],
) -> None:  # fmt: skip
    """Steps 3 and 4 (see the module): both sides restored, the replica no more promoted."""
    journal = table.journal
    assert journal is not None
    if RESTORED not in journal.steps:
        restore(table, source, replica, threads)
        forget_reverse(table.replication)
        journal.did(RESTORED, table.journal_uri)
    faults.point("failback.restored")
    current = replica.get_table(table.replica_table.database, table.replica_table.name)
    if current is not None:
        unpromote(replica, current)
    journal.did(DONE, table.journal_uri)


# -- the checks ------------------------------------------------------------------------------


def _check(
    replications: Sequence[TableReplication],
    source: Catalog,
    replica: Catalog,
    work_uri: str,
    key_of: Callable[[TableReplication], str],
    threads: int,
) -> tuple[list[FailbackTable], list[tuple[TableReplication, baselines.Baseline]]]:
    tables, iceberg = [], []
    for replication in replications:
        name = replication.source_table.qualified_name
        replica_name = replication.replica_qualified_name
        found = replica.get_table(replication.replica_database, replication.replica_table_name)
        if found is None:
            raise FailoverError(f"{name}: its replica {replica_name} does not exist")
        uri = baselines.baseline_uri(work_uri, key_of(replication))
        journal = Journal.load(journal_uri(uri))
        promoted = failover_id_of(found)
        if promoted is None:
            if journal is not None and DONE in journal.steps:
                original = source.get_table(
                    replication.source_table.database_name, replication.source_table.table_name
                )
                tables.append(
                    FailbackTable(replication, found, original or found, uri, journal_uri(uri),
                           journal, done=True)
                )  # fmt: skip
                continue
            raise FailoverError(
                f"{name}: replica {replica_name} is not promoted: no failover to fail back from"
            )
        kept = baselines.load(uri)
        if kept is None:
            raise FailoverError(
                f"{name}: replica {replica_name} is promoted ({found.parameters[PROMOTED]}) but "
                f"its baseline {uri} is missing: run ferry failover for it again"
            )
        original = source.get_table(
            replication.source_table.database_name, replication.source_table.table_name
        )
        if original is None:
            raise FailoverError(
                f"{name}: the original source table is gone from the primary catalog; "
                "nothing to fail back to"
            )
        if is_iceberg(found):
            iceberg.append((replication, kept))
            continue
        if journal is not None and journal.failover_id != kept.failover_id:
            journal = None  # a journal of an earlier failover
        table = FailbackTable(replication, found, original, uri, journal_uri(uri), journal)
        if journal is None:
            table.changes = compare(
                kept,
                replica_side(replica, found, threads),
                source_side(source, original, threads),
            )
        tables.append(table)
    return tables, iceberg


def _iceberg_failback(
    replication: TableReplication,
    kept: baselines.Baseline,
    source: Catalog,
    replica: Catalog,
    prefer: Prefer | None,
    dry_run: bool,
    event_id: str,
) -> TableFailback:
    """An Iceberg replica: ``ferry.iceberg.failback_snapshots`` writes DR's snapshots home with
    their ids, from the snapshot the replica held at the failover; the replica then records the
    source version it equals, as a forward Commit would."""
    read_at = utc_now()

    def record_source(snapshot_id: int | None, snapshot_ms: int | None) -> dict[str, str]:
        version = str(source_versions.of_iceberg(snapshot_id, snapshot_ms))
        return source_versions.recorded_parameters(version, read_at)

    # Imported here: pyiceberg is for Iceberg tables only (test_cold_start_imports.py).
    from ferry.iceberg.failback_snapshots import fail_back_iceberg

    result = fail_back_iceberg(
        replication,
        kept.iceberg_snapshot_id,
        prefer=prefer,
        dry_run=dry_run,
        source_catalog=source,
        replica_catalog=replica,
        event_id=event_id,
        record_source=record_source,
    )
    return TableFailback(
        replication.source_table.qualified_name,
        replication.replica_qualified_name,
        "PLANNED" if dry_run else "FAILED_BACK",
        changes={
            "baselineSnapshotId": kept.iceberg_snapshot_id,
            "changedInDr": [str(i) for i in result.replica_snapshots],
            "changedAtSource": [str(i) for i in result.source_snapshots],
            "onBoth": [str(i) for i in result.replica_snapshots] if result.conflict else [],
            "snapshotsHome": list(result.written_home),
            "snapshotsDropped": list(result.dropped),
            "filesCopied": result.files_copied,
            "bytesCopied": result.bytes_copied,
            "summary": result.summary,
        },
    )


def reverse_ledger_forgetter(
    state: Any, config: ReplicationConfig, region: str | None
) -> Callable[[TableReplication], None]:
    """``fail_back``'s ``forget_reverse`` on a state store (none: nothing to forget): the
    reverse replica's (the original table's) ledger entries are forgotten."""
    from ferry.lifecycle import replica_state
    from ferry.replicas.ledger import replica_key

    def forget(replication: TableReplication) -> None:
        if state is None:
            return
        key = replica_key(
            replica_state.catalog_identity(config.source_catalog, region),
            replication.source_table.qualified_name,
        )
        for entry in state.store.entries(key):
            state.store.forget(key, entry.path)

    return forget
