"""Ferry's named errors.

Their class names are part of the interface: Step Functions ``Retry``/``Catch`` match on
them, and the CLI prints ``str(error)`` as the one line a person reads.

Which one a person sees for what: a mistake in what they gave — a config
(``ConfigError``), an environment's settings (``SettingsError``), the command line
(``ferry.commands.UsageError``), a state store (``StateStoreError``), a failover that cannot
be taken (``FailoverError``) — is exit code 2, nothing run. Anything else a table or a
command meets on purpose (a catalog, the source's metadata, a copy, a commit, the local
runtime, a deployed stack) is exit code 1 and, in the state machine, the failed step's
error name. A plain ``ValueError`` is a pydantic validator's (or a check or a parser one
calls), which the config's load turns into ``ConfigError``; any other plain ``ValueError``,
``RuntimeError`` or ``KeyError`` is a programming error: ``tests/unit/test_named_errors.py``
lists each one left and why.
"""

from __future__ import annotations

import json
from typing import Any


class FerryError(Exception):
    """Base of every error Ferry raises on purpose.

    ``transient`` says whether the same step, run again unchanged, may succeed: the retry
    policy of every driver (the state machine's ``Retry`` blocks, the in-process driver's)
    is derived from it (``transient_errors``).
    """

    transient = False


class ConfigError(FerryError):
    """The replication config (or a function's settings) is invalid; nothing was run."""


class SecretNotFilledError(ConfigError):
    """The environment's secret does not hold the configs' placeholder values yet (a first
    deploy leaves it ``{}``): nothing can be read until an operator puts them."""


class SettingsError(ConfigError):
    """An environment's settings file (``infra/environments/<name>.yml``, the local runtime's
    ``ferry/local/environment.yml``) is wrong: one line that names the file and the key."""


class StateStoreError(FerryError):
    """The state store (replica locks and the snapshot ledger) cannot be used as it is: a
    file that is not Ferry's SQLite store, or cannot be read or written; a DynamoDB table that
    is missing or has another key. Found before a run starts; nothing was run."""


class CatalogUnreachableError(FerryError):
    """A metastore or catalog could not be reached (a transient error: retried)."""

    transient = True


class CatalogError(FerryError):
    """A catalog refused an operation."""


class NotSupportedByCatalogError(CatalogError):
    """The catalog has no such concept (keys in AWS Glue) or its adapter does not read or
    write it: the caller keeps it another way (Glue: as table parameters) and says so."""


class NotAMetastoreError(CatalogError):
    """Something answers at a metastore URI, but not as a Hive metastore (not retried)."""


class SourceTableNotFoundError(FerryError):
    """The source table named in the config does not exist."""


class SourceMetadataError(FerryError):
    """The source table (or one of its partitions) holds metadata Ferry cannot replicate as
    it is, e.g. an ``avro.schema.url`` that names no file. Not transient: the replica was not
    changed."""


class ReplicaGuardError(FerryError):
    """The replica table exists but Ferry does not own it, so Ferry will not touch it."""


class ReplicaLocationError(ReplicaGuardError):
    """The replica location overlaps the source's data, so Ferry will not write there."""


class ReplicaChangedError(FerryError):
    """The replica table changed between planning and commit; the commit was refused."""


class NotificationLogGapError(FerryError):
    """Events after the last one read were deleted from the log before they were read."""

    def __init__(self, catalog: str, last_id: int, first_id: int | None, current_id: int):
        self.last_id, self.first_id, self.current_id = last_id, first_id, current_id
        held = "none" if first_id is None else f"the oldest after it is {first_id}"
        super().__init__(
            f"Hive metastore '{catalog}' no longer holds the events after {last_id} "
            f"(its newest is {current_id}, {held}); compare the catalogs in full"
        )


class ConcurrentChangeError(CatalogError):
    """A conditional write found the table changed since it was read (the catalog's own
    concurrency control: Hive's expected parameter, Glue's ``VersionId``)."""


class ReplicaLockedError(FerryError):
    """Another replication of the same replica table holds its lock; this one did nothing.

    Not transient: retrying within seconds would only meet the same holder. The message
    names the holder's event and when its lease expires (a crashed run's lease is taken
    over after that).
    """


class ReplicationModeError(FerryError):
    """The replication mode does not fit the table (e.g. FULL for a view)."""


