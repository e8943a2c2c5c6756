"""``ferry status``: how fresh each replica of a config is, one line per table, worst first.

It reads the catalogs' tables (and the partitions a replica lacks) and the state store,
never a data file, and writes nothing anywhere. Where the state is:

- no ``--environment``: what ``ferry replicate`` keeps (``<home>/state.sqlite3``, or the
  DynamoDB table ``--state-table``);
- ``--environment local``: the local runtime's deployed pipeline (its state table);
- ``--environment NAME``: the deployed stack ``Ferry-NAME`` of ``infra/environments/NAME.yml``
  (its ``StateTableName`` output), for a config that environment deploys.

Exit code: 0 every table within its RPO and none failing; 1 a table failing (or unknown);
3 a table over its RPO (whatever else); 2 a mistake (bad config, state never written, an
environment that does not deploy the config).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ferry.commands import EXIT_FAILED, EXIT_OK, UsageError, load_selected
from ferry.commands.status_governance import compare, governance_line
from ferry.config import ReplicationConfig
from ferry.core.clock import Clock, utc_now
from ferry.freshness import FreshnessState, TableFreshness, measure
from ferry.storage.aws import AwsClients, new_session

#: Some table is over its RPO: scripts alert on it.
EXIT_OVER_RPO = 3


def run_status(
    config_path: Path,
    tables: Sequence[str] = (),
    *,
    as_json: bool = False,
    home: Path = Path(".ferry"),
    environment: str | None = None,
    state_table: str | None = None,
    clock: Clock = utc_now,
    governance: bool = False,
) -> int:
    """Measure every table of the config (``tables``: some) and print it; the exit code.
    ``governance``: also compare each replica's statistics, keys and grants with its
    source's (``ferry.commands.status_governance``); the exit code does not change."""
    config, aws, store, where = _state_of(config_path, tables, home, environment, state_table)
    from ferry.catalog.factory import open_catalog

    with (
        open_catalog(config.source_catalog, aws) as source,
        open_catalog(config.replica_catalog, aws) as replica,
    ):
        measured = measure(
            config, source, replica, store, clock(), tables=list(tables), region=aws.region
        )
    if measured and all(
        t.state in (FreshnessState.NEVER_REPLICATED, FreshnessState.SOURCE_MISSING)
        and t.last_failure is None
        for t in measured
    ):
        raise UsageError(
            f"{config_path}: no table of it was ever replicated with {where}; replicate it "
            "first (ferry replicate, or ferry execute on a deployed pipeline)"
        )
    compared: dict[str, dict[str, Any]] = {}
    if governance:
        compared = compare(config_path, aws, measured)
    if as_json:
        rows = [t.to_dict() for t in measured]
        for row in rows if governance else ():
            row["governance"] = compared.get(row["sourceTable"])
        print(json.dumps(rows, indent=2))
    else:
        for table in measured:
            print(line(table))
            if table.source_table in compared:
                print(f"  {governance_line(compared[table.source_table])}")
        print(summary(measured))
    if any(t.over_rpo for t in measured):
        return EXIT_OVER_RPO
    if any(t.state in (FreshnessState.FAILING, FreshnessState.UNKNOWN) for t in measured):
        return EXIT_FAILED
    return EXIT_OK


def line(table: TableFreshness) -> str:
    """``sales.orders → dr.orders  behind by 47m (RPO 15m: OVER)  replica holds source
    version …  last success 2026-11-26T10:12Z``"""
    parts = [f"{table.source_table} → {table.replica_table}", _state(table)]
    if table.state is FreshnessState.FAILING and table.behind:
        parts.append(f"behind by {short(table.behind)}")
    if table.rpo is not None:
        parts.append(f"(RPO {short(table.rpo)}{': OVER' if table.over_rpo else ''})")
    if table.replica_version:
        parts.append(f"replica holds source version {table.replica_version}")
    parts.append(
        f"last success {stamp(table.last_success)}" if table.last_success else "never succeeded"
    )
    return "  ".join(parts)


def _state(table: TableFreshness) -> str:
    match table.state:
        case FreshnessState.BEHIND:
            return f"behind by {short(table.behind or timedelta(0))}"
        case FreshnessState.FAILING:
            return f"failing since {stamp(table.failing_since)}: {table.last_error}"
        case FreshnessState.SOURCE_MISSING | FreshnessState.UNKNOWN:
            return f"{table.state.value}: {table.detail}"
        case _:
            return table.state.value


