"""What happens to replica data a replication replaced: ``orphaned-data-strategy`` and
Circus Train's ``housekeeping`` section, and the two together for one table
(``Housekeeping``, which ``ferry.lifecycle.retired_snapshots`` applies).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import field_validator

from ferry.config.base import _Model
from ferry.config.circus_train import LEDGER
from ferry.core.duration import parse_duration

#: Circus Train's default ``housekeeping.expired-path-duration``.
DEFAULT_EXPIRED_PATH_DURATION = timedelta(days=3)


class OrphanedDataStrategy(StrEnum):
    """What happens to replica data that a replication replaced (or a delete orphaned)."""

    HOUSEKEEPING = "HOUSEKEEPING"  # recorded in the ledger, deleted after expired-path-duration
    NONE = "NONE"  # left where it is


def _parse_iso_duration(value: Any) -> timedelta:
    """An ISO-8601 duration of days, hours, minutes and seconds (``P3D``, ``PT12H``).

    As Java's ``Duration.parse``, which Circus Train's housekeeping uses: no years, months or
    weeks (their length varies). One parser for the config and the lock's lease.
    """
    if isinstance(value, timedelta):
        return value
    if not isinstance(value, str):
        raise ValueError(
            f"{value!r} is not an ISO-8601 duration of days, hours, minutes and seconds, "
            "e.g. P3D, PT12H, P1DT6H"
        )
    return parse_duration(value)


class HousekeepingSettings(_Model):
    """Circus Train's ``housekeeping``: how long replaced replica data is kept.

    Data a replication replaced is recorded in the ledger and deleted once
    ``expired-path-duration`` has passed, so that readers that resolved the old location
    can finish. Circus Train's database settings are accepted with a warning.
    """

    circus_train_keys: ClassVar[Mapping[str, str]] = {
        "schema-name": LEDGER,
        "db-init-script": LEDGER,
        "data-source": LEDGER,
        "h2": LEDGER,
        "fetch-legacy-replica-path-page-size": "Ferry's housekeeping pages its ledger itself",
        "cleanup-threads": "Ferry's housekeeping deletes with its own thread pool",
    }

    expired_path_duration: timedelta = DEFAULT_EXPIRED_PATH_DURATION

    @field_validator("expired_path_duration", mode="before")
    @classmethod
    def _iso_duration(cls, value: Any) -> timedelta:
        duration = _parse_iso_duration(value)
        if duration <= timedelta(0):
            raise ValueError(
                f"{value!r}: give a positive duration; readers of replaced data need time to finish"
            )
        return duration


@dataclass(frozen=True)
class Housekeeping:
    """The housekeeping settings that apply to one table replication
    (``ReplicationConfig.housekeeping_for``)."""

    orphaned_data_strategy: OrphanedDataStrategy = OrphanedDataStrategy.HOUSEKEEPING
    expired_path_duration: timedelta = DEFAULT_EXPIRED_PATH_DURATION

    @property
    def enabled(self) -> bool:
        """False when ``orphaned-data-strategy`` is ``NONE``: housekeeping keeps everything."""
        return self.orphaned_data_strategy is OrphanedDataStrategy.HOUSEKEEPING
