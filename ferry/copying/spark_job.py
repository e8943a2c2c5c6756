"""Running the Spark copy job (``emr_jobs/copy_files.py``) to its end.

The state machine starts it on EMR Serverless with ``startJobRun.sync``. The in-process
driver runs the same job either with ``spark-submit`` in local mode (``LocalSpark``; the
local emulator's EMR Serverless uses the same function) or on EMR Serverless
(``EmrServerlessSpark``, when the config has an ``emr-serverless`` section).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ferry.core.errors import StateError

COPY_JOB = Path(__file__).resolve().parents[2] / "emr_jobs" / "copy_files.py"
TERMINAL_STATES = {"SUCCESS", "FAILED", "CANCELLED"}


def spark_submit(
    entry_point: str,
    arguments: list[str],
    log_path: Path,
    master: str | None = None,
    environment: dict[str, str] | None = None,
    *,
    cwd: Path | None = None,
    inherit: bool = True,
) -> tuple[bool, str]:
    """Run ``entry_point`` with spark-submit in local mode; (succeeded, details).

    ``inherit``: the job gets this process's environment and this interpreter as its Python
    (``ferry replicate``); otherwise exactly ``environment`` (the emulator's EMR Serverless,
    which names the job's own interpreter there).
    """
    command = [
        str(Path(sys.executable).with_name("spark-submit")),
        "--master",
        master or os.environ.get("FERRY_SPARK_MASTER", "local[2]"),
        "--conf",
        "spark.ui.enabled=false",
        entry_point,
        *arguments,
    ]
    if inherit:
        environment = {**os.environ, "PYSPARK_PYTHON": sys.executable, **(environment or {})}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        code = subprocess.call(
            command, stdout=log, stderr=subprocess.STDOUT, env=environment, cwd=cwd
        )
    if code == 0:
        return True, ""
    tail = log_path.read_text(errors="replace").strip().splitlines()[-3:]
    return False, f"spark-submit exited with {code}: {' | '.join(tail)} (log {log_path})"


def _failed(name: str, details: str) -> Exception:
    cause = json.dumps({"Name": name, "State": "FAILED", "StateDetails": details})
    return StateError("States.TaskFailed", cause)


class LocalSpark:
    """The copy job with spark-submit on this machine (its logs under ``log_dir``)."""

    def __init__(self, log_dir: Path, entry_point: Path = COPY_JOB):
        self.log_dir = log_dir
        self.entry_point = entry_point

    def run(self, name: str, entry_point_arguments: list[str]) -> dict[str, Any]:
        succeeded, details = spark_submit(
            str(self.entry_point), entry_point_arguments, self.log_dir / f"{name}.log"
        )
        if not succeeded:
            raise _failed(name, details)
        return {"JobRunId": f"local-{name}", "State": "SUCCESS"}


class EmrServerlessSpark:
    """The copy job as an EMR Serverless job run, polled to its end."""

    def __init__(
        self,
        client: Any,
        application_id: str,
        execution_role_arn: str,
        entry_point: str,
        spark_submit_parameters: str = "",
        poll_seconds: float = 10.0,
    ):
        self.client = client
        self.application_id = application_id
        self.execution_role_arn = execution_role_arn
        self.entry_point = entry_point
        self.spark_submit_parameters = spark_submit_parameters
        self.poll_seconds = poll_seconds

    def run(self, name: str, entry_point_arguments: list[str]) -> dict[str, Any]:
        submit: dict[str, Any] = {
            "entryPoint": self.entry_point,
            "entryPointArguments": entry_point_arguments,
        }
        if self.spark_submit_parameters:
            submit["sparkSubmitParameters"] = self.spark_submit_parameters
        job = self.client.start_job_run(
            applicationId=self.application_id,
            executionRoleArn=self.execution_role_arn,
            name=name,
            clientToken=name,  # a retried start of the same event starts one job run
            jobDriver={"sparkSubmit": submit},
        )
        while True:
            run = self.client.get_job_run(
                applicationId=self.application_id, jobRunId=job["jobRunId"]
            )["jobRun"]
            if run["state"] in TERMINAL_STATES:
                break
            time.sleep(self.poll_seconds)
        if run["state"] != "SUCCESS":
            raise _failed(name, run.get("stateDetails") or run["state"])
        return {"JobRunId": job["jobRunId"], "State": run["state"]}
