"""The switch of a deployed environment: ``ferry failover`` / ``ferry failback --environment``.

``switch_for(environment)`` finds the environment's stack and its FailoverSwitch function
(``infra/failover.py``, ``lambdas/failover_switch.py``) and invokes it synchronously
(RequestResponse) with the operator's credentials; the function does the work under its own
least-privilege role (``ferry.failover.stack_switch``). ``local`` is the local runtime's
deployment (``ferry local up``, in ``home``): the same template deployed into the emulator,
the function run under its role there, IAM enforced. How that deployment is reached is the
commands' to say (``ferry.commands.deployed_switch``): nothing below them knows the local
runtime.

What the function is asked is worked out here, from the environment's settings
(``infra/environments/<name>.yml``, the local runtime's ``ferry/local/environment.yml``):
which deployed config the operator's config is (the one replicating the same tables between
the same catalogs), its file name (its triggers' names, ``ferry.failover.trigger_names``), its
deployed object (the stack's ``ConfigUri…`` output: its runs are found by it) and the
replica keys of the tables (their locks). A config's triggers are turned off only when
every table of it fails over; they are turned on again whenever it fails back (a table
still promoted is left out of each run).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from ferry.config import ReplicationConfig
from ferry.core.errors import FailoverError
from ferry.failover import SwitchReport
from ferry.failover.trigger_names import config_triggers
from ferry.lifecycle import replica_state
from ferry.statemachine.failover_payloads import FailoverSwitchInput, FailoverSwitchResult
from ferry.storage.aws import AwsClients, new_session

LOCAL = "local"
#: The stack output naming the function.
FUNCTION_OUTPUT = "FailoverSwitchFunctionArn"
#: The most a run is waited for inside one invocation (a function runs 15 minutes at most).
LONGEST_WAIT = timedelta(minutes=14)


#: How the ``local`` environment is found: its settings, its stack's outputs and the clients
#: that reach it, from the local runtime's ``home``.
LocalDeployment = Callable[[Path], "tuple[Any, dict[str, str], Reach]"]


class DeployedSwitch:
    """``ReplicationSwitch`` through the deployed FailoverSwitch function."""

    def __init__(
        self,
        environment: str,
        home: Path = Path(".ferry"),
        local_deployment: LocalDeployment | None = None,
    ):
        self.environment = environment
        self.home = home
        self.local_deployment = local_deployment
        self._found: tuple[Any, dict[str, str], Reach] | None = None

    def suspend(
        self,
        config: ReplicationConfig,
        tables: Sequence[str],
        *,
        cancel_runs: bool,
        wait: timedelta,
    ) -> SwitchReport:
        if wait > LONGEST_WAIT:
            raise FailoverError(
                f"--wait {wait}: the switch waits {LONGEST_WAIT} at most; cancel the runs "
                "(--cancel-runs) or wait for them first"
            )
        request = self.request("suspend", config, tables)
        request = request.model_copy(
            update={"cancel_runs": cancel_runs, "wait_seconds": int(wait.total_seconds())}
        )
        if not every_table(config, tables):
            request = request.model_copy(
                update={"rules": [], "schedules": [], "every_table": False}
            )
        return self.invoke(request)

    def resume(self, config: ReplicationConfig, tables: Sequence[str]) -> SwitchReport:
        return self.invoke(self.request("resume", config, tables))

    # -- what the function is asked

    def request(
        self, action: str, config: ReplicationConfig, tables: Sequence[str]
    ) -> FailoverSwitchInput:
        """The function's input for ``config`` (``tables``: source ``database.table``)."""
        settings, outputs, _ = self._deployment()
        name, path = _deployed_name(settings, config, self.environment)
        uri = outputs.get(_config_output(path))
        if not uri:
            raise FailoverError(
                f"{path}: the stack Ferry-{self.environment} has no output "
                f"{_config_output(path)}; deploy the environment again"
            )
        found = config_triggers(settings.name, name, config)
        replicas = []
        for table in tables:
            try:
                replication = config.replication_of(table)
            except Exception as error:  # noqa: BLE001 - the config's own one line
                raise FailoverError(str(error)) from None
            replicas.append(
                replica_state.replica_of(config.replica_catalog, replication, settings.region)
            )
        return FailoverSwitchInput(
            action=action,
            config_name=name,
            config_uri=uri,
            rules=list(found.rules),
            schedules=list(found.schedules),
            tables=list(tables),
            replicas=replicas,
        )

    def invoke(self, request: FailoverSwitchInput) -> SwitchReport:
        """Invoke the function (RequestResponse); its report, or its error as one line."""
        payload = self.call(FUNCTION_OUTPUT, "failover switch", request.model_dump(mode="json"))
        result = FailoverSwitchResult.model_validate(payload)
        return SwitchReport(
            triggers=tuple(result.triggers),
            stopped_runs=tuple(result.stopped_runs),
            awaited_runs=tuple(result.awaited_runs),
            released_claims=result.released_claims,
            notes=tuple(result.notes),
        )

    def call(self, output: str, what: str, payload: dict[str, Any]) -> Any:
        """Invoke the stack's function named by ``output`` (RequestResponse) with
        ``payload``; its answer, or its error as one ``FailoverError`` line."""
        _, outputs, aws = self._deployment()
        arn = outputs.get(output)
        if not arn:
            raise FailoverError(
                f"the stack Ferry-{self.environment} has no {output}: deploy the "
                f"environment again (its {what} is newer than the deployment)"
            )
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError

        region = arn.split(":")[3]
        # The function may run up to 15 minutes (the switch waits for runs, the failover
        # lists replicas): the SDK's 60 s would give up; an invocation is not sent twice.
        client = aws.session.client(
            "lambda",
            region_name=region,
            endpoint_url=aws.endpoint,
            config=Config(read_timeout=960, retries={"total_max_attempts": 1}),
        )
        try:
            answer = client.invoke(
                FunctionName=arn,
                InvocationType="RequestResponse",
                Payload=json.dumps(payload).encode(),
            )
        except (BotoCoreError, ClientError) as error:  # not invoked: nothing was changed
            raise FailoverError(
                f"the {what} {arn} could not be invoked: {' '.join(str(error).split())}"
            ) from None
        found = json.loads(answer["Payload"].read() or b"{}")
        if answer.get("FunctionError"):
            message = found.get("errorMessage") if isinstance(found, dict) else None
            raise FailoverError(
                " ".join(str(message).split()) if message else f"the {what} failed: {found}"
            )
        return found

    def client(self, service: str, region: str | None = None) -> Any:
        """A client of the stack's account (the operator's session; the emulator locally)."""
        _, _, aws = self._deployment()
        return aws.session.client(service, region_name=region, endpoint_url=aws.endpoint)

    def work_uri(self) -> str:
        """The stack's work bucket (``s3://<bucket>``): where the deployed failover keeps
        the baselines, and failback finds them."""
        _, outputs, _ = self._deployment()
        bucket = outputs.get("WorkBucketName")
        if not bucket:
            raise FailoverError(f"the stack Ferry-{self.environment} has no WorkBucketName")
        return f"s3://{bucket}"

    # -- where the stack is

    def _deployment(self) -> tuple[Any, dict[str, str], Reach]:
        """The environment's settings, its stack's outputs and the clients that reach it."""
        if self._found is None:
            self._found = self._local() if self.environment == LOCAL else self._deployed()
        return self._found

    def _local(self) -> tuple[Any, dict[str, str], Reach]:
        if self.local_deployment is None:
            raise FailoverError(
                f"--environment local: the local runtime's deployment is not known here "
                f"(home {self.home})"
            )
        return self.local_deployment(self.home)

    def _deployed(self) -> tuple[Any, dict[str, str], Reach]:
        from botocore.exceptions import BotoCoreError, ClientError

        from infra.settings import SettingsError, load_environment

        try:
            settings = load_environment(self.environment)
        except SettingsError as error:
            raise FailoverError(f"--environment {self.environment}: {error}") from None
        reach = Reach(new_session(region_name=settings.region), None)
        cloudformation = AwsClients(session=reach.session).probe_client(
            "cloudformation", settings.region
        )
        try:
            [stack] = cloudformation.describe_stacks(StackName=settings.stack_name)["Stacks"]
        except ClientError as error:
            if "does not exist" in str(error):
                raise FailoverError(
                    f"--environment {self.environment}: not deployed (no stack "
                    f"{settings.stack_name} in {settings.region})"
                ) from None
            raise FailoverError(f"--environment {self.environment}: {error}") from None
        except BotoCoreError as error:
            raise FailoverError(
                f"--environment {self.environment}: CloudFormation: {error}"
            ) from None
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
        return settings, outputs, reach


