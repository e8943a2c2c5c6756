"""The payloads of the functions a person's command invokes (``OPERATOR_FUNCTIONS``): the
failover switch, the failover and the failback, outside every definition."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ferry.statemachine.payloads import Input, Result

# -- Failover switch (``ferry failover`` / ``ferry failback``) --------------------------------


class FailoverSwitchInput(Input):
    """What ``ferry failover`` (``suspend``) or ``ferry failback`` (``resume``) asks of the
    deployed FailoverSwitch function for one config (``events/failover_switch.json``)."""

    action: str = Field(pattern="^(suspend|resume)$")
    #: The config's file name without ``.yml``: its triggers are ``ferry-<env>-<config>…``.
    config_name: str = Field(min_length=1)
    #: The deployed config object (the stack's ``ConfigUri…`` output): its runs are found by it.
    config_uri: str = Field(min_length=1)
    #: Its rules and schedules (``ferry.failover.trigger_names.config_triggers``); empty when only
    #: some of its tables fail over (their promotion leaves them out of each run).
    rules: list[str] = Field(default_factory=list)
    schedules: list[str] = Field(default_factory=list)
    #: False when only some of its tables fail over: its triggers stay on.
    every_table: bool = True
    #: The source tables that fail over (``database.table``); empty: every table of the config.
    tables: list[str] = Field(default_factory=list)
    #: Their replica keys (``<catalog>/<database>.<table>``), whose claims are released.
    replicas: list[str] = Field(default_factory=list)
    cancel_runs: bool = False
    wait_seconds: int = Field(default=0, ge=0, le=840)


class FailoverSwitchResult(Result):
    """What the switch did (``ferry.failover.SwitchReport``, as names)."""

    triggers: list[str]
    stopped_runs: list[str]
    awaited_runs: list[str]
    released_claims: int
    notes: list[str]


# -- Failover (``ferry failover --environment``) ----------------------------------------------


class FailoverInput(Input):
    """What ``ferry failover --environment`` asks of the deployed Failover function for one
    config (``events/failover.json``): ``check`` its replicas before the switch stops
    anything, then ``promote`` them (baseline, then ``ferry.promoted``)."""

    action: str = Field(pattern="^(check|promote)$")
    #: The deployed config object (the stack's ``ConfigUri…`` output).
    config_uri: str = Field(min_length=1)
    #: The source tables that fail over (``database.table``); empty: every table of the config.
    tables: list[str] = Field(default_factory=list)
    #: The failover's id (an event id), given by the command: a table promoted by it before
    #: keeps it.
    failover_id: str = Field(min_length=1)


class TableFailoverResult(Result):
    """One table's ``ferry.failover.config_failover.TableFailover``."""

    source_table: str
    replica_table: str
    failover_id: str
    promoted: str
    already_promoted: bool
    source_version: str | None
    source_read_at: str | None
    rpo_seconds: float | None
    partitions: int
    baseline_uri: str


class FailoverResult(Result):
    """What the function did (``check``: no tables)."""

    failover_id: str
    tables: list[TableFailoverResult]


# -- Failback (``ferry failback --environment``) ----------------------------------------------


class FailbackInput(Input):
    """What ``ferry failback --environment`` asks of the deployed Failback function for one
    config (``events/failback.json``): ``plan`` what would come home (``--dry-run``), or
    ``run`` the failback as far as it can go in one invocation: it starts the reverse run on
    the replication state machine and answers ``COPYING``; invoked again once that run has
    succeeded, it restores the original tables and answers ``DONE``."""

    action: str = Field(pattern="^(plan|run)$")
    #: The deployed config object (the stack's ``ConfigUri…`` output).
    config_uri: str = Field(min_length=1)
    #: The source tables that fail back (``database.table``); empty: every table of the config.
    tables: list[str] = Field(default_factory=list)
    #: The side that wins a table changed on both (``replica`` or ``source``), if named.
    prefer: str | None = Field(default=None, pattern="^(replica|source)$")


class FailbackResult(Result):
    """Where the failback stands (``PLANNED``, ``COPYING`` or ``DONE``) and each table's
    ``ferry.failover.config_failback.TableFailback``."""

    status: str = Field(pattern="^(PLANNED|COPYING|DONE)$")
    #: The reverse run on the replication state machine, while ``COPYING``.
    execution_arn: str | None = None
    reverse_config: str | None = None
    reverse_text: str | None = None
    tables: list[dict[str, Any]] = Field(default_factory=list)
