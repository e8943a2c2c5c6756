"""``ferry redrive QUEUE`` and ``ferry redrive EXECUTION_ARN``.

- **A dead-letter queue.** What failed outside the state machines (a catalog event the
  intake could not take, a poll, an event a rule could not deliver, a start a schedule could
  not) waits in a dead-letter queue and keeps its alarm in ALARM (``ferry.commands.dead_letters``).
  Once the cause is fixed, this sends each message again to where it was going and deletes it:
  one line per message, exit 0 when every one was sent again, 1 when one could not be (it
  stays in the queue).
- **An execution** of the replication state machine that timed out, was stopped or failed
  where no ``Catch`` takes the error: Step Functions' ``RedriveExecution`` goes on with the
  same execution from its unsuccessful state (``ferry.statemachine.execution_redrive``). One line
  says what runs again; ``--wait`` follows it to its end (exit 0 when it succeeds, 1 when not).
  An execution that cannot be redriven gets one line with the reason, exit 2, and nothing
  starts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from botocore.exceptions import ClientError

from ferry.commands import EXIT_FAILED, EXIT_OK, UsageError
from ferry.commands.dead_letters import redrive
from ferry.storage.aws import AwsClients

#: An execution's ARN (a Map Run's child's too: ``execution:<machine>/<label>:<name>``).
_EXECUTION_ARN = re.compile(r"arn:aws[\w-]*:states:([\w-]+):\d{12}:execution:.+")


def is_execution_arn(target: str) -> bool:
    return _EXECUTION_ARN.fullmatch(target) is not None


def run_redrive(
    queue: str,
    region: str | None = None,
    *,
    environment: str | None = None,
    home: Path = Path(".ferry"),
    wait: bool = False,
    as_json: bool = False,
) -> int:
    if is_execution_arn(queue):
        return run_redrive_execution(
            queue, environment=environment, home=home, wait=wait, as_json=as_json
        )
    if wait or as_json:
        raise UsageError("--wait and --json go with an execution's ARN, not a queue")
    aws = AwsClients()
    try:
        done = redrive(aws, queue, region)
    except ClientError as error:
        if error.response["Error"]["Code"] in (
            "AWS.SimpleQueueService.NonExistentQueue",
            "QueueDoesNotExist",
        ):
            raise UsageError(f"there is no queue {queue} (in {region or aws.region})") from None
        raise
    for entry in done:
        if entry.error:
            print(f"not redriven: message {entry.message_id}: {entry.error}")
        else:
            print(f"redriven: {entry.what} -> {entry.target}")
    failed = sum(1 for entry in done if entry.error)
    print(f"{len(done) - failed} redriven, {failed} left in {queue}")
    return EXIT_FAILED if failed else EXIT_OK


def run_redrive_execution(
    execution_arn: str,
    *,
    environment: str | None = None,
    home: Path = Path(".ferry"),
    wait: bool = False,
    as_json: bool = False,
) -> int:
    """Redrive one execution of the replication state machine (its region is its ARN's)."""
    from ferry.statemachine.execution_redrive import NotRedrivableError, redrive_execution
    from ferry.statemachine.executions import follow

    if environment == "local":
        from ferry.commands.local import local_pipeline

        machine_arn, _, aws = local_pipeline(home.resolve())
        machine = machine_arn.rsplit(":", 1)[1]
    else:
        aws = AwsClients()
        machine = f"ferry-{environment}-replication" if environment else None
    if machine and not re.search(f":execution:{re.escape(machine)}[:/]", execution_arn):
        where = "the local runtime" if environment == "local" else f"--environment {environment}"
        raise UsageError(
            f"{execution_arn} is not an execution of {machine}, the replication of {where}"
        )
    sfn = aws.client("stepfunctions", _EXECUTION_ARN.fullmatch(execution_arn).group(1))
    try:
        done = redrive_execution(sfn, execution_arn)
    except NotRedrivableError as refused:
        raise UsageError(str(refused)) from None
    except ClientError as error:
        code = error.response["Error"]["Code"]
        if code in ("ExecutionDoesNotExist", "InvalidArn"):
            raise UsageError(f"there is no execution {execution_arn}") from None
        if code == "ExecutionNotRedrivable":
            message = error.response["Error"].get("Message", "")
            raise UsageError(f"{execution_arn} cannot be redriven: {message}") from None
        raise
    if not wait:
        print(json.dumps(done.to_dict()) if as_json else done.summary())
        return EXIT_OK
    if not as_json:
        print(done.summary())
    outcome = follow(sfn, execution_arn)
    result = {"status": outcome.status, "seconds": round(outcome.seconds, 1)}
    if outcome.error:
        result.update(error=outcome.error, cause=outcome.cause)
    if as_json:
        print(json.dumps({**done.to_dict(), "outcome": result}))
    elif outcome.status == "SUCCEEDED":
        print(f"SUCCEEDED in {outcome.seconds:.1f} s")
    else:
        cause = (outcome.cause or "").splitlines()[0] if outcome.cause else ""
        print(f"{outcome.status} in {outcome.seconds:.1f} s: {outcome.error}: {cause}")
    return EXIT_OK if outcome.status == "SUCCEEDED" else EXIT_FAILED
