"""The switch of a deployed environment as the commands open it (``--environment NAME``).

``switch_for(environment)`` is ``ferry.failover.deployed.DeployedSwitch`` for the
environment's stack; for ``local`` the commands also say how the local runtime's deployment
(``ferry local up``, in ``home``) is reached: its process, its deployed template's outputs and
the emulator's endpoint. Only the commands know the local runtime; the failover they drive
is given what it needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ferry.core.errors import FailoverError
from ferry.failover.deployed import DeployedSwitch, Reach
from ferry.storage.aws import new_session


def switch_for(environment: str, *, home: Path = Path(".ferry")) -> DeployedSwitch:
    """The switch of ``environment``'s deployed stack (``local``: the local runtime's in
    ``home``)."""
    return DeployedSwitch(environment, home, local_deployment)


def local_deployment(home: Path) -> tuple[Any, dict[str, str], Reach]:
    """The local runtime's settings, its deployed stack's outputs and the clients that reach
    the emulator; a ``FailoverError`` line when it is not running in ``home``."""
    from ferry.local import deploy, emulator, processes
    from infra.settings import load_settings

    process = processes.read_process(home, "aws")
    pipeline = deploy.Pipeline.load(home)
    if process is None or not process.is_running() or pipeline is None:
        raise FailoverError(
            f"--environment local: the local runtime is not running in {home}; "
            "start it with `ferry local up`"
        )
    session = new_session(
        aws_access_key_id=emulator.EMULATOR_ENVIRONMENT["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=emulator.EMULATOR_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"],
        region_name=deploy.REGION,
    )
    reach = Reach(session, emulator.endpoint_url(process.port))
    return load_settings(deploy.SETTINGS, deploy.ENVIRONMENT), pipeline.outputs, reach
