"""The AWS emulator's dead letters: what a service sends to an SQS queue when it gives up.

Lambda sends the record of an asynchronous invocation that failed its retries to the
function's on-failure destination with the function's role; EventBridge Scheduler sends a
start it could not deliver with the schedule's role; EventBridge sends a rule's undelivered
event on the queue's own policy. On AWS the sender also needs a data key of the queue's KMS
key. Here each is authorized as on AWS (``ferry.local.authorization``) before the message is
put in moto's queue; a refused dead letter is logged and recorded among the denials, as AWS
would lose it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ferry.local.authorization import Authorizer, Caller, Check

logger = logging.getLogger(__name__)


def role_session(role_arn: str, session: str) -> Caller:
    """The session of ``role_arn`` a service acts with (``assumed-role/<name>/<session>``)."""
    account = role_arn.split(":")[4]
    name = role_arn.rsplit("/", 1)[-1]
    return Caller(role_arn, f"arn:aws:sts::{account}:assumed-role/{name}/{session}", account)


def send(
    authorizer: Authorizer | None,
    sender: Caller | str,
    queue_arn: str,
    body: Any,
    attributes: dict[str, str] | None = None,
    source_arn: str | None = None,
) -> bool:
    """Put ``body`` (JSON unless text) in the queue ``queue_arn`` as ``sender`` (a role's
    session, or a service principal acting for ``source_arn``); whether it was delivered."""
    from moto.sqs.models import sqs_backends

    _, _, _, region, account, name = queue_arn.split(":", 5)
    try:
        queue = sqs_backends[account][region].get_queue(name)
    except Exception:  # noqa: BLE001 - a queue that is gone loses the message, as on AWS
        logger.error("dead letter lost: there is no queue %s", queue_arn)
        return False
    if authorizer is not None:
        context = {}
        if source_arn:
            context = {"aws:SourceArn": source_arn, "aws:SourceAccount": source_arn.split(":")[4]}
        checks = [Check("sqs:SendMessage", queue_arn, context, account=account)]
        key = queue.kms_master_key_id
        if key:
            checks.append(
                Check("kms:GenerateDataKey", _key_arn(key, region, account), context, account)
            )
        denial = authorizer.authorize(sender, checks, region)
        if denial is not None:
            logger.error("dead letter lost: %s", denial.message)
            return False
    sqs_backends[account][region].send_message(
        queue_name=name,
        message_body=body if isinstance(body, str) else json.dumps(body),
        message_attributes={
            key: {"DataType": "String", "StringValue": value}
            for key, value in (attributes or {}).items()
            if value
        },
    )
    logger.warning("dead letter in %s", queue_arn)
    return True


def _key_arn(key: str, region: str, account: str) -> str:
    """The ARN of a queue's ``KmsMasterKeyId`` (an ARN, a key id or an alias)."""
    if key.startswith("arn:"):
        return key
    if key.startswith("alias/"):
        from moto.kms.models import kms_backends

        key = kms_backends[account][region].get_key_id_from_alias(key) or key
    return f"arn:aws:kms:{region}:{account}:key/{key}"
