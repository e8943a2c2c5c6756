"""The replication config: one YAML file, keys compatible with Circus Train's.

``load_config`` is the only entry point; every problem it finds becomes one
``ConfigError`` line that names the file and the key.

Circus Train's files load as they are. Each of its keys is either implemented or accepted
with one warning (``ReplicationConfig.warnings``) that says what Ferry does instead: each
model lists those keys in ``circus_train_keys``. A key that is neither Ferry's nor Circus
Train's is an error, with the closest known key as a suggestion. Spring's profile documents
and ``${NAME}`` placeholders are resolved first (``ferry.config.text``).

One module per concept, each importing only the ones before it:

- ``base``: what every model shares (``_Model``), whole numbers, warnings, key paths;
- ``checks``: Hive names, locations, regions, buckets; ``schedules``: cron, rate, time zones;
- ``circus_train``: what Ferry does instead of each Circus Train key, and reading
  locations as Hadoop does;
- ``assume_role``: the role that reaches a side in another AWS account;
- ``catalogs`` (and notifications), ``copier_options``, ``housekeeping``, ``permissions``,
  ``tables``, ``triggers``: the sections of a file; ``replication``: the whole file;
- ``error_text`` and ``loading``: from a file to a config, or to one line of error.
"""

from ferry.config.assume_role import AssumeRole
from ferry.config.base import ConfigWarning, WholeNumber

# The base of every model: a test walks the models for their Circus Train keys.
from ferry.config.base import _Model as _Model
from ferry.config.catalogs import (
    CatalogConfig,
    GlueSettings,
    SnsEventListener,
    check_metastore_uri,
)
from ferry.config.checks import (
    LOCATION_SCHEMES,
    MAX_DATABASE_NAME,
    MAX_TABLE_NAME,
    check_bucket_name,
    check_hive_name,
    check_location,
    check_region,
)
from ferry.config.circus_train import read_as_hadoop
from ferry.config.copier_options import (
    LISTING_THREADS,
    CopierOptions,
    EmrServerlessSettings,
)
from ferry.config.error_text import describe_validation_error, known_keys
from ferry.config.housekeeping import (
    DEFAULT_EXPIRED_PATH_DURATION,
    Housekeeping,
    HousekeepingSettings,
    OrphanedDataStrategy,
)
from ferry.config.loading import load_config, load_config_uri, parse_config, parse_config_text
from ferry.config.objectives import DEFAULT_PRIORITY, Priority
from ferry.config.permissions import (
    HivePrivileges,
    LakeFormationPermissions,
    PermissionsSettings,
    TagMapping,
)
from ferry.config.replication import ReplicationConfig
from ferry.config.schedules import check_schedule_expression, check_time_zone
from ferry.config.tables import (
    AvroSerdeOptions,
    ReplicaTableConfig,
    ReplicationMode,
    ReplicationStrategy,
    SourceTableConfig,
    TableReplication,
    TransformOptions,
)
from ferry.config.triggers import CatalogEventsTrigger, S3Trigger, ScheduleTrigger, Triggers

__all__ = [
    "AssumeRole",
    "DEFAULT_EXPIRED_PATH_DURATION",
    "DEFAULT_PRIORITY",
    "LISTING_THREADS",
    "LOCATION_SCHEMES",
    "MAX_DATABASE_NAME",
    "MAX_TABLE_NAME",
    "AvroSerdeOptions",
    "CatalogConfig",
    "ConfigWarning",
    "CopierOptions",
    "EmrServerlessSettings",
    "GlueSettings",
    "HivePrivileges",
    "LakeFormationPermissions",
    "PermissionsSettings",
    "TagMapping",
    "Priority",
    "Housekeeping",
    "HousekeepingSettings",
    "OrphanedDataStrategy",
    "ReplicaTableConfig",
    "ReplicationConfig",
    "ReplicationMode",
    "ReplicationStrategy",
    "S3Trigger",
    "ScheduleTrigger",
    "SnsEventListener",
    "SourceTableConfig",
    "TableReplication",
    "TransformOptions",
    "Triggers",
    "CatalogEventsTrigger",
    "WholeNumber",
    "check_bucket_name",
    "check_hive_name",
    "check_location",
    "check_metastore_uri",
    "check_region",
    "check_schedule_expression",
    "check_time_zone",
    "describe_validation_error",
    "known_keys",
    "load_config",
    "load_config_uri",
    "parse_config",
    "parse_config_text",
    "read_as_hadoop",
]
