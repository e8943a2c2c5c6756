"""Plan's part of primary and foreign keys: the source's keys, under the replica's names.

Between two catalogs that hold keys (Hive metastores), the replica gets the source's primary
key and each foreign key whose parent table is replicated too: the parent named in
``table-mappings``, else the table of the same name in the replica's database that Ferry
replicated from that parent. A foreign key whose parent has no replica (yet) is left out,
one notice each; the run after the parent's replication adds it. Keys the replica has and
the source has not are dropped.

A replica catalog without keys (Glue) keeps the source's as table parameters a reader can
find (``ferry.constraints.primary-key``, ``ferry.constraints.foreign-keys``: JSON), and one
notice says so.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace

from ferry.catalog import Catalog
from ferry.core.model import Table
from ferry.core.statistics import Constraints, ForeignKey, PrimaryKey
from ferry.planning.replication_plan import PlanInputs
from ferry.replicas.replica import SOURCE_TABLE

#: Where a replica catalog without keys keeps the source's primary key (JSON).
PRIMARY_KEY_PARAMETER = "ferry.constraints.primary-key"
#: ... and its foreign keys (a JSON list).
FOREIGN_KEYS_PARAMETER = "ferry.constraints.foreign-keys"


@dataclass(frozen=True)
class KeyDecision:
    to_add: Constraints = Constraints()
    to_drop: tuple[str, ...] = ()
    parameters: dict[str, str] = field(default_factory=dict)
    notices: tuple[str, ...] = ()


def plan_keys(
    inputs: PlanInputs, source_table: Table, replica_table: Table, replica_before: Table | None
) -> KeyDecision:
    """The keys to drop and add at the replica, or the parameters that stand in for them."""
    source, replica = inputs.source, inputs.replica
    if not source.supports_constraints:
        return KeyDecision()
    found = source.get_constraints(source_table)
    if not replica.supports_constraints:
        if not found:
            return KeyDecision()
        return KeyDecision(
            parameters=key_parameters(found),
            notices=(
                f"{replica_table.qualified_name}: catalog '{replica.name}' holds no primary or "
                f"foreign keys; the source's {', '.join(found.names)} are kept as table "
                f"parameters {PRIMARY_KEY_PARAMETER} and {FOREIGN_KEYS_PARAMETER}",
            ),
        )
    wanted, notices = _mapped(inputs, source_table, replica_table, found)
    held = (
        replica.get_constraints(replica_before)
        if replica_before is not None and not replica_before.is_view
        else Constraints()
    )
    return _difference(wanted, held, notices)


def key_parameters(keys: Constraints) -> dict[str, str]:
    """The table parameters that describe ``keys`` where a catalog holds none."""
    parameters = {}
    if keys.primary_key is not None:
        primary = asdict(keys.primary_key)
        parameters[PRIMARY_KEY_PARAMETER] = json.dumps(primary, separators=(",", ":"))
    if keys.foreign_keys:
        foreign = [asdict(key) for key in keys.foreign_keys]
        parameters[FOREIGN_KEYS_PARAMETER] = json.dumps(foreign, separators=(",", ":"))
    return parameters


def _mapped(
    inputs: PlanInputs, source_table: Table, replica_table: Table, found: Constraints
) -> tuple[Constraints, list[str]]:
    """The source's keys under the replica's names; a foreign key whose parent has no
    replica is left out, one line each."""
    notices: list[str] = []
    foreign: list[ForeignKey] = []
    for key in found.foreign_keys:
        parent = _replica_parent(inputs, source_table, replica_table, key)
        if isinstance(parent, str):
            notices.append(
                f"{replica_table.qualified_name}: foreign key {key.name} not replicated: {parent}"
            )
            continue
        foreign.append(replace(key, parent_database=parent.database, parent_table=parent.name))
    return Constraints(found.primary_key, tuple(foreign)), notices


def _replica_parent(
    inputs: PlanInputs, source_table: Table, replica_table: Table, key: ForeignKey
) -> Table | str:
    """The replica of ``key``'s parent table, or why there is none."""
    parent = f"{key.parent_database}.{key.parent_table}".lower()
    if parent == source_table.qualified_name.lower():
        return replica_table
    mappings = {k.lower(): v for k, v in inputs.replication.table_mappings.items()}
    named = mappings.get(parent)
    if named is None and key.parent_database.lower() == source_table.database.lower():
        candidate = f"{replica_table.database}.{key.parent_table}"
    else:
        candidate = named or ""
    database, _, name = candidate.partition(".")
    found = _table(inputs.replica, database, name) if name else None
    replicated = found is not None and (
        named is not None or (found.parameters.get(SOURCE_TABLE, "").lower() == parent)
    )
    if found is None or not replicated:
        return (
            f"its parent table {parent} has no replica in catalog '{inputs.replica.name}' yet "
            "(replicate it first, or name its replica in table-mappings)"
        )
    held = {column.name.lower() for column in found.storage.columns}
    absent = [c for c in key.parent_columns if c.lower() not in held]
    if absent:
        return f"its parent's replica {found.qualified_name} has no column {', '.join(absent)}"
    return found


def _table(catalog: Catalog, database: str, name: str) -> Table | None:
    return catalog.get_table(database, name) if database else None


def _normal(key: PrimaryKey | ForeignKey) -> PrimaryKey | ForeignKey:
    """A key as a metastore keeps it: names in lower case."""
    lowered = replace(key, name=key.name.lower(), columns=tuple(c.lower() for c in key.columns))
    if isinstance(lowered, ForeignKey):
        lowered = replace(
            lowered,
            parent_database=lowered.parent_database.lower(),
            parent_table=lowered.parent_table.lower(),
            parent_columns=tuple(c.lower() for c in lowered.parent_columns),
        )
    return lowered


def _difference(wanted: Constraints, held: Constraints, notices: list[str]) -> KeyDecision:
    """Drop the held keys that are not wanted as they are, add the wanted ones not held."""
    held_keys = {_normal(k): k.name for k in _keys(held)}
    wanted_keys = {_normal(k): k for k in _keys(wanted)}
    to_drop = tuple(name for key, name in held_keys.items() if key not in wanted_keys)
    adding = [key for normal, key in wanted_keys.items() if normal not in held_keys]
    primary = next((k for k in adding if isinstance(k, PrimaryKey)), None)
    foreign = tuple(k for k in adding if isinstance(k, ForeignKey))
    return KeyDecision(Constraints(primary, foreign), to_drop, {}, tuple(notices))


def _keys(constraints: Constraints) -> list[PrimaryKey | ForeignKey]:
    primary = [constraints.primary_key] if constraints.primary_key else []
    return [*primary, *constraints.foreign_keys]
