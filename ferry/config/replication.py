"""A whole config file: its catalogs, its settings, and the table replications they shape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import ClassVar

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from ferry.config.base import ConfigWarning, _Model
from ferry.config.catalogs import CatalogConfig, SnsEventListener
from ferry.config.circus_train import METRICS, SDK_CREDENTIALS
from ferry.config.copier_options import CopierOptions, EmrServerlessSettings
from ferry.config.housekeeping import Housekeeping, HousekeepingSettings, OrphanedDataStrategy
from ferry.config.objectives import DEFAULT_PRIORITY, Priority, parse_priority, parse_rpo
from ferry.config.permissions import PermissionsSettings, check_permissions_catalogs
from ferry.config.tables import TableReplication, TransformOptions
from ferry.config.triggers import Triggers, check_catalog_events_source
from ferry.core.errors import ConfigError


class ReplicationConfig(_Model):
    """A whole config file.

    Top-level ``copier-options``, ``transform-options`` and ``orphaned-data-strategy`` apply
    to every table replication; a table's own override them (copier options key by key),
    as in Circus Train. Each ``TableReplication`` of a loaded config holds the settings that
    apply to it, so the steps read them from the replication alone.
    """

    circus_train_keys: ClassVar[Mapping[str, str]] = {
        "graphite": METRICS,
        "metrics-reporter": (
            "Ferry reports no metrics periodically: the pipeline publishes each table's "
            "metrics to CloudWatch (namespace Ferry) when the table finishes"
        ),
        "security": SDK_CREDENTIALS,
        "gcp-security": (
            "Ferry reads gs:// locations with Google's default credentials "
            "(GOOGLE_APPLICATION_CREDENTIALS)"
        ),
        "extension-packages": (
            "Ferry loads no Java extensions: SNS notifications are built in "
            "(sns-event-listener), Avro schemas too (transform-options.avro-serde-options)"
        ),
        "spring": (
            "Spring Boot's settings do not apply to Ferry; profile documents are chosen with "
            "SPRING_PROFILES_ACTIVE"
        ),
        "instance": (
            "Ferry keeps its local state under --home (default .ferry) and its plans under "
            "--work-uri"
        ),
        "logging": "Ferry logs to stderr (-v for more); in the pipeline to CloudWatch Logs",
    }

    source_catalog: CatalogConfig
    replica_catalog: CatalogConfig
    sns_event_listener: SnsEventListener | None = None
    emr_serverless: EmrServerlessSettings | None = None
    housekeeping: HousekeepingSettings = Field(default_factory=HousekeepingSettings)
    triggers: Triggers = Field(default_factory=Triggers)
    #: Which of the source's grants its replicas receive (none when absent).
    permissions: PermissionsSettings = Field(default_factory=PermissionsSettings)
    # The defaults of every table: declared before table-replications, which they shape.
    copier_options: CopierOptions = Field(default_factory=CopierOptions)
    transform_options: TransformOptions = Field(default_factory=TransformOptions)
    orphaned_data_strategy: OrphanedDataStrategy = OrphanedDataStrategy.HOUSEKEEPING
    #: Every table's recovery point objective unless it gives its own (None: no objective).
    rpo: timedelta | None = None
    #: Every table's priority unless it gives its own.
    priority: Priority = DEFAULT_PRIORITY
    #: None or empty: Circus Train's housekeeping-only config (``housekeeping_only``).
    table_replications: list[TableReplication] = Field(default_factory=list)

    _warnings: tuple[ConfigWarning, ...] = PrivateAttr(default=())

    @field_validator("table_replications")
    @classmethod
    def _apply_top_level_defaults(
        cls, replications: list[TableReplication], info: ValidationInfo
    ) -> list[TableReplication]:
        copier = info.data.get("copier_options") or CopierOptions()
        transform = info.data.get("transform_options") or TransformOptions()
        orphaned = info.data.get("orphaned_data_strategy") or OrphanedDataStrategy.HOUSEKEEPING
        rpo = info.data.get("rpo")
        priority = info.data.get("priority") or DEFAULT_PRIORITY
        return [
            _with_defaults(r, copier, transform, orphaned).model_copy(
                update={
                    "rpo": r.rpo if r.rpo is not None else rpo,
                    "priority": r.priority or priority,
                }
            )
            for r in replications
        ]

    @field_validator("rpo", mode="before")
    @classmethod
    def _rpo(cls, value: object) -> timedelta | None:
        return None if value is None else parse_rpo(value)

    @field_validator("priority", mode="before")
    @classmethod
    def _priority(cls, value: object) -> Priority:
        return parse_priority(value)

    @model_validator(mode="after")
    def _triggers_start_replications(self) -> ReplicationConfig:
        if self.housekeeping_only and self.triggers.declared:
            raise ValueError(
                "triggers: a trigger starts a replication of the config, and it has no "
                "table-replications; give it table-replications or remove the triggers"
            )
        check_catalog_events_source(self.triggers, self.source_catalog.glue is not None)
        return self

    @model_validator(mode="after")
    def _permissions_fit_the_catalogs(self) -> ReplicationConfig:
        check_permissions_catalogs(
            self.permissions,
            self.source_catalog.glue is not None,
            self.replica_catalog.glue is not None,
        )
        return self

    @model_validator(mode="after")
    def _distinct_replicas(self) -> ReplicationConfig:
        """One replica table per replication, and never the source table itself.

        Hive (and Glue) names are case-insensitive: ``Sales.Orders`` is ``sales.orders``.
        Which tables a pattern selects is known only once the source catalog is read: its
        replicas are checked then (``ferry.planning.selection.expand``).
        """
        seen: dict[str, int] = {}
        for index, replication in enumerate(self.table_replications):
            if replication.source_table.is_pattern:
                continue
            name = replication.replica_qualified_name
            first = seen.setdefault(name.lower(), index)
            if first != index:
                earlier = self.table_replications[first].replica_qualified_name
                spelling = (
                    "" if earlier == name else f" (as {earlier}; Hive names are case-insensitive)"
                )
                raise ValueError(
                    f"two table-replications write the same replica table {name}{spelling}: "
                    f"table-replications[{first}] and table-replications[{index}]"
                )
        if self.source_catalog.same_catalog_as(self.replica_catalog):
            for index, replication in enumerate(self.table_replications):
                source = replication.source_table
                if source.is_pattern:
                    if source.database_name.lower() == replication.replica_database.lower():
                        raise ValueError(
                            f"table-replications[{index}].replica-table: each table matching "
                            f"{source.table_name_pattern!r} would be its own replica "
                            "(source-catalog and replica-catalog are the same catalog, and "
                            "matched tables keep their names); give replica-table another "
                            "database-name"
                        )
                elif source.qualified_name.lower() == replication.replica_qualified_name.lower():
                    raise ValueError(
                        f"table-replications[{index}].replica-table: the replica table "
                        f"{source.qualified_name} is the source table itself (source-catalog "
                        "and replica-catalog are the same catalog); give replica-table another "
                        "database-name or table-name"
                    )
        return self

    @property
    def warnings(self) -> tuple[ConfigWarning, ...]:
        """Circus Train's keys that Ferry accepted without using them, in file order, then
        the locations Ferry reads in Hadoop's spelling."""
        return self._warnings

    @property
    def housekeeping_only(self) -> bool:
        """True when the config has no ``table-replications``: Circus Train's
        housekeeping-only config, which ``ferry housekeeping`` takes and a replication
        refuses."""
        return not self.table_replications

    def copier_options_for(self, replication: TableReplication) -> CopierOptions:
        return replication.copier_options or self.copier_options

    def housekeeping_for(self, replication: TableReplication) -> Housekeeping:
        """What housekeeping does with the data this replication replaces."""
        return Housekeeping(
            orphaned_data_strategy=replication.orphaned_data_strategy,
            expired_path_duration=self.housekeeping.expired_path_duration,
        )

    def select(self, tables: Sequence[str] = ()) -> list[TableReplication]:
        """The replications (as written) of the named source tables; all when none is named.

        A name a ``table-name-pattern`` matches selects that replication; which tables it
        selects when none is named is known only from the source catalog
        (``ferry.planning.selection.expand``).
        """
        if not tables:
            return list(self.table_replications)
        # Hive names are case-insensitive, so is the selection.
        for name in tables:
            if not any(r.selects(name) for r in self.table_replications):
                listed = ", ".join(
                    sorted({r.source_table.qualified_name for r in self.table_replications})
                )
                tables_of = f"its tables: {listed}" if listed else "it has no table-replications"
                raise ConfigError(f"{name}: not in the config ({tables_of})")
        # A source replicated to two replicas is two replications: both are selected.
        return [r for r in self.table_replications if any(r.selects(n) for n in tables)]

    def replication_of(
        self, source_table: str, replica_table: str | None = None
    ) -> TableReplication:
        """The one replication a pipeline state works on: its source (and replica) table.

        A table a pattern selected gets that replication, made concrete for it.
        """
        table = source_table.partition(".")[2]
        for replication in self.table_replications:
            if not replication.selects(source_table):
                continue
            concrete = replication.for_table(table)
            if replica_table is None or (
                concrete.replica_qualified_name.lower() == replica_table.lower()
            ):
                return concrete
        raise ConfigError(f"{source_table} → {replica_table}: not in the config")


def _with_defaults(
    replication: TableReplication,
    copier: CopierOptions,
    transform: TransformOptions,
    orphaned: OrphanedDataStrategy,
) -> TableReplication:
    """``replication`` with the top-level settings it does not override itself."""
    own_copier = replication.copier_options
    merged_copier = (
        CopierOptions.model_validate(
            {
                **copier.model_dump(by_alias=True, exclude_unset=True),
                **own_copier.model_dump(by_alias=True, exclude_unset=True),
            }
        )
        if own_copier is not None
        else copier
    )
    fields = replication.model_fields_set
    return replication.model_copy(
        update={
            "copier_options": merged_copier,
            "transform_options": (
                replication.transform_options.over(transform)
                if "transform_options" in fields
                else transform
            ),
            "orphaned_data_strategy": (
                replication.orphaned_data_strategy
                if "orphaned_data_strategy" in fields
                else orphaned
            ),
        }
    )
