"""The emulator's EMR Serverless job runs (``ferry.local.emulator_emr_serverless``): a job
runs from what the job run names, as on EMR Serverless.

Its entry point and the packed environment of ``spark.archives`` are downloaded from S3, the
environment unpacked as ``./environment``, and the driver and the executors run
``spark.emr-serverless.*Env`` (``PYSPARK_PYTHON=./environment/bin/python``): the archive's own
interpreter and packages, and pyspark and py4j as the release provides them, nothing of this
machine's virtual environment. The archive's ``bin/python`` names the release's interpreter
(``/usr/bin/python3.12``); here it is pointed at this machine's Python of the same version.
The job runs with the credentials it is given (its execution role's).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tarfile
import threading
import uuid
from pathlib import Path
from typing import Any

from ferry.copying.spark_job import spark_submit
from ferry.core import faults
from ferry.core.errors import LocalRuntimeError

ENVIRONMENT_PREFIX = ("spark.emr-serverless.driverEnv.", "spark.emr-serverless.executorEnv.")


def submit_settings(parameters: str) -> dict[str, str]:
    """``--conf name=value`` pairs of ``sparkSubmitParameters``."""
    words = shlex.split(parameters or "")
    settings = {}
    for index, word in enumerate(words):
        if word == "--conf" and index + 1 < len(words):
            name, _, value = words[index + 1].partition("=")
            settings[name] = value
    return settings


class JobRunner:
    """Runs a job run's entry point as EMR Serverless would, with its role's credentials."""

    def __init__(self, state_dir: Path, endpoint: str, fault_file: faults.FaultFile | None):
        self.state_dir = state_dir
        self.endpoint = endpoint
        self.fault_file = fault_file
        self._lock = threading.Lock()

    def run(
        self, job_id: str, job_driver: dict[str, Any], region: str, credentials: dict[str, str]
    ) -> tuple[bool, str]:
        submit = job_driver.get("sparkSubmit") or {}
        folder = self.state_dir / "spark" / job_id
        folder.mkdir(parents=True, exist_ok=True)
        log_path = self.state_dir / "spark" / f"{job_id}.log"
        try:
            entry_point = self._fetch(str(submit.get("entryPoint", "")), folder)
            settings = submit_settings(str(submit.get("sparkSubmitParameters") or ""))
            environment = self._environment(settings, folder, region, credentials)
        except Exception as error:  # noqa: BLE001 - EMR reports a job that cannot start
            return False, f"the job could not start: {error}"
        arguments = [str(argument) for argument in submit.get("entryPointArguments") or []]
        if self.fault_file is not None and os.path.exists(self.fault_file.path):
            # The job's own fail points, for failure drills of the Spark copier.
            with open(self.fault_file.path) as handle:
                environment["FERRY_FAULTS"] = handle.read()
        return spark_submit(
            entry_point, arguments, log_path, environment=environment, cwd=folder, inherit=False
        )

    def _environment(
        self, settings: dict[str, str], folder: Path, region: str, credentials: dict[str, str]
    ) -> dict[str, str]:
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8",
            "JAVA_HOME": os.environ.get("JAVA_HOME", ""),
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            "AWS_ENDPOINT_URL": self.endpoint,
            # The release's Spark, pyspark and py4j, and nothing else of this machine's.
            "SPARK_HOME": str(Path(_pyspark_file()).parent),
            "PYTHONPATH": str(self._release_packages()),
            **credentials,
        }
        environment = {k: v for k, v in environment.items() if v}
        for name, value in settings.items():
            for prefix in ENVIRONMENT_PREFIX:
                if name.startswith(prefix):
                    environment[name.removeprefix(prefix)] = value
        archives = settings.get("spark.archives")
        if archives:
            for archive in archives.split(","):
                uri, _, alias = archive.partition("#")
                self._unpack(uri, folder / (alias or Path(uri).name))
        return environment

    def _fetch(self, uri: str, folder: Path) -> str:
        if uri.startswith("file://"):
            return uri.removeprefix("file://")
        if not uri.startswith("s3://"):
            return uri
        import boto3

        bucket, _, key = uri.removeprefix("s3://").partition("/")
        target = folder / Path(key).name
        boto3.client("s3", endpoint_url=self.endpoint).download_file(bucket, key, str(target))
        return str(target)

    def _unpack(self, uri: str, destination: Path) -> None:
        """The archive unpacked at ``destination`` (cached by the archive's S3 object)."""
        import boto3

        bucket, _, key = uri.removeprefix("s3://").partition("/")
        s3 = boto3.client("s3", endpoint_url=self.endpoint)
        tag = s3.head_object(Bucket=bucket, Key=key)["ETag"].strip('"')
        cached = self.state_dir / "spark" / "environments" / tag
        with self._lock:
            if not cached.exists():
                building = cached.with_name(f".{tag}.{uuid.uuid4().hex[:8]}")
                building.mkdir(parents=True)
                archive = building.with_suffix(".tgz")
                s3.download_file(bucket, key, str(archive))
                with tarfile.open(archive) as packed:
                    packed.extractall(building, filter="tar")
                archive.unlink()
                _interpreter_here(building)
                building.rename(cached)
        if destination.is_symlink() or destination.exists():
            destination.unlink()
        destination.symlink_to(cached)

    def _release_packages(self) -> Path:
        """A folder of pyspark and py4j alone, as EMR's image provides them to the job."""
        folder = self.state_dir / "spark" / "release-packages"
        if not folder.exists():
            import py4j
            import pyspark

            building = folder.with_name(f".release-packages.{uuid.uuid4().hex[:8]}")
            building.mkdir(parents=True)
            for module in (pyspark, py4j):
                package = Path(module.__file__).parent
                (building / package.name).symlink_to(package)
            try:
                building.rename(folder)
            except OSError:
                shutil.rmtree(building, ignore_errors=True)
        return folder


def _pyspark_file() -> str:
    import pyspark

    return pyspark.__file__


def _interpreter_here(environment: Path) -> None:
    """Point the packed environment's interpreter at this machine's Python of its version.

    venv-pack keeps ``bin/python3.X`` as a link to the release's ``/usr/bin/python3.X``;
    Python finds the environment's packages from the link's own place, wherever it points.
    """
    for link in (environment / "bin").glob("python3.*"):
        if link.is_symlink() and not link.exists():
            version = link.name.removeprefix("python")
            here = Path(getattr(sys, "_base_executable", sys.executable))
            if here.name != f"python{version}":
                candidates = [here.with_name(f"python{version}")]
            else:
                candidates = [here]
            found = next((c for c in candidates if c.exists()), None)
            if found is None:
                raise LocalRuntimeError(f"no Python {version} on this machine for {link}")
            link.unlink()
            link.symlink_to(found)