class IcebergMetadataError(FerryError):
    """An Iceberg table's metadata cannot be replicated as it is: a metadata file, manifest
    list or manifest that cannot be read (missing, truncated, not Iceberg), a file it names
    that is missing, a file outside the table's location, a format version or feature Ferry
    does not rewrite yet. Not transient: the same files give the same error.

    ``location``: the file at fault, when one is (its table's side is told by it)."""

    def __init__(self, message: str, location: str | None = None):
        super().__init__(message)
        self.location = location


class FileSystemUnavailableError(FerryError):
    """A location names a file system this process has no client for (``hdfs://`` on a host
    without a JVM and libhdfs, a scheme pyarrow does not know). Not transient."""


class CopyError(FerryError):
    """Copying the data into the new snapshot failed; the replica was not changed."""


class TargetNotWritableError(CopyError):
    """The target location cannot be written."""


class VerificationError(CopyError):
    """A copied file does not match its source at the target."""


class CopyIncompleteError(CopyError):
    """Commit found a batch of the manifest without its copy record; nothing was committed."""


class UnknownCopierError(FerryError):
    """The plan names a copier this state machine does not know (the "Unknown copier" state)."""


class StepFunctionsError(FerryError):
    """A table failed with one of Step Functions' own errors (``States.*``), which the
    execution cannot end with (its ``Fail`` state takes no name with that prefix): the cause
    keeps the original name."""


class NotificationError(FerryError):
    """A message could not be published to consumers (SNS); retried, then reported.

    After a commit this never undoes the replication: the replica keeps its new snapshot
    and the table is reported as committed but not notified.
    """

    transient = True


class ReplicationInterruptedError(FerryError):
    """The run was interrupted (Ctrl-C, SIGTERM) part-way through a step."""


class NotResumableError(FerryError):
    """``ferry resume EVENT``: the event has no attempt a run may continue (unknown,
    committed, deleted, past its grace period, still running, or its replica changed)."""


class PromotedReplicaError(FerryError):
    """The replica was promoted by ``ferry failover``: writers own it now, and Ferry will not
    overwrite it until ``ferry failback`` brings it home."""


class FailoverError(FerryError):
    """``ferry failover`` or ``ferry failback`` cannot take a step as things are (a table never
    replicated, no failover to fail back from, a primary still unreachable, changes on both
    sides with no winner named); nothing was changed."""


class GrantError(FerryError):
    """A source's grants cannot be given at the replica as the config maps them: a mapped
    principal the replica's side does not have, a grant the replica's role may not give.
    Found before any grant is given or revoked: nothing was changed. Not transient."""


class AssumeRoleError(FerryError):
    """Ferry may not assume the role that reaches a side in another account (its trust
    policy does not name Ferry's role, the external id differs, the role does not exist),
    or Ferry's own role may not call ``sts:AssumeRole`` on it; nothing was written there."""


class DeploymentError(FerryError):
    """A deployed stack is not as Ferry deploys it (its state machine names no Spark entry
    point, archive or job role): deploy it again."""


class LocalRuntimeError(FerryError):
    """The local runtime cannot start or deploy on this machine as it is: a port in use, no
    Java, javac or Node.js, a process that did not become ready, a template or a definition
    it cannot deploy (``ferry.local``)."""


def _named_errors() -> list[type[FerryError]]:
    found, pending = [], [FerryError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def transient_errors() -> list[str]:
    """The names of Ferry's errors worth retrying, sorted: the ``Retry`` policy's own."""
    return sorted({cls.__name__ for cls in _named_errors() if cls.transient})


def error_names() -> set[str]:
    """Every error name Ferry raises on purpose (what ``Retry``/``Catch`` may match)."""
    return {cls.__name__ for cls in _named_errors()}


def describe_error(error: dict[str, Any]) -> tuple[str, str]:
    """Step Functions' ``{"Error", "Cause"}`` as a name and one line.

    A Lambda's Cause is its error payload as JSON; its ``errorMessage`` is the line.
    """
    name = error.get("Error") or "States.TaskFailed"
    cause = error.get("Cause") or ""
    try:
        payload = json.loads(cause)
    except (TypeError, ValueError):
        return name, cause
    if isinstance(payload, dict) and "errorMessage" in payload:
        return payload.get("errorType") or name, payload["errorMessage"]
    return name, cause


class StateError(Exception):
    """An error as Step Functions sees it: a name (``Error``) and a ``Cause``.

    What the in-process driver (``ferry replicate``) catches and routes like the state
    machine's ``Catch``; the local Spark runner raises it too, so it lives with the errors
    rather than with the driver above the copiers.
    """

    def __init__(self, error: str, cause: str):
        super().__init__(f"{error}: {cause}")
        self.error = error
        self.cause = cause
