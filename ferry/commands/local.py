"""``ferry local``: the local runtime's processes, and S3 events that start replications."""

from __future__ import annotations

import json
import time
from pathlib import Path

import boto3

from ferry.aws import AwsClients
from ferry.commands import EXIT_FAILED, EXIT_OK, print_warnings
from ferry.config import load_config
from ferry.errors import FerryError
from ferry.local import deploy, emulator, processes, runtime


def run_local(action: str, home: Path, ports: dict[str, int], as_json: bool = False) -> int:
    """``up``, ``down`` or ``status`` of the local runtime in ``home``, for a person or as JSON."""
    if action == "down":
        stopped = runtime.down(home)
        print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
        return EXIT_OK
    if action == "up":
        started = time.monotonic()
        services = runtime.up(home, ports)
        if not as_json:
            print(f"local runtime up in {time.monotonic() - started:.1f} s (state in {home})")
    else:
        services = runtime.status(home)
    settings = runtime.environment(services)
    if as_json:
        print(
            json.dumps(
                {
                    "services": [s.__dict__ | {"url": s.url} for s in services],
                    "environment": settings,
                },
                indent=2,
            )
        )
        return EXIT_OK
    labels = {
        runtime.SOURCE: "source metastore",
        runtime.REPLICA: "replica metastore",
        runtime.AWS: "AWS emulator",
    }
    for service in services:
        state = f"{service.url}  (pid {service.pid})" if service.running else "not running"
        print(f"  {labels[service.name]:<18} {state}")
    pipeline = deploy.Pipeline.load(home)
    if pipeline is not None and all(s.running for s in services):
        print(f"  {'state machine':<18} {pipeline.state_machine_arn}")
        print(f"  {'work location':<18} {pipeline.work_uri}")
        if pipeline.housekeeping_state_machine_arn:
            print(f"  {'housekeeping':<18} {pipeline.housekeeping_state_machine_arn}")
        if pipeline.state_table:
            print(f"  {'state table':<18} {pipeline.state_table} (locks and snapshot ledger)")
    if settings:
        print("\nsettings for your shell:")
        for key, value in settings.items():
            print(f"  export {key}={value}")
    return EXIT_OK if action == "up" or all(s.running for s in services) else EXIT_FAILED


def run_local_trigger(config_path: Path, bucket: str, prefix: str, suffix: str, home: Path) -> int:
    """Make a marker object in ``bucket`` start a replication of ``config_path`` (S3 event)."""
    print_warnings(load_config(config_path))
    state_machine_arn, work_uri, aws = local_pipeline(home)
    config_uri = deploy.upload_config(aws.client("s3"), work_uri, config_path)
    rule = deploy.add_s3_trigger(aws, state_machine_arn, config_uri, bucket, prefix, suffix)
    print(
        f"an object s3://{bucket}/{prefix}…{suffix} now starts a replication "
        f"of {config_path} (rule {rule})"
    )
    return EXIT_OK


def local_pipeline(home: Path) -> tuple[str, str, AwsClients]:
    """The local runtime's state machine, work location and clients, or a clear error."""
    process = processes.read_process(home, "aws")
    pipeline = deploy.Pipeline.load(home)
    if process is None or not process.is_running() or pipeline is None:
        raise FerryError(
            f"the local runtime is not running in {home}; start it with `ferry local up`"
        )
    session = boto3.session.Session(
        aws_access_key_id=emulator.EMULATOR_ENVIRONMENT["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=emulator.EMULATOR_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"],
        region_name=emulator.EMULATOR_ENVIRONMENT["AWS_DEFAULT_REGION"],
    )
    aws = AwsClients(emulator.endpoint_url(process.port), session=session)
    return pipeline.state_machine_arn, pipeline.work_uri, aws
