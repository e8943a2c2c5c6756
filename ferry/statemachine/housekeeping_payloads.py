"""The housekeeping definition's payloads (``HOUSEKEEPING_FUNCTIONS``): its one state's input
and result."""

from __future__ import annotations

from ferry.statemachine.payloads import Input, Result


class HousekeepingInput(Input):
    """The housekeeping state machine's input (``events/housekeeping.json``)."""

    config_uri: str
    tables: list[str] | None = None
    dry_run: bool = False
    vacuum: bool = False
    delete_orphans: bool = False


class HousekeepingResult(Result):
    """Counts (``ferry.lifecycle.retired_snapshots``) and the URI of the report that names every
    table and path: the same few hundred bytes whatever the number of tables."""

    dry_run: bool
    vacuum: bool
    deleted: int
    kept: int
    orphans: int
    orphans_ledgered: int
    table_count: int
    tables_skipped: int
    report_uri: str