def summary(tables: Sequence[TableFreshness]) -> str:
    """``4 tables: 1 over RPO, 1 failing, 1 behind, 1 in sync``"""
    counts: dict[str, int] = {}
    for table in tables:
        counts[table.state.value] = counts.get(table.state.value, 0) + 1
    over = sum(1 for t in tables if t.over_rpo)
    shown = [f"{over} over RPO"] if over else []
    shown += [f"{n} {state}" for state, n in counts.items()]
    return f"{len(tables)} table{'s' if len(tables) != 1 else ''}: " + ", ".join(shown)


def short(duration: timedelta) -> str:
    """``2d3h``, ``47m``, ``1h05m``, ``12s``: how long, for people."""
    seconds = int(duration.total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes:02d}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m"
    return f"{seconds}s"


def stamp(moment: datetime | None) -> str:
    """``2026-11-26T10:12Z``"""
    return moment.strftime("%Y-%m-%dT%H:%MZ") if moment else "never"


# -- where the state is ---------------------------------------------------------------------


def _state_of(
    config_path: Path,
    tables: Sequence[str],
    home: Path,
    environment: str | None,
    state_table: str | None,
) -> tuple[ReplicationConfig, AwsClients, Any, str]:
    """The config, the AWS clients, the state store to read and how to name it."""
    from ferry.replicas.ledger import DynamoDbStateStore, SqliteStateStore

    if environment is not None and state_table is not None:
        raise UsageError("--state-table goes without --environment: the stack names its table")
    if environment is None:
        config = load_selected(config_path, tables)
        aws = AwsClients()
        if state_table:
            if not aws.region:
                raise UsageError(
                    f"--state-table {state_table}: the AWS SDK has no default region to find "
                    "the table in"
                )
            store = DynamoDbStateStore(aws.probe_client("dynamodb", aws.region), state_table)
            store.check(f"--state-table {state_table}")
            return config, aws, store, f"--state-table {state_table}"
        path = home.resolve() / "state.sqlite3"
        if not path.is_file():
            raise UsageError(
                f"{config_path}: never replicated with --home {home}: it has no state store "
                f"({path}); replicate it first (ferry replicate)"
            )
        sqlite = SqliteStateStore(path)
        sqlite.check(f"state store {path}")
        return config, aws, sqlite, f"--home {home}"
    if environment == "local":
        from ferry.commands.local import local_pipeline
        from ferry.local import deploy
        from ferry.storage import fs

        config = load_selected(config_path, tables)
        _, _, aws = local_pipeline(home.resolve())
        fs.configure(fs.S3Settings.of_clients(aws), aws)
        pipeline = deploy.Pipeline.load(home.resolve())
        if pipeline is None or not pipeline.state_table:
            raise UsageError(f"the local runtime in {home} has no deployed state table")
        store = DynamoDbStateStore(aws.client("dynamodb"), pipeline.state_table)
        return config, aws, store, f"the local runtime in {home}"
    return _deployed(config_path, tables, environment)


def _deployed(
    config_path: Path, tables: Sequence[str], environment: str
) -> tuple[ReplicationConfig, AwsClients, Any, str]:
    """A deployed environment's config, clients and state table (its stack's output)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from ferry.commands import print_warnings
    from ferry.core.errors import ConfigError
    from ferry.replicas.ledger import DynamoDbStateStore
    from infra.settings import ROOT, SettingsError, load_environment

    try:
        settings = load_environment(environment)
        configs = settings.configs
    except SettingsError as error:
        raise UsageError(f"--environment {environment}: {error}") from None
    wanted = config_path.resolve()
    found = [
        config
        for path, config in configs.items()
        if (path if path.is_absolute() else ROOT / path).resolve() == wanted
    ]
    if not found:
        deployed = ", ".join(str(path) for path in configs) or "none"
        raise UsageError(
            f"{config_path}: not deployed in environment {environment} (its configs: {deployed})"
        )
    config = found[0]
    print_warnings(config)
    try:
        config.select(list(tables))
    except ConfigError as error:
        raise UsageError(f"--table {error}") from None
    aws = AwsClients(session=new_session(region_name=settings.region))
    cloudformation = aws.probe_client("cloudformation", settings.region)
    try:
        [stack] = cloudformation.describe_stacks(StackName=settings.stack_name)["Stacks"]
    except ClientError as error:
        if "does not exist" in str(error):
            raise UsageError(
                f"--environment {environment}: not deployed (no stack {settings.stack_name} "
                f"in {settings.region})"
            ) from None
        raise
    except BotoCoreError as error:
        raise UsageError(f"--environment {environment}: CloudFormation: {error}") from None
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    table = outputs.get("StateTableName")
    if not table:
        raise UsageError(
            f"--environment {environment}: stack {settings.stack_name} has no StateTableName output"
        )
    store = DynamoDbStateStore(aws.client("dynamodb", settings.region), table)
    return config, aws, store, f"environment {environment} (state table {table})"
