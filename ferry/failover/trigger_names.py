"""Which rules and schedules start a deployed config's replications: their names.

The stack names every trigger of a config ``ferry-<environment>-<config>[suffix]``
(``trigger_name``; ``infra/triggers.py`` names them with it), the config's part shortened
with a digest when the whole would not fit the 64 characters of a rule's or a schedule's
name. ``config_triggers`` gives, from a config and the file name it is deployed under, the
EventBridge rules and Scheduler schedules that start its runs: the ones a failover turns
off and a failback turns on again. The housekeeping schedule is not among them: it deletes
only the snapshots Ferry itself superseded, never what writers put in a promoted replica.
"""

from __future__ import annotations

from dataclasses import dataclass

from ferry.config import ReplicationConfig
from ferry.core.resource_names import fitted

#: EventBridge rules and Scheduler schedules: at most 64 characters.
LONGEST_TRIGGER_NAME = 64

#: The suffix of each trigger's name after ``ferry-<environment>-<config>``.
SCHEDULE_SUFFIX = ""
CATALOG_EVENTS_SUFFIX = "-catalog-events"
CATALOG_POLLER_SUFFIX = "-catalog-poller"
HOUSEKEEPING_SUFFIX = "-housekeeping"


def s3_rule_suffix(number: int) -> str:
    """The suffix of the config's ``number``-th S3 trigger's rule (from 0)."""
    return f"-s3-{number}"


def trigger_name(environment: str, config_name: str, suffix: str) -> str:
    """``ferry-<environment>-<config>[suffix]``, fitted to a rule's or a schedule's name."""
    return fitted(f"ferry-{environment}-", config_name, suffix, LONGEST_TRIGGER_NAME)


def schedule_group(environment: str) -> str:
    """The Scheduler group of every schedule of the environment."""
    return f"ferry-{environment}"


@dataclass(frozen=True)
class ConfigTriggers:
    """A deployed config's triggers: EventBridge rules (default bus) and Scheduler schedules
    (in ``group``), by name."""

    rules: tuple[str, ...]
    schedules: tuple[str, ...]
    group: str

    def names(self) -> tuple[str, ...]:
        """Every trigger, as a person reads it (``rule …``, ``schedule …``)."""
        return tuple(f"rule {r}" for r in self.rules) + tuple(
            f"schedule {self.group}/{s}" for s in self.schedules
        )


def config_triggers(
    environment: str, config_name: str, config: ReplicationConfig
) -> ConfigTriggers:
    """The rules and schedules the stack of ``environment`` deploys to start the runs of
    ``config`` (deployed as ``<config_name>.yml``), as ``infra/triggers.py`` names them."""

    def name(suffix: str) -> str:
        return trigger_name(environment, config_name, suffix)

    declared = config.triggers
    rules = [name(s3_rule_suffix(number)) for number in range(len(declared.s3))]
    schedules = []
    if declared.schedule is not None:
        schedules.append(name(SCHEDULE_SUFFIX))
    if declared.catalog_events is not None:
        if config.source_catalog.glue is not None:
            rules.append(name(CATALOG_EVENTS_SUFFIX))
        else:
            schedules.append(name(CATALOG_POLLER_SUFFIX))
    return ConfigTriggers(tuple(rules), tuple(schedules), schedule_group(environment))
