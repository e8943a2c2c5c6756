"""``ferry redrive QUEUE``: send the dead letters of a deployment's queue again.

What failed outside the state machines (a catalog event the intake could not take, a poll,
an event a rule could not deliver, a start a schedule could not) waits in a dead-letter
queue and keeps its alarm in ALARM (``ferry.redrive``). Once the cause is fixed, this sends
each message again to where it was going and deletes it: one line per message, exit 0 when
every one was sent again, 1 when one could not be (it stays in the queue).
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from ferry.aws import AwsClients
from ferry.commands import EXIT_FAILED, EXIT_OK, UsageError
from ferry.redrive import redrive


def run_redrive(queue: str, region: str | None = None) -> int:
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
