"""The one retry policy of every request Ferry sends to AWS, stated once.

Every library that speaks to AWS takes it from here: boto3's clients (``ferry.storage.aws``: the
Lambda functions, the inline and server-side copiers, the small JSON documents, the Spark
job's S3 requests), pyarrow's S3 file system (``ferry.storage.fs``: the AWS SDK for C++'s standard
strategy) and DynamoDB's unprocessed items (``ferry.replicas.ledger.dynamodb``). Nothing above it
sends the same request again: the Spark job copies a file again only after a failure that
is not an AWS request's answer (``answered_by_aws``), and past these attempts a step fails
into the state machine's ``Retry`` (``ferry/statemachine/``), which runs the whole step again.
"""

from __future__ import annotations

#: How retries are paced: the SDKs' "standard" mode (exponential backoff with jitter, and a
#: retry quota that stops retrying when most requests of a client fail).
MODE = "standard"
#: Attempts of one request in all (the first and its retries), on every path: throttling
#: (``SlowDown``, ``ThrottlingException``), 5xx answers, an error inside a 200 (S3's
#: ``CopyObject``) and dropped connections are retried, anything else is not.
ATTEMPTS = 6
#: Seconds to wait for a connection, and for an answer (each attempt).
CONNECT_TIMEOUT_SECONDS = 10
READ_TIMEOUT_SECONDS = 60
#: DynamoDB's batch requests answer what they could not process (throttled) instead of
#: failing: that remainder is sent again this many times at most, with a growing pause.
UNPROCESSED_RETRIES = 8


def answered_by_aws(error: BaseException) -> bool:
    """True when ``error`` (or the error it was raised from) is an AWS request's failure as
    the SDK reports it after ``ATTEMPTS`` attempts: an answer of the service (botocore's
    ``ClientError``, pyarrow's "AWS Error …") or a connection the SDK could not make.

    Sending it again would multiply the policy's attempts; what the SDK does not retry (a body
    cut off part-way, a check of the bytes that failed, a local file) is not such an error.
    """
    from botocore.exceptions import ClientError
    from botocore.exceptions import ConnectionError as SdkConnectionError

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ClientError | SdkConnectionError):
            return True
        if isinstance(current, OSError) and "AWS Error " in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False
