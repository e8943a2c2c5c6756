"""``ferry local up | down | status``: the source and replica metastores and the AWS emulator."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ferry.local import deploy, deployment, emulator, metastore, processes

SOURCE = "source"
REPLICA = "replica"
AWS = "aws"
DEFAULT_PORTS = {SOURCE: 9083, REPLICA: 9084, AWS: 5000}


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    running: bool
    port: int | None
    pid: int | None
    log: str | None

    @property
    def url(self) -> str | None:
        if self.port is None:
            return None
        if self.name == AWS:
            return emulator.endpoint_url(self.port)
        return f"thrift://localhost:{self.port}"


def up(state_dir: Path, ports: dict[str, int]) -> list[ServiceStatus]:
    """Start whichever of the three services is not running yet; deploy the pipeline.

    The emulator restores the state it saved at its last stop (``ferry.local.
    emulator_snapshot``); a pipeline it already holds, deployed from the same template, is
    not deployed again: only its secret gets the running metastores' URIs.
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    for name in (SOURCE, REPLICA, AWS):
        current = processes.read_process(state_dir, name)
        if current is not None and current.is_running():
            continue
        if name == AWS:
            emulator.start_emulator(state_dir, ports[name], name=name)
        else:
            metastore.start_metastore(state_dir, name, ports[name])
    aws = processes.read_process(state_dir, AWS)
    services = status(state_dir)
    endpoint = emulator.endpoint_url(aws.port)  # type: ignore[union-attr]
    secrets = secret_values(environment(services))
    if not deployment.refresh(endpoint, state_dir, secrets):
        deploy.deploy(endpoint, state_dir, secrets)
        deployment.record(endpoint, state_dir)
    return services


def secret_values(settings: dict[str, str]) -> dict[str, str]:
    """The values the deployed secret holds: the running metastores' URIs."""
    return {
        "SOURCE_METASTORE_URIS": settings.get("FERRY_SOURCE_METASTORE_URIS", ""),
        "REPLICA_METASTORE_URIS": settings.get("FERRY_REPLICA_METASTORE_URIS", ""),
    }


def down(state_dir: Path, purge: bool = False) -> list[str]:
    """Stop what ``up`` started (and only that); the names of the ones that were running.

    The emulator saves its state as it stops, the metastores keep theirs in their folders:
    the next ``up`` with the same home finds both. ``purge``: remove that state too (the
    emulated AWS's, the metastores' databases and warehouses, the deployed pipeline's
    record), so that the next ``up`` starts empty.
    """
    stopped = [name for name in (AWS, REPLICA, SOURCE) if processes.stop_process(state_dir, name)]
    if purge:
        for name in (AWS, REPLICA, SOURCE):
            shutil.rmtree(state_dir / name, ignore_errors=True)
        (state_dir / deploy.RECORD).unlink(missing_ok=True)
    return stopped


def status(state_dir: Path) -> list[ServiceStatus]:
    result = []
    for name in (SOURCE, REPLICA, AWS):
        process = processes.read_process(state_dir, name)
        if process is None:
            result.append(ServiceStatus(name, False, None, None, None))
        else:
            result.append(
                ServiceStatus(name, process.is_running(), process.port, process.pid, process.log)
            )
    return result


def environment(services: list[ServiceStatus]) -> dict[str, str]:
    """The settings a user (or a test) needs to reach the running services."""
    by_name = {s.name: s for s in services if s.running}
    settings: dict[str, str] = {}
    if SOURCE in by_name:
        settings["FERRY_SOURCE_METASTORE_URIS"] = by_name[SOURCE].url or ""
    if REPLICA in by_name:
        settings["FERRY_REPLICA_METASTORE_URIS"] = by_name[REPLICA].url or ""
    if AWS in by_name:
        settings["AWS_ENDPOINT_URL"] = by_name[AWS].url or ""
        settings.update(emulator.EMULATOR_ENVIRONMENT)
    return settings
