"""Plan's part of column statistics and keys: what the replica must get to match its source.

For a Hive-format table (an Iceberg table's statistics live in its own metadata; a view has
none), when both catalogs hold column statistics:

- the table's, unless the replica holds only part of the source's data (a partition filter
  or limit): statistics of the whole table would describe data it does not have;
- each selected partition's (after the filter and the limit) that this run writes, and, when
  both catalogs read them a page of partitions a call (two Hive metastores), every other
  selected one too, so that an ``ANALYZE`` at the source alone is carried by the next run.
  Glue answers one partition a call: there only the partitions this run writes are read.

Only what differs from the replica's is written. Statistics the replica column cannot hold
(a column it lacks, a type of another kind) or that its catalog has no field for are left
out, one notice each. Keys are decided by ``ferry.planning.key_plan``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ferry.catalog import Catalog
from ferry.core.model import CatalogKind, Partition, Table
from ferry.core.statistics import ColumnStatistics, unfit, unmapped
from ferry.planning.key_plan import plan_keys
from ferry.planning.replication_plan import PlanInputs
from ferry.planning.statistics_records import (
    PartitionStatistics,
    StatisticsPlan,
    StatisticsRecord,
)

#: A table's parameters that describe all of its data: not carried to a partial replica.
TABLE_STATISTICS_PARAMETERS = frozenset(
    {"numRows", "totalSize", "numFiles", "rawDataSize", "COLUMN_STATS_ACCURATE",
     "numFilesErasureCoded"}
)  # fmt: skip
#: Spark's own statistics of a table (``ANALYZE TABLE`` in Spark): ditto.
SPARK_STATISTICS_PREFIX = "spark.sql.statistics."


def without_table_statistics(parameters: Mapping[str, str]) -> dict[str, str]:
    """``parameters`` without the statistics of the whole table's data (Hive's and Spark's)."""
    return {
        key: value
        for key, value in parameters.items()
        if key not in TABLE_STATISTICS_PARAMETERS and not key.startswith(SPARK_STATISTICS_PREFIX)
    }


@dataclass(frozen=True)
class StatisticsDecision:
    """What Plan decided: the writes (None: nothing to write), the table parameters a replica
    without keys gets in their place, and one line for each thing left out."""

    plan: StatisticsPlan | None
    parameters: dict[str, str]
    notices: tuple[str, ...]


def with_statistics(replica_table: Table, decision: StatisticsDecision, partial: bool) -> Table:
    """The replica table without the whole table's statistics when it holds part of the
    source's data, with the parameters that stand in for keys its catalog cannot hold."""
    parameters = replica_table.parameters
    if partial:
        parameters = without_table_statistics(parameters)
    return replace(replica_table, parameters={**parameters, **decision.parameters})


@dataclass(frozen=True)
class Selection:
    """The partitions Plan selected: all of them, those this run writes (by values), the
    replica's, and whether the replica holds only part of the source's data."""

    partitions: Sequence[Partition]
    written: frozenset[tuple[str, ...]]
    existing: Mapping[tuple[str, ...], Partition]
    partial: bool
    overwrite: bool


def plan_statistics(
    inputs: PlanInputs, source_table: Table, replica_table: Table, selection: Selection
) -> StatisticsDecision:
    """The column statistics and keys this run writes at the replica (see the module)."""
    if source_table.is_view:
        return StatisticsDecision(None, {}, ())
    replica_before = None if selection.overwrite else inputs.replica_before
    notices: list[str] = []
    table: tuple[StatisticsRecord, ...] = ()
    partitions: tuple[PartitionStatistics, ...] = ()
    if inputs.source.supports_column_statistics and inputs.replica.supports_column_statistics:
        fitting = _Fitting(replica_table, inputs.replica.kind)
        if not (source_table.is_partitioned and selection.partial):
            table = _table_statistics(inputs, source_table, replica_before, fitting)
        if source_table.is_partitioned:
            partitions = _partition_statistics(
                inputs, source_table, replica_before, selection, fitting
            )
        notices.extend(fitting.notices)
    keys = plan_keys(inputs, source_table, replica_table, replica_before)
    notices.extend(keys.notices)
    planned = StatisticsPlan(table, partitions, keys.to_add, keys.to_drop)
    return StatisticsDecision(planned or None, keys.parameters, tuple(notices))


