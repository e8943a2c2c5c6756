"""``ferry doctor --environment NAME``: check what a first deploy needs, one line per check."""

from __future__ import annotations

import json
from pathlib import Path

from ferry.commands import EXIT_FAILED, EXIT_OK, UsageError
from ferry.commands.doctor_checks import FAILED, Doctor, Finding
from ferry.commands.doctor_findings import Deployment
from ferry.storage import fs
from ferry.storage.aws import AwsClients


def run_doctor(
    environment: str, *, home: Path = Path(".ferry"), as_json: bool = False, spark_job: bool = False
) -> int:
    """Run every check of ``environment`` (``local``: the local runtime in ``home``)."""
    from infra.settings import SettingsError, load_environment, load_settings

    try:
        if environment == "local":
            from ferry.local import deploy

            settings = load_settings(deploy.SETTINGS, deploy.ENVIRONMENT)
        else:
            settings = load_environment(environment)
        _ = settings.configs  # a config that does not load is a mistake of the settings
    except SettingsError as error:
        raise UsageError(str(error)) from None
    local = None
    if environment == "local":
        from ferry.commands.local import local_pipeline
        from ferry.local import deploy

        _, _, aws = local_pipeline(home.resolve())
        fs.configure(fs.S3Settings.of_clients(aws), aws)  # every client, the runtime --home selects
        pipeline = deploy.Pipeline.load(home.resolve())
        assert pipeline is not None  # local_pipeline checked it
        local = Deployment(
            pipeline.outputs,
            f"the local runtime's deployment of Ferry-local ({home}/pipeline.json; the "
            "emulator has no CloudFormation: the deployed template's resources stand for it)",
        )
    else:
        aws = AwsClients()
    findings = Doctor(settings, aws, local=local, spark_job=spark_job).run()
    report(findings, as_json)
    return EXIT_FAILED if any(f.status == FAILED for f in findings) else EXIT_OK


def report(findings: list[Finding], as_json: bool) -> None:
    if as_json:
        print(json.dumps([f.to_dict() for f in findings], indent=2))
        return
    for finding in findings:
        print(finding.line())
    failed = sum(1 for f in findings if f.status == FAILED)
    print(f"{len(findings) - failed} of {len(findings)} checks passed or skipped, {failed} failed")
