"""The AWS emulator's server: moto's, with what the pipeline needs beyond moto installed.

``python -m ferry.local.emulator_server --port N --state-dir DIR`` (``ferry.local.emulator``
starts it). moto 5.2 executes state machines; four pieces of the pipeline have no
emulation, and a module each adds them into this process:

- ``emulator_lambda``: this project's Lambda handlers run in execution environments of
  their own (``emulator_lambda_environments``), with their role's credentials (moto needs
  Docker);
- ``emulator_emr_serverless``: ``startJobRun.sync`` runs the job from its archive with
  ``spark-submit``, with its role's credentials;
- ``emulator_eventbridge``: rules start executions of state machine targets, with their
  role, invoke Lambda targets their function's policy allows, send to SQS targets and put
  on other regions' buses; what they cannot deliver goes to the target's dead-letter queue;
- ``emulator_scheduler``: rate schedules fire their Lambda and Step Functions targets, with
  their role, and send what they cannot deliver to the target's dead-letter queue;
- ``emulator_cloudwatch``: alarms are evaluated from the stored metrics (and the queues'
  depths) and publish to their topics when their state changes.

``emulator_dead_letters`` sends the services' dead letters, authorized as on AWS;
``emulator_states`` keeps Step Functions' payload limits and error rules,
``emulator_redrive`` adds its ``RedriveExecution`` with AWS's rules,
``emulator_definitions`` refuses the definitions CreateStateMachine refuses, ``emulator_s3``
answers a bucket's EventBridge notifications as S3 does, ``emulator_glue`` refuses an
``UpdateTable`` of a stale ``VersionId`` as Glue does and sends Glue's catalog events to
EventBridge, ``emulator_glue_statistics`` serves Glue's column statistics calls,
``emulator_lakeformation`` keeps grants' options and LF-tags as Lake Formation does,
``emulator_iam`` authorizes every request of the pipeline's roles as AWS would, and
``emulator_requests`` counts the requests the server serves (what the copy benchmark reads).
``emulator_snapshot`` keeps the emulated AWS's state across a stop and a start: restored
before the server serves, saved while it runs and when it stops.

Every patch is small and named; moto is pinned exactly because they touch its internals.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ferry.core import faults
from ferry.local import (
    emulator_cloudwatch,
    emulator_definitions,
    emulator_dynamodb,
    emulator_emr_job_runner,
    emulator_emr_serverless,
    emulator_eventbridge,
    emulator_glue,
    emulator_glue_statistics,
    emulator_iam,
    emulator_lakeformation,
    emulator_lambda,
    emulator_lambda_environments,
    emulator_redrive,
    emulator_redrive_map_runs,
    emulator_requests,
    emulator_resume,
    emulator_s3,
    emulator_scheduler,
    emulator_snapshot,
    emulator_states,
)
from ferry.local.authorization import Authorizer

#: Fail points armed for failure drills (``ferry.core.faults``): a JSON list in this file of the
#: emulator's state folder arms them in the in-process Lambdas and the Spark job.
FAULTS_FILE = "faults.json"


def install(
    state_dir: Path, endpoint: str
) -> tuple[
    emulator_lambda_environments.ExecutionEnvironments,
    emulator_scheduler.Scheduler,
    emulator_cloudwatch.AlarmEvaluator,
]:
    """Patch moto (in this process), switch on state machine execution, start the schedules'
    and the alarms' clocks; the caller stops the environments and the clocks."""
    from moto.core.config import default_user_config

    default_user_config["stepfunctions"]["execute_state_machine"] = True
    emulator_states.install()
    emulator_redrive.install()
    emulator_definitions.install()
    emulator_resume.install()
    emulator_s3.install()
    emulator_glue.install()
    emulator_glue_statistics.install()
    emulator_lakeformation.install()
    emulator_dynamodb.install()
    fault_file = faults.FaultFile(state_dir / FAULTS_FILE)
    authorizer = Authorizer()
    emulator_iam.install(authorizer)
    emulator_iam.install_state_machine_credentials(authorizer)
    emulator_redrive_map_runs.authorize_with(authorizer)
    environments = emulator_lambda_environments.ExecutionEnvironments(
        authorizer, endpoint, state_dir / "lambda", fault_file.path
    )
    emulator_lambda.install(environments)
    emulator_emr_serverless.install(
        authorizer, emulator_emr_job_runner.JobRunner(state_dir, endpoint, fault_file)
    )
    emulator_eventbridge.install(authorizer, fault_file)
    emulator_requests.install()
    return (
        environments,
        emulator_scheduler.install(authorizer, fault_file),
        emulator_cloudwatch.install(authorizer),
    )


def main(argv: list[str] | None = None) -> None:
    """``python -m ferry.local.emulator_server --port N --state-dir DIR``: the extended server."""
    import argparse

    parser = argparse.ArgumentParser(prog="ferry-aws-emulator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args.state_dir.mkdir(parents=True, exist_ok=True)
    # The saved state goes back into moto's backends before anything reads them (the
    # schedules' clock starts in ``install``).
    restored = emulator_snapshot.restore(args.state_dir / emulator_snapshot.FILE)
    restored.write(args.state_dir / emulator_snapshot.REPORT)
    logging.getLogger(__name__).info("%s", restored.message)
    environments, scheduler, alarms = install(args.state_dir, f"http://127.0.0.1:{args.port}")
    saver = emulator_snapshot.Saver(args.state_dir / emulator_snapshot.FILE)
    emulator_snapshot.install(saver)
    saver.start()
    # Executions that ran when the state was saved go on once the server answers (their
    # tasks call it).
    emulator_resume.resume_when_serving(lambda: _serving(args.port))
    from moto.server import main as moto_server

    try:
        moto_server(["-H", args.host, "-p", str(args.port)])  # SIGTERM ends it (SystemExit)
    finally:
        alarms.stop()
        scheduler.stop()  # nothing new starts, then the state is saved, then the functions stop
        saver.stop()
        environments.stop()


def _serving(port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


if __name__ == "__main__":
    main()