class _Fitting:
    """Statistics as the replica table holds them, and a line for each left out (once a
    column and reason, however many partitions had it)."""

    def __init__(self, replica_table: Table, kind: CatalogKind):
        self.table = replica_table.qualified_name
        self.types = {c.name.lower(): c.type for c in replica_table.storage.columns}
        self.kind = kind
        self._notices: dict[str, None] = {}

    @property
    def notices(self) -> list[str]:
        return list(self._notices)

    def __call__(self, found: Iterable[ColumnStatistics]) -> dict[str, ColumnStatistics]:
        fitting: dict[str, ColumnStatistics] = {}
        for statistics in found:
            column_type = self.types.get(statistics.column.lower())
            reason = unfit(statistics, column_type)
            if reason is not None:
                self._notices[f"{self.table}: column statistics not replicated: {reason}"] = None
                continue
            for line in unmapped(statistics, self.kind):
                self._notices[f"{self.table}: {line}; the other statistics are replicated"] = None
            sketch = statistics.sketch if self.kind is not CatalogKind.GLUE else None
            fitting[statistics.column.lower()] = replace(
                statistics, column=statistics.column.lower(), type=column_type or "", sketch=sketch
            )
        return fitting


def _same(planned: ColumnStatistics, held: ColumnStatistics | None) -> bool:
    """Whether the replica holds ``planned`` already (the column's type as each catalog
    spells it, and when they were computed, aside)."""
    return held is not None and replace(held, type="", column=planned.column) == replace(
        planned, type=""
    )


def _changed(
    planned: Mapping[str, ColumnStatistics], held: Mapping[str, ColumnStatistics]
) -> tuple[StatisticsRecord, ...]:
    lowered = {column.lower(): statistics for column, statistics in held.items()}
    return tuple(
        StatisticsRecord.of(statistics)
        for column, statistics in sorted(planned.items())
        if not _same(statistics, lowered.get(column))
    )


def _table_statistics(
    inputs: PlanInputs, source_table: Table, replica_before: Table | None, fitting: _Fitting
) -> tuple[StatisticsRecord, ...]:
    planned = fitting(inputs.source.get_column_statistics(source_table).values())
    if not planned:
        return ()
    held = _held(inputs.replica, replica_before, lambda r: r.get_column_statistics)
    return _changed(planned, held or {})


def _held(replica: Catalog, table: Table | None, read):
    """What the replica holds (``read(replica)(table)``), or None without a replica table or
    one of another kind (a view the source table replaces)."""
    if table is None or table.is_view:
        return None
    return read(replica)(table)


def _partition_statistics(
    inputs: PlanInputs,
    source_table: Table,
    replica_before: Table | None,
    selection: Selection,
    fitting: _Fitting,
) -> tuple[PartitionStatistics, ...]:
    paged = CatalogKind.GLUE not in (inputs.source.kind, inputs.replica.kind)
    compared = [
        p.values
        for p in selection.partitions
        if p.values in selection.written or (paged and p.values in selection.existing)
    ]
    if not compared:
        return ()
    found = inputs.source.get_partition_column_statistics(source_table, compared)
    present = [v for v in compared if v in selection.existing and v in found]
    held: Mapping[tuple[str, ...], Mapping[str, ColumnStatistics]] = (
        inputs.replica.get_partition_column_statistics(replica_before, present)
        if replica_before is not None and replica_before.is_partitioned and present
        else {}
    )
    planned = []
    for values in compared:
        if values not in found:
            continue
        changed = _changed(fitting(found[values].values()), held.get(values, {}))
        if changed:
            planned.append(PartitionStatistics(values, changed))
    return tuple(planned)