@dataclass(frozen=True)
class Reach:
    """How the stack is reached: the operator's session, the emulator's endpoint (local)."""

    session: Any
    endpoint: str | None


def _config_output(path: Path) -> str:
    """The stack's output of a deployed config's object (``infra/stack.py``)."""
    return f"ConfigUri{path.stem.title().replace('-', '')}"


def _tables_of(config: ReplicationConfig) -> list[tuple[str, ...]]:
    """What identifies a config whatever its placeholders resolve to: its catalogs' names
    and each replication's source and replica tables."""
    return sorted(
        (
            config.source_catalog.name,
            config.replica_catalog.name,
            r.source_table.database_name.lower(),
            str(r.source_table.table_name or r.source_table.table_name_pattern).lower(),
            r.replica_database.lower(),
            r.replica_table_name.lower(),
        )
        for r in config.table_replications
    )


def _deployed_name(settings: Any, config: ReplicationConfig, environment: str) -> tuple[str, Path]:
    """The deployed config ``config`` is (its file name without ``.yml``, and its path)."""
    wanted = _tables_of(config)
    found = [path for path, deployed in settings.configs.items() if _tables_of(deployed) == wanted]
    if not found:
        deployed = ", ".join(str(path) for path in settings.configs) or "none"
        raise FailoverError(
            f"environment {environment} deploys no config of these tables (its configs: "
            f"{deployed}); give the config the environment deploys"
        )
    return found[0].stem, found[0]


def every_table(config: ReplicationConfig, tables: Sequence[str]) -> bool:
    """Every table of the config fails over: then, and only then, its triggers go off. A
    ``table-name-pattern``'s tables cannot be known here: its config keeps its triggers."""
    if not tables:
        return True
    if any(r.source_table.is_pattern for r in config.table_replications):
        return False
    named = {t.lower() for t in tables}
    return all(r.source_table.qualified_name.lower() in named for r in config.table_replications)
